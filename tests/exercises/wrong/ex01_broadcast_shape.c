/*
 * A wrong answer to exercise 01, which its grader must reject: the result
 * takes the larger of the two sizes. That is right whenever neither size
 * is 0, but a size-1 dim stretches to any size, 0 included: (0,) with (1,)
 * is (0,), not (1,).
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
        out[n - k] = sa > sb ? sa : sb; // wrong when one size is 0
    }
    return n;
}
