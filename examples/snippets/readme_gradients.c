/*
 * examples/snippets/readme_gradients.c - the program README.md shows in
 * "Gradients": a leaf that requires grad, three recorded ops, a backward,
 * and the gradient it leaves in w->grad. The README quotes it from
 * #include to the end, with its output.
 *
 * L = sum(tanh(w * x)), so dL/dw = x * (1 - tanh(w * x)^2).
 */
#include "tapegrad.h"

int main(void)
{
    tg_tensor *w = tg_from_array((double[]){0.5, -1.0, 2.0}, TG_SHAPE(3),
                                 TG_FLOAT64);
    tg_set_requires_grad(w, true);  // a leaf: backward fills w->grad
    tg_tensor *x = tg_from_array((double[]){1.0, 2.0, 3.0}, TG_SHAPE(3),
                                 TG_FLOAT64);
    tg_tensor *h = tg_mul(w, x);    // each op appends a node to the tape
    tg_tensor *t = tg_tanh(h);
    tg_tensor *L = tg_sum(t, NULL, 0, false); // a scalar loss
    tg_print(L);
    tg_backward(L);                 // walks the tape in reverse
    tg_print(w->grad);              // x * (1 - tanh(w * x)^2)
    tg_release(L); tg_release(t); tg_release(h); tg_release(x); tg_release(w);
    return tg_live_tensors() == 0 ? 0 : 1;
}
