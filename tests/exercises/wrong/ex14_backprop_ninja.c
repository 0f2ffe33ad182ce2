/*
 * A wrong answer to exercise 14, which its grader must reject: the
 * lecture's own dbnmeani = (-dbndiff).sum(0), which drops the dim, so it
 * has shape (n_hidden,) where bnmeani is (1, n_hidden). PyTorch's cmp
 * broadcasts the two and calls it exact; tg_cmp refuses the shape. (Its
 * values are right: everything else is the reference solution.)
 */
#include "exercises.h"

int ex_backprop_ninja(const p4_params *p, const p4_forward *f,
                      const tg_tensor *xb, const tg_tensor *yb, p4_grads *d)
{
    if (p4_backward_manual(p, f, xb, yb, d) != 0)
        return -1;
    tg_tensor *neg = tg_neg(d->bndiff);
    tg_release(d->bnmeani);
    d->bnmeani = tg_sum(neg, TG_DIMS(0), false); // no keepdim
    tg_release(neg);
    return d->bnmeani ? 0 : -1;
}
