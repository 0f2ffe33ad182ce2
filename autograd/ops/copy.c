/*
 * autograd/ops/copy.c - the ops that move elements into new storage:
 * tg_contiguous, tg_clone and tg_to_dtype.
 *
 * Each result is a C-contiguous tensor with its own storage, except where
 * the op promises to hand back x itself (tg_contiguous of a contiguous
 * tensor, tg_to_dtype to x's own dtype). The ops that only re-address
 * elements (reshape, transpose, slice, ...) are in view.c.
 *
 * Forward only so far; the backward of each is the identity on the output
 * gradient (converted back to x's dtype for tg_to_dtype).
 */
#include "../../tensor/internal.h"
#include "../ops.h"

#include <stdint.h>

/* contiguous(x): out[i] = x[i] laid out in C order; x itself (retained)
 * when it already is. */
tg_tensor *tg_contiguous(const tg_tensor *x)
{
    if (!x)
        return NULL;
    return tg_contiguous_as(x, x->dtype);
}

/* clone(x): out[i] = x[i] in fresh C-order storage, never shared with x, so
 * writes to either leave the other alone. */
tg_tensor *tg_clone(const tg_tensor *x)
{
    if (!x)
        return NULL;
    tg_tensor *out = tg_alloc(x->shape, x->ndim, x->dtype);
    if (out && tg_copy_(out, x) < 0) {
        tg_release(out);
        return NULL;
    }
    return out;
}

/* to(x, dtype): out[i] = (dtype)x[i]. int64 -> float and float64 ->
 * float32 round to nearest; float -> int64 truncates toward zero, with
 * INT64_MIN for NaN, inf and out-of-range values (tg_float_to_int64). */
tg_tensor *tg_to_dtype(const tg_tensor *x, tg_dtype dtype)
{
    if (!x)
        return NULL;
    if (dtype != TG_FLOAT32 && dtype != TG_FLOAT64 && dtype != TG_INT64) {
        tg_error("tg_to_dtype",
                 "unknown dtype %d\n"
                 "  rule: dtype must be TG_FLOAT32, TG_FLOAT64 or TG_INT64",
                 (int)dtype);
        return NULL;
    }
    if (dtype == x->dtype)
        return tg_retain((tg_tensor *)x);
    return tg_contiguous_as(x, dtype); // float -> int64: tg_float_to_int64
}
