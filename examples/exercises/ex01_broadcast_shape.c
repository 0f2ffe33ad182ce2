/*
 * Exercise 01: the broadcasting rule.
 * Statement: docs/exercises/01-broadcast-shape.md
 * Grade:     meson test -C build --suite exercises ex01 --print-errorlogs
 */
#include "exercises.h"

/* The shape a (na dims) and b (nb dims) broadcast to, as
 * np.broadcast_shapes(a, b): written to out, with its number of dims as
 * the result; -1 when the shapes cannot be broadcast. No tensors here,
 * only sizes.
 *
 * Line the shapes up at their LAST dim, not their first, and walk from
 * there towards the front. What size does a shape have at a position
 * where it has run out of dims? And when one size is 0 and the other 1,
 * which one does the result take? */
int ex_broadcast_shape(const int64_t *a, int na, const int64_t *b, int nb,
                       int64_t out[TG_MAX_DIMS])
{
    EX_NOT_IMPLEMENTED(); // delete this line, then write the function
    (void)a;
    (void)na;
    (void)b;
    (void)nb;
    (void)out;
    return -1;
}
