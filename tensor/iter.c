/*
 * tensor/iter.c - the strided iterator behind every elementwise kernel, and
 * the apply functions that give unary and binary ops broadcasting and type
 * promotion.
 *
 * How it works: every operand is given strides over the common shape (0
 * where it is broadcast). Dims of size 1 are dropped, and neighbouring dims
 * that are contiguous for every operand are merged, so a contiguous tensor
 * becomes one long run. The loop function then sees one run at a time with
 * per-operand element strides; the outer dims are walked with a counter.
 */
#include "debug.h"
#include "internal.h"

#include <string.h>

void tg_iter_init(tg_iter *it, const int64_t *shape, int ndim, int nops,
                  tg_tensor *const *ops)
{
    memset(it, 0, sizeof *it);
    it->nops = nops;
    /* Broadcast strides, right-aligned to the common shape. */
    int64_t st[TG_ITER_MAX][TG_MAX_DIMS];
    for (int k = 0; k < nops; k++) {
        const tg_tensor *t = ops[k];
        it->data[k] = tg_base_ptr(t);
        it->itemsize[k] = tg_dtype_size(t->dtype);
        for (int d = 0; d < ndim; d++) {
            int td = d - (ndim - t->ndim);
            st[k][d] = (td < 0 || t->shape[td] == 1) ? 0 : t->strides[td];
        }
    }
    /* Drop size-1 dims, then merge dim d into the previous kept dim when
     * every operand steps through it contiguously. */
    int n = 0;
    for (int d = 0; d < ndim; d++) {
        if (shape[d] == 1)
            continue;
        if (n > 0) {
            bool merge = true;
            for (int k = 0; k < nops; k++)
                if (it->strides[k][n - 1] != st[k][d] * shape[d])
                    merge = false;
            if (merge) {
                it->shape[n - 1] *= shape[d];
                for (int k = 0; k < nops; k++)
                    it->strides[k][n - 1] = st[k][d];
                continue;
            }
        }
        it->shape[n] = shape[d];
        for (int k = 0; k < nops; k++)
            it->strides[k][n] = st[k][d];
        n++;
    }
    it->ndim = n;
    for (int d = 0; d < ndim; d++)
        if (shape[d] == 0)
            it->ndim = -1; // nothing to visit
}

void tg_iter_run(const tg_iter *it, tg_loop_fn loop, void *ctx)
{
    if (it->ndim < 0)
        return;
    char *data[TG_ITER_MAX];
    int64_t inner[TG_ITER_MAX];
    for (int k = 0; k < it->nops; k++)
        data[k] = it->data[k];
    if (it->ndim == 0) { // a single element
        for (int k = 0; k < it->nops; k++)
            inner[k] = 0;
        loop(data, inner, 1, ctx);
        return;
    }
    int last = it->ndim - 1;
    for (int k = 0; k < it->nops; k++)
        inner[k] = it->strides[k][last];
    int64_t counter[TG_MAX_DIMS] = {0};
    for (;;) {
        loop(data, inner, it->shape[last], ctx);
        /* Advance the outer dims like an odometer. */
        int d = last - 1;
        for (; d >= 0; d--) {
            for (int k = 0; k < it->nops; k++)
                data[k] += it->strides[k][d] * (int64_t)it->itemsize[k];
            if (++counter[d] < it->shape[d])
                break;
            for (int k = 0; k < it->nops; k++)
                data[k] -= it->strides[k][d] * it->shape[d] *
                           (int64_t)it->itemsize[k];
            counter[d] = 0;
        }
        if (d < 0)
            return;
    }
}

/* The dtype the kernel computes in, given the promoted input dtype. */
static tg_dtype compute_type(const tg_elementwise_kernel *k, tg_dtype t)
{
    if (t == TG_INT64 && !k->i64)
        return TG_FLOAT32;
    return t;
}

static tg_loop_fn loop_for(const tg_elementwise_kernel *k, tg_dtype t)
{
    switch (t) {
    case TG_FLOAT32: return k->f32;
    case TG_FLOAT64: return k->f64;
    case TG_INT64: return k->i64;
    }
    return NULL;
}

