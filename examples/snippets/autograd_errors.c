/*
 * examples/snippets/autograd_errors.c - the mistakes docs/autograd.md
 * describes, made on purpose, and the messages tapegrad answers them with:
 * a second backward through a freed tape, a backward from a tensor that is
 * not a loss, a saved tensor modified in place, and an in-place write into
 * a tensor the tape made. docs/autograd.md shows the messages.
 *
 * Each failing call returns -1 (or NULL) and changes nothing; the quiet
 * error handler keeps the messages off stderr, and they are printed from
 * tg_last_error() instead.
 */
#include "tapegrad.h"

#include <stdio.h>

static tg_tensor *leaf(double value)
{
    tg_tensor *t = tg_scalar(value, TG_FLOAT64);
    tg_set_requires_grad(t, true);
    return t;
}

/* Prints the message of the call that just failed; counts a call that did
 * not fail. */
static int expect_failure(const char *what, int rc)
{
    printf("== %s ==\n%s\n\n", what, rc != 0 ? tg_last_error() : "(no error)");
    return rc != 0 ? 0 : 1;
}

int main(void)
{
    int unexpected = 0;
    tg_set_error_handler(tg_error_handler_quiet);

    /* Section 6: backward frees what it walked. */
    tg_tensor *a = leaf(2.0), *b = leaf(3.0);
    tg_tensor *y = tg_mul(a, b);           // saves a and b
    tg_backward(y);
    unexpected += expect_failure("a second backward", tg_backward(y));
    tg_release(y);

    /* Section 6: the implicit gradient 1 exists only for a loss. */
    tg_tensor *v = tg_from_array((double[]){1, 2, 3}, TG_SHAPE(3),
                                 TG_FLOAT64);
    tg_set_requires_grad(v, true);
    tg_tensor *v2 = tg_mul_scalar(v, 2.0);  // (3,)
    unexpected += expect_failure("backward from a (3,) tensor",
                                 tg_backward(v2));
    tg_release(v2);

    /* Section 7: a saved tensor changed between forward and backward. */
    tg_tensor *k = tg_scalar(4.0, TG_FLOAT64);  // needs no grad: writable
    tg_tensor *ak = tg_mul(a, k);               // saves a and k (version 0)
    tg_fill_(k, 5.0);                           // k's storage: version 1
    unexpected += expect_failure("a saved tensor modified in place",
                                 tg_backward(ak));
    tg_release(ak);
    tg_release(k);

    /* Section 7: in-place writes into what the tape made are refused. */
    tg_tensor *vv = tg_mul(v, v);
    unexpected += expect_failure("an in-place write into a recorded result",
                                 tg_set(vv, TG_SHAPE(0), 1.0));
    tg_release(vv);

    tg_release(v);
    tg_release(b);
    tg_release(a);
    tg_set_error_handler(NULL);
    if (tg_live_tensors() != 0 || tg_tape_size() != 0)
        unexpected++;
    return unexpected == 0 ? 0 : 1;
}
