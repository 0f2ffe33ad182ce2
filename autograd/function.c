/*
 * autograd/function.c - differentiable functions defined by the user, as
 * torch.autograd.Function: a forward and a backward callback, recorded on
 * the tape like any built-in op.
 *
 * The node (the tg_ctx) is made before forward runs, so forward can save
 * tensors into it; it goes on the tape only when an input needs a
 * gradient, and is thrown away otherwise.
 */
#include "anomaly.h"
#include "tape.h"

#include <stdint.h>
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
    /* The node rounds data_size up to its alignment and adds its own size:
     * near SIZE_MAX that sum wraps to a few bytes. No object is larger
     * than PTRDIFF_MAX, so nothing real is refused. */
    if (f->data_size > (size_t)PTRDIFF_MAX) {
        tg_error("tg_function_apply",
                 "%s asks for %zu bytes of data\n"
                 "  rule: data_size is at most %zu bytes (PTRDIFF_MAX, the "
                 "largest object C allows)\n"
                 "  hint: data_size is sizeof(struct my_data); keep "
                 "tensors with tg_ctx_save, not in the data",
                 f->name, f->data_size, (size_t)PTRDIFF_MAX);
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
                 "%s was given %d input%s but no array of them\n"
                 "  rule: inputs points to ninputs tensors\n"
                 "  hint: const tg_tensor *in[] = {x, w}; "
                 "tg_function_apply(&f, in, 2, NULL)",
                 f->name, ninputs, tg_plural(ninputs));
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

    tg_clear_error(); // to tell a forward that reported from one that did not
    tg_no_grad_begin();
    tg_tensor *out = f->forward(ctx, inputs, ninputs, args);
    tg_no_grad_end();
    if (!out) {
        if (!*tg_last_error())
            tg_error("tg_function_apply",
                     "the forward of %s returned NULL without saying why\n"
                     "  rule: a forward that fails reports the reason with "
                     "tg_error (a failing tapegrad op already has)\n"
                     "  hint: look at the forward of %s",
                     f->name, f->name);
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
    if (tg_anomaly_on() && tg_anomaly_check_forward("tg_function_apply",
                                                    f->name, out, inputs,
                                                    ninputs) < 0) {
        tg_release(out);
        tg_node_discard(ctx);
        return NULL;
    }
    tg_node_attach(ctx, out);
    return out;
}

/* NULL ctx: only a forward or backward receives a ctx, from the library. */
static bool ctx_ok(const char *fn, const tg_ctx *ctx)
{
    if (ctx)
        return true;
    tg_error(fn,
             "ctx is NULL\n"
             "  rule: pass the ctx your forward or backward received\n"
             "  hint: ctx is the first argument of the tg_function's "
             "forward and backward");
    return false;
}

int tg_ctx_save(tg_ctx *ctx, const tg_tensor *t)
{
    if (!ctx_ok("tg_ctx_save", ctx))
        return -1;
    if (t && ctx->nsaved == TG_MAX_SAVED) {
        tg_error("tg_ctx_save",
                 "%s already saved %d tensors\n"
                 "  rule: a function saves at most %d tensors for its "
                 "backward\n"
                 "  hint: save fewer (recompute cheap ones in backward), or "
                 "stack several into one tensor",
                 ctx->name, ctx->nsaved, TG_MAX_SAVED);
        ctx->save_failed = true; // backward refuses to run without it
        return -1;
    }
    return tg_node_save(ctx, t);
}

const tg_tensor *tg_ctx_saved(const tg_ctx *ctx, int i)
{
    if (!ctx_ok("tg_ctx_saved", ctx))
        return NULL;
    const tg_tensor *t = tg_node_saved(ctx, i);
    if (!t && (i < 0 || i >= ctx->nsaved)) {
        tg_error("tg_ctx_saved",
                 "%s has no saved tensor %d\n"
                 "  rule: i is an index tg_ctx_save returned, in [0, %d)\n"
                 "  hint: save it in the forward with tg_ctx_save(ctx, t)",
                 ctx->name, i, ctx->nsaved);
    }
    return t;
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
