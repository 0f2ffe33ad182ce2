/*
 * autograd/ops/softmax.c - softmax and log_softmax along one dim, forward
 * and backward.
 *
 * x is seen as a contiguous (outer, n, inner) block:
 * outer = prod(shape[:dim]), n = shape[dim], inner = prod(shape[dim+1:]).
 * Each of the outer * inner rows holds n elements, `inner` apart. The math
 * runs in double for both float dtypes and is rounded to x's dtype once at
 * the end. int64 inputs are an error, as in PyTorch. Reductions that return
 * fewer elements (sum, max, ...) are in reduce.c.
 *
 * Backward needs only the output y (both Jacobians are functions of y), so
 * each op saves y and records one node; the two backwards, next to the
 * forward, are written with public ops on the saved y.
 */
#include "../internal.h"
#include "../kernels/softmax_fast.h"

#include <math.h>

/* One row: x[0], x[stride], ..., x[(n-1) * stride], written to the same
 * positions of out (starting at element `first`).
 *
 *   m             = max_j x_j     (subtracted so that exp cannot overflow)
 *   softmax_j     = exp(x_j - m) / sum_i exp(x_i - m)
 *   log_softmax_j = x_j - m - log(sum_i exp(x_i - m))
 *
 * The shift changes nothing mathematically: exp(x_j - m) / sum exp(x_i - m)
 * = exp(x_j) / sum exp(x_i). Without it, exp(1000) is inf in float64 and the
 * result is inf / inf = NaN. A row of all -inf has m = -inf and x_j - m =
 * NaN, so the whole row is NaN, as PyTorch; so is a row containing NaN or
 * +inf (the sum becomes NaN). */
static void softmax_row(const double *x, int64_t n, int64_t stride,
                        tg_tensor *out, int64_t first, bool log_form)
{
    double m = -INFINITY;
    for (int64_t j = 0; j < n; j++)
        if (x[j * stride] > m)
            m = x[j * stride];
    /* With every x_j = -inf the loop leaves m = -inf, giving NaN below. */
    double sum = 0.0;
    for (int64_t j = 0; j < n; j++)
        sum += exp(x[j * stride] - m);
    double log_sum = log(sum);
    for (int64_t j = 0; j < n; j++) {
        double shifted = x[j * stride] - m;
        tg_store_contiguous(out, first + j * stride,
              log_form ? shifted - log_sum : exp(shifted) / sum);
    }
}

/* Saved by both ops: their output y; the ctx: the dim (normalized). */
typedef struct softmax_ctx {
    int dim;
} softmax_ctx;

/* forward: y_j = exp(x_j) / sum_i exp(x_i), whose Jacobian is
 * dy_j/dx_k = y_j (delta_jk - y_k), so
 *   dx = y * (g - sum(g * y, dim))
 * (the sum kept as size 1 along dim, broadcast back). Saved: y. */
static int softmax_backward(tg_node *node, const tg_tensor *g,
                            tg_tensor **grads)
{
    const softmax_ctx *c = tg_node_ctx(node);
    const tg_tensor *y = tg_node_saved(node, 0);
    tg_tensor *gy = tg_mul(g, y);
    tg_tensor *dot = tg_sum(gy, &c->dim, 1, true); // sum(g * y, dim)
    tg_tensor *centred = tg_sub(g, dot);
    grads[0] = tg_mul(y, centred);
    tg_release(centred);
    tg_release(dot);
    tg_release(gy);
    return grads[0] ? 0 : -1;
}
static const tg_op softmax_op = {"SoftmaxBackward0", softmax_backward,
                                 sizeof(softmax_ctx)};

/* forward: y_j = x_j - log(sum_i exp(x_i)), so dy_j/dx_k = delta_jk -
 * softmax_k, and with softmax = exp(y):
 *   dx = g - exp(y) * sum(g, dim)
 * Saved: y (the log-probabilities). */
static int log_softmax_backward(tg_node *node, const tg_tensor *g,
                                tg_tensor **grads)
{
    const softmax_ctx *c = tg_node_ctx(node);
    tg_tensor *p = tg_exp(tg_node_saved(node, 0)); // softmax
    tg_tensor *total = tg_sum(g, &c->dim, 1, true); // sum(g, dim)
    tg_tensor *spread = tg_mul(p, total);
    grads[0] = tg_sub(g, spread);
    tg_release(spread);
    tg_release(total);
    tg_release(p);
    return grads[0] ? 0 : -1;
}
static const tg_op log_softmax_op = {"LogSoftmaxBackward0",
                                     log_softmax_backward,
                                     sizeof(softmax_ctx)};

static tg_tensor *softmax_along(const char *fn, const tg_tensor *x, int dim,
                                bool log_form)
{
    if (!x)
        return NULL;
    tg_check_alive(fn, x);
    if (x->dtype == TG_INT64) {
        tg_error(fn,
                 "cannot take the %s of an int64 tensor\n"
                 "  rule: softmax needs a float32 or float64 input (as in "
                 "PyTorch)\n"
                 "  hint: convert first: %s(tg_to_dtype(x, TG_FLOAT32), "
                 "dim)",
                 log_form ? "log-softmax" : "softmax", fn);
        return NULL;
    }
    int d = tg_dim_normalize(fn, dim, x->ndim);
    if (d < 0)
        return NULL;
    /* A 0-d x is one row of one element. */
    int64_t outer = 1, n = x->ndim ? x->shape[d] : 1, inner = 1;
    for (int i = 0; i < d; i++)
        outer *= x->shape[i];
    for (int i = d + 1; i < x->ndim; i++)
        inner *= x->shape[i];
    /* float32 rows along the last dim: the vectorised kernel
     * (kernels/softmax_fast.c), the same steps with exp and log of its
     * own. Otherwise the loop above, on a float64 copy. */
    bool fast = x->dtype == TG_FLOAT32 && inner == 1 &&
                !tg_use_reference_kernels();
    tg_tensor *xc = tg_contiguous_as(x, fast ? TG_FLOAT32 : TG_FLOAT64);
    tg_tensor *out = xc ? tg_alloc(x->shape, x->ndim, x->dtype) : NULL;
    if (out && x->numel > 0 && fast) {
        tg_softmax_rows_f32_fast((const float *)tg_base_ptr(xc), outer, n,
                                 (float *)tg_base_ptr(out), log_form);
    } else if (out && x->numel > 0) {
        const double *px = (const double *)tg_base_ptr(xc);
        for (int64_t o = 0; o < outer; o++)
            for (int64_t i = 0; i < inner; i++) {
                int64_t first = o * n * inner + i;
                softmax_row(px + first, n, inner, out, first, log_form);
            }
    }
    tg_release(xc);
    if (out)
        out->made_by = fn;
    tg_node *node = tg_record(log_form ? &log_softmax_op : &softmax_op, &out,
                              TG_INPUTS(x));
    if (node) {
        ((softmax_ctx *)tg_node_ctx(node))->dim = d;
        tg_node_save(node, out); // y
    }
    return out;
}

/* out = exp(x - max) / sum(exp(x - max)) along dim */
tg_tensor *tg_softmax(const tg_tensor *x, int dim)
{
    return softmax_along("tg_softmax", x, dim, false);
}

/* out = x - max - log(sum(exp(x - max))) along dim */
tg_tensor *tg_log_softmax(const tg_tensor *x, int dim)
{
    return softmax_along("tg_log_softmax", x, dim, true);
}
