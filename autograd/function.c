/*
 * autograd/function.c - differentiable functions defined by the user, as
 * torch.autograd.Function: a forward and a backward callback, recorded on
 * the tape like any built-in op.
 *
 * The node (the tg_ctx) is made before forward runs, so forward can save
 * tensors into it; it goes on the tape only when an input needs a
 * gradient, and is thrown away otherwise.
 */
#include "tape.h"

#include <stdlib.h>

static bool function_ok(const tg_function *f, int ninputs)
{
    if (!f || !f->forward || !f->backward || !f->name) {
        tg_error("tg_function_apply",
                 "the function is %s\n"
                 "  rule: a tg_function needs a name, a forward and a "
                 "backward\n"
                 "  hint: static const tg_function my_op = {\"MyOpBackward\", "
                 "my_forward, my_backward, sizeof(struct my_data)};",
                 !f ? "NULL" : !f->name ? "missing its name"
                             : !f->forward ? "missing its forward"
                                           : "missing its backward");
        return false;
    }
    if (ninputs < 0 || ninputs > TG_MAX_INPUTS) {
        tg_error("tg_function_apply",
                 "%s was given %d inputs\n"
                 "  rule: a function takes 0 to %d tensor inputs\n"
                 "  hint: pack several values into one tensor, or pass "
                 "constants through args",
                 f->name, ninputs, TG_MAX_INPUTS);
        return false;
    }
    return true;
}

tg_tensor *tg_function_apply(const tg_function *f,
                             const tg_tensor *const *inputs, int ninputs,
                             const void *args)
{
    if (!function_ok(f, ninputs))
        return NULL;
    if (ninputs > 0 && !inputs) {
        tg_error("tg_function_apply",
                 "%s was given %d inputs but no array of them\n"
                 "  rule: inputs points to ninputs tensors\n"
                 "  hint: const tg_tensor *in[] = {x, w}; "
                 "tg_function_apply(&f, in, 2, NULL)",
                 f->name, ninputs);
        return NULL;
    }
    for (int i = 0; i < ninputs; i++)
        if (!inputs[i])
            return NULL;
    bool record = tg_grad_needed(inputs, ninputs);
    tg_node *ctx = tg_node_new(f->name, f->backward, f->data_size, inputs,
                               ninputs);
    if (!ctx)
        return NULL;

    tg_no_grad_begin();
    tg_tensor *out = f->forward(ctx, inputs, ninputs, args);
    tg_no_grad_end();
    if (!out) {
        tg_node_discard(ctx);
        return NULL;
    }
    /* The output must be a tensor of its own to carry this node: a forward
     * that returned an input, a tensor someone else holds, or anything with
     * a history gets an alias. */
    bool fresh = !out->grad_fn && !out->requires_grad && out->refcount == 1;
    for (int i = 0; i < ninputs; i++)
        fresh = fresh && out != inputs[i];
    if (!fresh) {
        tg_tensor *alias = tg_detach(out);
        tg_release(out);
        if (!(out = alias)) {
            tg_node_discard(ctx);
            return NULL;
        }
    }
    if (!record || out->dtype == TG_INT64) {
        tg_node_discard(ctx);
        return out;
    }
    tg_node_attach(ctx, out);
    return out;
}

int tg_ctx_save(tg_ctx *ctx, const tg_tensor *t)
{
    return ctx ? tg_node_save(ctx, t) : -1;
}

const tg_tensor *tg_ctx_saved(const tg_ctx *ctx, int i)
{
    return ctx ? tg_node_saved(ctx, i) : NULL;
}

bool tg_ctx_needs_grad(const tg_ctx *ctx, int i)
{
    return ctx && tg_node_needs_grad(ctx, i);
}

void *tg_ctx_data(tg_ctx *ctx)
{
    /* NULL for a function that asked for no data: a write through it stops
     * at once instead of landing on the node's edges. */
    return ctx && ctx->ctx_size ? tg_node_ctx(ctx) : NULL;
}
