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

/* Float to int64 rounds toward zero (2.7 -> 2, -2.7 -> -2), as C's cast and
 * PyTorch. Values with no int64 (NaN, +-inf, |v| >= 2^63) are undefined in
 * C; they give INT64_MIN here, which is what x86's conversion instruction
 * and so PyTorch on x86 produce. */
static int64_t float_to_int64(double v)
{
    const double two63 = 9223372036854775808.0; // 2^63, exact in double
    if (!(v >= -two63 && v < two63))
        return INT64_MIN;
    return (int64_t)v;
}

/* One run of the iterator: data[0] is the int64 output, data[1] the float
 * input; ctx holds the input dtype. */
static void float_to_int64_loop(char **data, const int64_t *strides,
                                int64_t n, void *ctx)
{
    int64_t *out = (int64_t *)data[0];
    if (*(const tg_dtype *)ctx == TG_FLOAT32) {
        const float *in = (const float *)data[1];
        for (int64_t i = 0; i < n; i++)
            out[i * strides[0]] = float_to_int64(in[i * strides[1]]);
    } else {
        const double *in = (const double *)data[1];
        for (int64_t i = 0; i < n; i++)
            out[i * strides[0]] = float_to_int64(in[i * strides[1]]);
    }
}

/* to(x, dtype): out[i] = (dtype)x[i]. int64 -> float and float64 ->
 * float32 round to nearest; float -> int64 truncates toward zero. */
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
    if (dtype != TG_INT64) // the plain C conversions are well defined here
        return tg_contiguous_as(x, dtype);
    tg_tensor *out = tg_alloc(x->shape, x->ndim, TG_INT64);
    if (!out)
        return NULL;
    tg_iter it;
    tg_tensor *ops[2] = {out, (tg_tensor *)x};
    tg_iter_init(&it, out->shape, out->ndim, 2, ops);
    tg_dtype from = x->dtype;
    tg_iter_run(&it, float_to_int64_loop, &from);
    return out;
}
