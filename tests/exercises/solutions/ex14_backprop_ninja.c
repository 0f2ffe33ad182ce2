/*
 * A reference solution to exercise 14: the lecture's exercise 1, written
 * out one intermediate at a time in examples/makemore/part4_mlp.c
 * (p4_backward_manual), with one change from the lecture: dbnmeani keeps
 * its dim, (1, n_hidden) as bnmeani, where the lecture's (n_hidden,)
 * passes PyTorch's cmp only because cmp broadcasts.
 */
#include "exercises.h"

int ex_backprop_ninja(const p4_params *p, const p4_forward *f,
                      const tg_tensor *xb, const tg_tensor *yb, p4_grads *d)
{
    return p4_backward_manual(p, f, xb, yb, d);
}