void tg_elementwise_run(tg_loop_fn loop, void *ctx, const int64_t *shape,
                        int ndim, int nops, tg_tensor *const *ops)
{
    /* Equal element counts mean equal shapes here, as every operand
     * broadcasts to the output's shape. */
    const int64_t n = ops[0]->numel;
    char *data[TG_ITER_MAX];
    int64_t strides[TG_ITER_MAX];
    bool one_run = true;
    for (int k = 0; k < nops && one_run; k++) {
        const tg_tensor *t = ops[k];
        one_run = tg_is_contiguous(t) && (t->numel == n || t->numel == 1);
        data[k] = tg_base_ptr(t);
        strides[k] = t->numel == n ? 1 : 0;
    }
    if (one_run) {
        if (n > 0)
            loop(data, strides, n, ctx);
        return;
    }
    tg_iter it;
    tg_iter_init(&it, shape, ndim, nops, ops);
    tg_iter_run(&it, loop, ctx);
}

tg_tensor *tg_unary_apply(const char *fn, const tg_elementwise_kernel *k,
                          const tg_tensor *x, void *ctx)
{
    if (!x)
        return NULL;
    tg_check_alive(fn, x);
    tg_dtype ct = compute_type(k, x->dtype);
    tg_loop_fn loop = loop_for(k, ct);
    if (!loop) {
        tg_error(fn, "not defined for %s tensors", tg_dtype_name(x->dtype));
        return NULL;
    }
    tg_tensor *in = x->dtype == ct ? tg_retain((tg_tensor *)x)
                                   : tg_contiguous_as(x, ct);
    tg_tensor *out =
        in ? tg_alloc(x->shape, x->ndim, k->out_int64 ? TG_INT64 : ct)
           : NULL;
    if (out) {
        tg_tensor *ops[2] = {out, in};
        tg_elementwise_run(loop, ctx, out->shape, out->ndim, 2, ops);
    }
    tg_release(in);
    if (out)
        out->made_by = fn;
    return out;
}

tg_tensor *tg_binary_apply(const char *fn, const tg_elementwise_kernel *k,
                           const tg_tensor *a, const tg_tensor *b, void *ctx)
{
    if (!a || !b)
        return NULL;
    tg_check_alive(fn, a);
    tg_check_alive(fn, b);
    int64_t shape[TG_MAX_DIMS];
    int ndim;
    if (tg_broadcast_shape(fn, a->shape, a->ndim, b->shape, b->ndim, shape,
                           &ndim) < 0)
        return NULL;
    tg_dtype ct = compute_type(k, tg_result_type(a, b));
    tg_loop_fn loop = loop_for(k, ct);
    if (!loop) {
        tg_error(fn, "not defined for %s tensors", tg_dtype_name(ct));
        return NULL;
    }
    tg_tensor *ia = a->dtype == ct ? tg_retain((tg_tensor *)a)
                                   : tg_contiguous_as(a, ct);
    tg_tensor *ib = b->dtype == ct ? tg_retain((tg_tensor *)b)
                                   : tg_contiguous_as(b, ct);
    tg_tensor *out = (ia && ib) ? tg_alloc(shape, ndim,
                                           k->out_int64 ? TG_INT64 : ct)
                                : NULL;
    if (out) {
        tg_tensor *ops[3] = {out, ia, ib};
        tg_elementwise_run(loop, ctx, shape, ndim, 3, ops);
    }
    tg_release(ia);
    tg_release(ib);
    if (out)
        out->made_by = fn;
    return out;
}

tg_tensor *tg_scalar_apply(tg_tensor *(*op)(const tg_tensor *,
                                             const tg_tensor *),
                           const tg_tensor *x, double s, bool scalar_first)
{
    if (!x)
        return NULL;
    tg_tensor *c = tg_scalar(s, tg_scalar_type(x, s));
    tg_tensor *out = c ? (scalar_first ? op(c, x) : op(x, c)) : NULL;
    tg_release(c);
    return out;
}
