/*
 * Reference solution of exercise 01 (docs/exercises/01-broadcast-shape.md).
 *
 * The shapes are aligned at their last dim. Walking k = 1, 2, ... dims
 * from the end, a shape that has fewer than k dims counts as size 1 there
 * (broadcasting prepends 1s). Two sizes are compatible when equal or when
 * one is 1, and the result takes the one that is not 1: max() would be
 * wrong for 0 against 1, whose result is 0.
 */
#include "exercises.h"

int ex_broadcast_shape(const int64_t *a, int na, const int64_t *b, int nb,
                       int64_t out[TG_MAX_DIMS])
{
    int n = na > nb ? na : nb;
    for (int k = 1; k <= n; k++) {
        int64_t sa = k <= na ? a[na - k] : 1;
        int64_t sb = k <= nb ? b[nb - k] : 1;
        if (sa != sb && sa != 1 && sb != 1)
            return -1;
        out[n - k] = sa == 1 ? sb : sa;
    }
    return n;
}
