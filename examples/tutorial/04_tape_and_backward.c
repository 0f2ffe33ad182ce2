/*
 * examples/tutorial/04_tape_and_backward.c - the program of tutorial
 * chapter 4 (docs/tutorial/04-tape-and-backward.md): requires_grad, what
 * each op records on the tape, backward as a reverse walk of the tape,
 * gradients that accumulate until zeroed, and an update under no_grad.
 *
 * One small function runs throughout, small enough to differentiate by
 * hand:  L = sum((w * x + b)^2)  with w = [0.5, -1, 2] and b = 0.5 the
 * parameters, x = [1, 2, 3] the data. Sections run in the chapter's order;
 * ">>>" lines are the PyTorch code that prints the same thing. The engine
 * itself is explained in docs/autograd.md.
 */
#include "tapegrad.h"

#include <stdio.h>

static void show(const char *code, const tg_tensor *t)
{
    printf(">>> %s\n", code);
    if (t)
        tg_print(t);
    else
        printf("None\n");
}

/* One line per recorded op: its grad_fn and the tape's length after it. */
static void recorded(const char *code, const tg_tensor *t)
{
    const char *name = tg_grad_fn_name(t);
    printf("%-20s grad_fn=%-14s tape entries: %lld\n", code,
           name ? name : "None", (long long)tg_tape_size());
}

/* L = sum((w * x + b)^2), the same function as section 2 in one call.
 * NEW reference; w, x and b are borrowed. The intermediates are released
 * here: their nodes stay on the tape as long as L needs them. */
static tg_tensor *loss_of(const tg_tensor *w, const tg_tensor *x,
                          const tg_tensor *b)
{
    tg_tensor *wx = tg_mul(w, x);
    tg_tensor *y = tg_add(wx, b);
    tg_tensor *y2 = tg_pow_scalar(y, 2);
    tg_tensor *L = tg_sum(y2, NULL, 0, false);
    tg_release(y2);
    tg_release(y);
    tg_release(wx);
    return L;
}

int main(void)
{
    tg_set_error_handler(tg_error_handler_quiet); // we print the messages

    printf("== 1. requires_grad: which leaves want a gradient ==\n");
    tg_tensor *w = tg_from_array((double[]){0.5, -1.0, 2.0}, TG_SHAPE(3),
                                 TG_FLOAT64);
    tg_tensor *b = tg_scalar(0.5, TG_FLOAT64);
    tg_tensor *x = tg_from_array((double[]){1.0, 2.0, 3.0}, TG_SHAPE(3),
                                 TG_FLOAT64);
    tg_set_requires_grad(w, true); // w.requires_grad_()
    tg_set_requires_grad(b, true); // x is data: it needs no gradient
    show("w", w);
    show("x", x);
    tg_tensor *labels = tg_arange(0, 3, 1, TG_INT64);
    if (tg_set_requires_grad(labels, true) != 0)
        printf(">>> torch.arange(3).requires_grad_()\n%s\n",
               tg_last_error());

    printf("\n== 2. What each op records ==\n");
    printf("%-20s grad_fn=%-14s tape entries: %lld\n", "(start)", "",
           (long long)tg_tape_size());
    tg_tensor *v1 = tg_mul(w, x);              // (3,)
    recorded("v1 = w * x", v1);
    tg_tensor *v2 = tg_add(v1, b);             // (3,) + () broadcasts
    recorded("v2 = v1 + b", v2);
    tg_tensor *v3 = tg_pow_scalar(v2, 2);      // (3,)
    recorded("v3 = v2 ** 2", v3);
    tg_tensor *L = tg_sum(v3, NULL, 0, false); // ()
    recorded("L = v3.sum()", L);
    tg_tensor *x2 = tg_mul_scalar(x, 2);       // no input needs a gradient
    recorded("x2 = x * 2", x2);
    show("L", L);

    printf("\n== 3. Backward: the tape walked in reverse ==\n");
    tg_retain_grad(v1); // keep the non-leaves' gradients to look at them
    tg_retain_grad(v2);
    tg_retain_grad(v3);
    tg_backward(L); // L.backward()
    show("v3.grad  # dL/dv3 = 1", v3->grad);
    show("v2.grad  # dL/dv2 = 2 * v2 * v3.grad", v2->grad);
    show("v1.grad  # dL/dv1 = v2.grad", v1->grad);
    show("b.grad  # dL/db = v2.grad summed back to b's shape ()", b->grad);
    show("w.grad  # dL/dw = v1.grad * x", w->grad);
    show("x.grad  # x does not require grad", x->grad);

    printf("\n== 4. Gradients accumulate ==\n");
    tg_tensor *L2 = loss_of(w, x, b);
    tg_backward(L2); // no zero_grad before: adds to w.grad and b.grad
    show("loss_of(w, x, b).backward(); w.grad  # twice the gradient",
         w->grad);
    tg_release(L2); // its graph goes with it: the tape is 4 entries again
    tg_zero_grad(w); // w.grad.zero_(), as optimizer.zero_grad() does
    tg_zero_grad(b);
    tg_tensor *L3 = loss_of(w, x, b);
    tg_backward(L3);
    show("w.grad.zero_(); b.grad.zero_(); loss_of(w, x, b).backward(); "
         "w.grad", w->grad);
    tg_release(L3);

    printf("\n== 5. no_grad: a step of gradient descent ==\n");
    double lr = 0.01;
    int64_t entries = tg_tape_size();
    tg_no_grad_begin(); // with torch.no_grad():
    tg_tensor *w_step = tg_mul_scalar(w->grad, lr);
    tg_tensor *w_new = tg_sub(w, w_step);         // nothing recorded
    tg_copy_(w, w_new);                           //     w -= lr * w.grad
    tg_tensor *b_step = tg_mul_scalar(b->grad, lr);
    tg_tensor *b_new = tg_sub(b, b_step);
    tg_copy_(b, b_new);                           //     b -= lr * b.grad
    tg_no_grad_end();
    printf("tape entries before the step %lld, after %lld; "
           "w_new.requires_grad: %s\n", (long long)entries,
           (long long)tg_tape_size(), w_new->requires_grad ? "True" : "False");
    show("w", w);
    tg_tensor *L4 = loss_of(w, x, b);
    show("loss_of(w, x, b)  # was 45.5", L4);
    if (tg_copy_(w, w_new) != 0) // the same write with gradients enabled
        printf(">>> w.copy_(w_new)  # outside no_grad\n%s\n",
               tg_last_error());

    tg_release(L4);
    tg_release(b_new);
    tg_release(b_step);
    tg_release(w_new);
    tg_release(w_step);
    tg_release(x2);
    tg_release(L);
    tg_release(v3);
    tg_release(v2);
    tg_release(v1);
    tg_release(labels);
    tg_release(x);
    tg_release(b);
    tg_release(w);
    tg_set_error_handler(NULL);
    printf("\nlive tensors %lld, tape entries %lld\n",
           (long long)tg_live_tensors(), (long long)tg_tape_size());
    return tg_live_tensors() == 0 && tg_tape_size() == 0 ? 0 : 1;
}
