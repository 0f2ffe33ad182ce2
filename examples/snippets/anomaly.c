/*
 * examples/snippets/anomaly.c - anomaly mode, as docs/autograd.md section
 * 13 shows it: two classic ways to get a NaN into a model, each stopped
 * where it starts.
 *
 * 1. A binary cross-entropy written by hand: sigmoid saturates to exactly
 *    1 in float32 for a large logit, so log(1 - p) is log(0) = -inf in the
 *    forward pass.
 * 2. A Euclidean distance between two equal points: sqrt(0) = 0 is fine,
 *    but its derivative 1 / (2 sqrt(0)) is infinite in the backward pass
 *    (and becomes NaN one op later, as inf * 0).
 *
 * The quiet error handler keeps the messages off stderr; they are printed
 * from tg_last_error() instead.
 */
#include "tapegrad.h"

#include <stdio.h>

int main(void)
{
    tg_set_error_handler(tg_error_handler_quiet);
    tg_set_detect_anomaly(true); // for this thread

    /* 1. Forward: the loss is NULL, and the message says why. */
    tg_tensor *w = tg_from_array((float[]){2.0f}, TG_SHAPE(1), TG_FLOAT32);
    tg_set_requires_grad(w, true);
    tg_tensor *x = tg_from_array((float[]){1.0f, -3.0f, 10.0f}, TG_SHAPE(3),
                                 TG_FLOAT32);
    tg_tensor *y = tg_from_array((float[]){1.0f, 0.0f, 0.0f}, TG_SHAPE(3),
                                 TG_FLOAT32);
    tg_tensor *ny = tg_rsub_scalar(y, 1.0); // 1 - y
    tg_tensor *z = tg_mul(w, x);            // logits 2, -6, 20
    tg_tensor *p = tg_sigmoid(z);           // sigmoid(20) is 1.0f exactly
    tg_tensor *q = tg_rsub_scalar(p, 1.0);  // 1 - p: 0 for the third
    tg_tensor *lp = tg_log(p);
    tg_tensor *lq = tg_log(q);              // log(0) = -inf: stopped here
    tg_tensor *a = tg_mul(y, lp);
    tg_tensor *b = tg_mul(ny, lq);          // NULL in, NULL out: no message
    tg_tensor *ab = tg_add(a, b);
    tg_tensor *loss = tg_mean(ab, NULL, 0, false); // minus the loss
    if (!loss)
        printf("%s\n\n", tg_last_error());

    /* 2. Backward: tg_backward returns -1 at the node that made the inf. */
    tg_tensor *u = tg_from_array((double[]){1.0, 2.0}, TG_SHAPE(2),
                                 TG_FLOAT64);
    tg_set_requires_grad(u, true);
    tg_tensor *v = tg_from_array((double[]){1.0, 2.0}, TG_SHAPE(2),
                                 TG_FLOAT64);
    tg_tensor *d = tg_sub(u, v);
    tg_tensor *d2 = tg_mul(d, d);
    tg_tensor *s = tg_sum(d2, NULL, 0, false);
    tg_tensor *dist = tg_sqrt(s);          // 0: finite
    if (tg_backward(dist) != 0)
        printf("%s\n", tg_last_error());

    tg_release(dist); tg_release(s); tg_release(d2); tg_release(d);
    tg_release(v); tg_release(u);
    tg_release(loss); tg_release(ab); tg_release(b); tg_release(a);
    tg_release(lq); tg_release(lp); tg_release(q); tg_release(p);
    tg_release(z); tg_release(ny); tg_release(y); tg_release(x);
    tg_release(w);
    return tg_live_tensors() == 0 && tg_tape_size() == 0 ? 0 : 1;
}
