/*
 * examples/custom_op.c - a differentiable op of your own: SiLU (also called
 * swish), y = x * sigmoid(x), written with tg_function the way
 * torch.autograd.Function is used in PyTorch.
 *
 * It shows the three steps of adding an op: a forward, a backward with its
 * math worked out by hand, and tg_gradcheck to prove the backward right.
 * A second version with a deliberately wrong backward shows what a failed
 * gradcheck looks like.
 *
 * (tapegrad could compute SiLU from tg_sigmoid and tg_mul and let the tape
 * differentiate it; a custom function records one node instead of two and
 * saves what its backward needs, nothing more.)
 */
#include "tapegrad.h"

#include <stdio.h>

/* forward: s = sigmoid(x), y = x * s. Saved: x and s (index 0 and 1). */
static tg_tensor *silu_forward(tg_ctx *ctx, const tg_tensor *const *inputs,
                               int ninputs, const void *args)
{
    (void)ninputs, (void)args;
    const tg_tensor *x = inputs[0];
    tg_tensor *s = tg_sigmoid(x);
    tg_tensor *y = tg_mul(x, s);
    tg_ctx_save(ctx, x);
    tg_ctx_save(ctx, s);
    tg_release(s);
    return y;
}

/* backward of y = x * s(x), with s' = s * (1 - s) (the product rule):
 *   dy/dx = s + x * s * (1 - s) = s * (1 + x * (1 - s))
 * so dL/dx = g * s * (1 + x * (1 - s)), g = dL/dy. */
static int silu_backward(tg_ctx *ctx, const tg_tensor *g,
                         tg_tensor **grad_inputs)
{
    const tg_tensor *x = tg_ctx_saved(ctx, 0);
    const tg_tensor *s = tg_ctx_saved(ctx, 1);
    tg_tensor *one_minus_s = tg_rsub_scalar(s, 1.0);      // 1 - s
    tg_tensor *x_one_minus_s = tg_mul(x, one_minus_s);    // x (1 - s)
    tg_tensor *bracket = tg_add_scalar(x_one_minus_s, 1); // 1 + x (1 - s)
    tg_tensor *dydx = tg_mul(s, bracket);
    grad_inputs[0] = tg_mul(g, dydx);
    tg_release(dydx);
    tg_release(bracket);
    tg_release(x_one_minus_s);
    tg_release(one_minus_s);
    return grad_inputs[0] ? 0 : -1;
}

static const tg_function silu_fn = {"SiLUBackward", silu_forward,
                                    silu_backward, 0};

static tg_tensor *silu(const tg_tensor *x)
{
    return tg_function_apply(&silu_fn, &x, 1, NULL);
}

/* The classic mistake: x appears twice in x * s(x), and this backward
 * differentiates only the first x, as if s were a constant: dL/dx = g * s.
 * The product rule's second term, x * s * (1 - s), is missing. */
static int silu_wrong_backward(tg_ctx *ctx, const tg_tensor *g,
                               tg_tensor **grad_inputs)
{
    grad_inputs[0] = tg_mul(g, tg_ctx_saved(ctx, 1)); // missing x s (1 - s)
    return grad_inputs[0] ? 0 : -1;
}

static const tg_function silu_wrong_fn = {"SiLUWrongBackward", silu_forward,
                                          silu_wrong_backward, 0};

/* What tg_gradcheck differentiates: inputs -> output (a new reference). */
static tg_tensor *check_silu(const tg_tensor *const *inputs, int n, void *user)
{
    (void)n, (void)user;
    return silu(inputs[0]);
}

static tg_tensor *check_silu_wrong(const tg_tensor *const *inputs, int n, void *user)
{
    (void)n, (void)user;
    const tg_tensor *x = inputs[0];
    return tg_function_apply(&silu_wrong_fn, &x, 1, NULL);
}

int main(void)
{
    int failures = 0;

    printf("== SiLU as a custom function ==\n");
    tg_tensor *x = tg_from_array((double[]){-2.0, -0.5, 0.5, 2.0},
                                 TG_SHAPE(4), TG_FLOAT64);
    tg_set_requires_grad(x, true);
    tg_tensor *w = tg_from_array((double[]){1.0, 2.0, 3.0, 4.0},
                                 TG_SHAPE(4), TG_FLOAT64);
    tg_tensor *y = silu(x);   // one node: SiLUBackward
    tg_tensor *yw = tg_mul(y, w);
    tg_tensor *loss = tg_sum(yw, NULL, 0, false);
    printf(">>> x\n");
    tg_print(x);
    printf(">>> y = silu(x)\n");
    tg_print(y);
    printf(">>> loss = (y * w).sum()  # w = [1, 2, 3, 4]\n");
    tg_print(loss);

    if (tg_backward(loss) < 0)
        failures++;
    printf(">>> loss.backward(); x.grad  # w * s * (1 + x * (1 - s))\n");
    tg_print(x->grad);

    printf("\n== tg_gradcheck: backward against finite differences ==\n");
    tg_tensor *probe = tg_linspace(-3.0, 3.0, 7, TG_FLOAT64);
    tg_set_requires_grad(probe, true);
    tg_gradcheck_result r;
    int ok = tg_gradcheck(check_silu, NULL, &probe, 1, NULL, &r);
    printf("SiLUBackward: %s\n", ok == 1 ? "gradcheck passed" : r.message);
    failures += ok != 1;

    printf("\n== A wrong backward, caught ==\n");
    tg_gradcheck_options opts = tg_gradcheck_defaults();
    opts.report = stdout; // the report goes here instead of stderr
    ok = tg_gradcheck(check_silu_wrong, NULL, &probe, 1, &opts, &r);
    if (ok == 0)
        printf("SiLUWrongBackward: gradcheck failed, as it should: input "
               "element %lld, %.6g instead of %.6g\n",
               (long long)r.input_index, r.analytical, r.numerical);
    failures += ok != 0;

    tg_release(probe);
    tg_release(loss);
    tg_release(yw);
    tg_release(y);
    tg_release(w);
    tg_release(x);
    /* every tensor released, and with them every node of the tape */
    if (tg_live_tensors() != 0 || tg_tape_size() != 0)
        failures++;
    return failures == 0 ? 0 : 1;
}
