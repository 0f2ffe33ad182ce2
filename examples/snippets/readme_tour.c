/*
 * examples/snippets/readme_tour.c - the program README.md shows in "A short
 * tour": PyTorch's random numbers, a view, broadcasting and softmax, printed
 * as PyTorch prints them. The README quotes it from #include to the end,
 * with its output; the suite builds and runs it, so neither can drift.
 */
#include "tapegrad.h"

int main(void)
{
    tg_manual_seed(0);
    tg_tensor *x = tg_rand(TG_SHAPE(2, 3), TG_FLOAT32); // torch.rand(2, 3)
    tg_tensor *t = tg_transpose(x, 0, 1);          // a view: no copy
    tg_tensor *b = tg_arange(0, 2, 1, TG_FLOAT32); // (2,)
    tg_tensor *y = tg_add(t, b);      // (3, 2) + (2,) broadcasts to (3, 2)
    tg_tensor *s = tg_softmax(y, -1);
    tg_print(x);                      // the same numbers as PyTorch's
    tg_print(s);                      // printed as PyTorch prints it
    tg_release(s); tg_release(y); tg_release(b); tg_release(t); tg_release(x);
    return tg_live_tensors() == 0 ? 0 : 1; // every tensor was released
}
