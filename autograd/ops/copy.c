/*
 * autograd/ops/copy.c - the ops that move elements into new storage:
 * tg_contiguous, tg_clone and tg_to_dtype, forward and backward.
 *
 * Each result is a C-contiguous tensor with its own storage, except where
 * the op promises to hand back x itself (tg_contiguous of a contiguous
 * tensor, tg_to_dtype to x's own dtype). The ops that only re-address
 * elements (reshape, transpose, slice, ...) are in view.c.
 *
 * Backward: a copy is the identity on values, so dx = g (converted back to
 * x's dtype for tg_to_dtype). When the op hands back x itself nothing is
 * recorded: the result is x, with x's own history.
 */
#include "../internal.h"

#include <stdint.h>

/* forward: out[i] = x[i] (a copy, in any layout or dtype), so dx = g in
 * x's dtype (the engine would convert it too; doing it here says so).
 * Saved: nothing (x's dtype is on the node). PyTorch names it
 * CloneBackward0 for clone and contiguous, ToCopyBackward0 for to. */
static int copy_backward(tg_node *node, const tg_tensor *g,
                         tg_tensor **grads)
{
    if (tg_node_needs_grad(node, 0) &&
        !(grads[0] = tg_to_dtype(g, tg_node_input_dtype(node, 0))))
        return -1;
    return 0;
}
static const tg_op clone_op = {"CloneBackward0", copy_backward, 0};
static const tg_op to_copy_op = {"ToCopyBackward0", copy_backward, 0};

/* contiguous(x): out[i] = x[i] laid out in C order; x itself (retained)
 * when it already is. */
tg_tensor *tg_contiguous(const tg_tensor *x)
{
    if (!x)
        return NULL;
    tg_check_alive("tg_contiguous", x);
    tg_tensor *out = tg_contiguous_as(x, x->dtype);
    if (out != x) // a real copy; x itself keeps its own history
        tg_record(&clone_op, &out, TG_INPUTS(x));
    return out;
}

/* clone(x): out[i] = x[i] in fresh C-order storage, never shared with x, so
 * writes to either leave the other alone. */
tg_tensor *tg_clone(const tg_tensor *x)
{
    if (!x)
        return NULL;
    tg_check_alive("tg_clone", x);
    tg_tensor *out = tg_alloc(x->shape, x->ndim, x->dtype);
    if (out && tg_copy_(out, x) < 0) {
        tg_release(out);
        return NULL;
    }
    tg_record(&clone_op, &out, TG_INPUTS(x));
    return out;
}

/* to(x, dtype): out[i] = (dtype)x[i]. int64 -> float and float64 ->
 * float32 round to nearest; float -> int64 truncates toward zero, with
 * INT64_MIN for NaN, inf and out-of-range values (tg_float_to_int64).
 * A float result of a float x is differentiable; an int64 result is not
 * (tg_record skips it), as in PyTorch. */
tg_tensor *tg_to_dtype(const tg_tensor *x, tg_dtype dtype)
{
    if (!x)
        return NULL;
    tg_check_alive("tg_to_dtype", x);
    if (dtype != TG_FLOAT32 && dtype != TG_FLOAT64 && dtype != TG_INT64) {
        tg_error("tg_to_dtype",
                 "unknown dtype %d\n"
                 "  rule: dtype must be TG_FLOAT32, TG_FLOAT64 or TG_INT64",
                 (int)dtype);
        return NULL;
    }
    if (dtype == x->dtype)
        return tg_retain((tg_tensor *)x);
    // float -> int64: tg_float_to_int64
    tg_tensor *out = tg_contiguous_as(x, dtype);
    tg_record(&to_copy_op, &out, TG_INPUTS(x));
    return out;
}
