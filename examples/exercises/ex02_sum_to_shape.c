/*
 * Exercise 02: a gradient back to a broadcast shape.
 * Statement: docs/exercises/02-sum-to-shape.md
 * Grade:     meson test -C build --suite exercises ex02 --print-errorlogs
 */
#include "exercises.h"

/* grad is the gradient of a result that an input of shape `shape` (ndim
 * dims) was broadcast into. Returns the input's gradient, of shape
 * `shape` and grad's dtype (float32 or float64): a new reference.
 *
 * Broadcasting reads one input element many times; each of those reads
 * sends a gradient back to it. Which dims of grad did broadcasting make
 * up, and what happens to a gradient that arrives several times? Mind
 * the ends of the range: shape () and a shape equal to grad's. */
tg_tensor *ex_sum_to_shape(const tg_tensor *grad, const int64_t *shape,
                           int ndim)
{
    EX_NOT_IMPLEMENTED(); // delete this line, then write the function
    (void)grad;
    (void)shape;
    (void)ndim;
    return NULL;
}
