/*
 * Exercise 05: the LayerNorm forward.
 * Statement: docs/exercises/05-layer-norm-forward.md
 * Grade:     meson test -C build --suite exercises ex05 --print-errorlogs
 */
#include "exercises.h"

/* LayerNorm over the last dim of x (rows, C), as
 * torch.nn.functional.layer_norm(x, (C,), weight, bias, eps). weight and
 * bias are (C,) or NULL (then 1 and 0). Returns y (rows, C); stores the
 * per-row mean and rstd, (rows,) each, in *mean and *rstd. Three new
 * references, float64.
 *
 * Each row is normalised on its own: reduce over dim -1 and keep that dim
 * (size 1) so the statistics broadcast back against the row. Which
 * variance does LayerNorm divide by: sum / C or sum / (C - 1)? */
tg_tensor *ex_layer_norm_forward(const tg_tensor *x, const tg_tensor *weight,
                                 const tg_tensor *bias, double eps,
                                 tg_tensor **mean, tg_tensor **rstd)
{
    EX_NOT_IMPLEMENTED(); // delete this line, then write the function
    (void)x;
    (void)weight;
    (void)bias;
    (void)eps;
    (void)mean;
    (void)rstd;
    return NULL;
}
