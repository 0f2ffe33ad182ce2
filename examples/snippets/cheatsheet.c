/*
 * examples/snippets/cheatsheet.c - the program docs/pytorch-cheatsheet.md
 * shows next to the PyTorch code it translates: a linear layer with SiLU,
 * a cross-entropy loss, backward, and one plain gradient-descent step done
 * by hand under no_grad. With the same seed it prints what PyTorch prints.
 *
 * It shows the translation line by line, not how to train: an optimiser
 * (tg_sgd_new) does the last step for you, see docs/training.md.
 */
#include "tapegrad.h"

int main(void)
{
    tg_manual_seed(0);                                  // torch.manual_seed(0)
    tg_tensor *x = tg_randn(TG_SHAPE(4, 3), TG_FLOAT32); // torch.randn(4, 3)
    tg_tensor *w = tg_randn(TG_SHAPE(3, 2), TG_FLOAT32);
    tg_set_requires_grad(w, true);                      // requires_grad=True
    tg_tensor *b = tg_zeros(TG_SHAPE(2), TG_FLOAT32);
    tg_set_requires_grad(b, true);
    tg_tensor *y = tg_from_array((int64_t[]){0, 1, 1, 0}, TG_SHAPE(4),
                                 TG_INT64);             // torch.tensor([...])

    tg_tensor *xw = tg_matmul(x, w);                    // x @ w
    tg_tensor *z = tg_add(xw, b);                       // ... + b
    tg_tensor *h = tg_silu(z);                          // F.silu(...)
    tg_tensor *loss = tg_cross_entropy(h, y, TG_REDUCTION_MEAN);
    tg_backward(loss);                                  // loss.backward()
    tg_print(loss);                                     // print(loss)
    tg_print(w->grad);                                  // print(w.grad)

    tg_no_grad_begin();                                 // with torch.no_grad():
    tg_tensor *step = tg_mul_scalar(w->grad, 0.1);      //     0.1 * w.grad
    tg_tensor *updated = tg_sub(w, step);
    tg_copy_(w, updated);                               //     w -= ...
    tg_zero_grad(w);                                    //     w.grad.zero_()
    tg_no_grad_end();
    tg_print(w);                                        // print(w)

    tg_release(updated); tg_release(step);   // no garbage collector: every
    tg_release(loss); tg_release(h);         // new reference is released,
    tg_release(z); tg_release(xw);           // once, by its owner
    tg_release(y); tg_release(b); tg_release(w); tg_release(x);
    return tg_live_tensors() == 0 ? 0 : 1;
}
