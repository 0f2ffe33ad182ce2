/*
 * autograd/ops/max_dim.c - the maximum (minimum) along one dim together
 * with where it is, as torch.max(x, dim, keepdim) and torch.min(x, dim,
 * keepdim), which return (values, indices); forward and backward.
 *
 * The math, for a dim d of size m, writing x as (outer, m, inner) around
 * it (outer = prod(shape[:d]), inner = prod(shape[d+1:])) and the result
 * as (outer, inner), element r = o * inner + k:
 *
 *   indices[r] = the first j < m where x[o, j, k] is largest: argmax
 *                along d, with a NaN counting as larger than everything
 *                (so the first NaN wins) and ties going to the first
 *                index, as PyTorch 1.13 on the CPU
 *   values[r]  = x[o, indices[r], k]
 *
 * so values holds NaN where the row holds one. min is the same with
 * "smallest" (a NaN again wins). The index rule is tg_argmax's
 * (reduce.c): this file calls it rather than repeating it.
 *
 * Backward: values[r] is one element of x, picked by indices[r], so the
 * gradient goes to that element only:
 *
 *   dx = zeros(x.shape);  dx[o, indices[r], k] = g[r]
 *
 * On a tie the whole gradient goes to the index returned, the first one;
 * this is PyTorch's MaxBackward0 (value_selecting_reduction_backward), and
 * differs from tg_max (torch.amax), whose backward shares the gradient
 * evenly among ties.
 *
 * Not here: reductions over several dims (reduce.c).
 */
#include "../internal.h"

#include <string.h>

/* The sizes around dim d: x as (outer, m, inner). */
typedef struct around_dim {
    int64_t outer, m, inner;
} around_dim;

static around_dim sizes_around(const int64_t *shape, int ndim, int d)
{
    around_dim a = {1, 1, 1};
    for (int k = 0; k < ndim; k++) {
        if (k < d)
            a.outer *= shape[k];
        else if (k == d)
            a.m = shape[k];
        else
            a.inner *= shape[k];
    }
    return a;
}

/* The reference kernel: values[r] = x[o, indices[r], k] with
 * r = o * inner + k, for a contiguous x (its flat index is
 * (o * m + j) * inner + k) and contiguous values and indices. Element
 * bytes are copied, so every dtype is exact. */
static void gather_kernel(tg_tensor *values, const tg_tensor *x,
                          const tg_tensor *indices, around_dim a)
{
    size_t es = tg_dtype_size(x->dtype);
    const char *xp = tg_base_ptr(x);
    const int64_t *ip = (const int64_t *)tg_base_ptr(indices);
    char *vp = tg_base_ptr(values);
    for (int64_t o = 0; o < a.outer; o++)
        for (int64_t k = 0; k < a.inner; k++) {
            int64_t r = o * a.inner + k;
            int64_t from = (o * a.m + ip[r]) * a.inner + k;
            memcpy(vp + (size_t)r * es, xp + (size_t)from * es, es);
        }
}

typedef struct max_dim_ctx {
    int dim; // normalised (0 for a 0-d x)
} max_dim_ctx;

/* forward: values[r] = x[o, indices[r], k], so
 *   dx = zeros(x.shape);  dx[o, indices[r], k] = g[r]
 * (each element of x gets at most one g[r]: one index per row). g is made
 * contiguous first; with or without keepdim it then holds g[r] at r.
 * Saved: indices. */
static int max_dim_backward(tg_node *node, const tg_tensor *g,
                            tg_tensor **grads)
{
    if (!tg_node_needs_grad(node, 0))
        return 0;
    const max_dim_ctx *c = tg_node_ctx(node);
    const tg_tensor *indices = tg_node_saved(node, 0);
    int ndim;
    const int64_t *shape = tg_node_input_shape(node, 0, &ndim);
    around_dim a = sizes_around(shape, ndim, c->dim);
    tg_tensor *gc = tg_contiguous(g);
    tg_tensor *dx = gc ? tg_zeros(shape, ndim, g->dtype) : NULL;
    if (!dx) {
        tg_release(gc);
        return -1;
    }
    size_t es = tg_dtype_size(g->dtype);
    const char *gp = tg_base_ptr(gc);
    const int64_t *ip = (const int64_t *)tg_base_ptr(indices);
    char *dp = tg_base_ptr(dx);
    for (int64_t o = 0; o < a.outer; o++)
        for (int64_t k = 0; k < a.inner; k++) {
            int64_t r = o * a.inner + k;
            int64_t to = (o * a.m + ip[r]) * a.inner + k;
            memcpy(dp + (size_t)to * es, gp + (size_t)r * es, es);
        }
    tg_release(gc);
    grads[0] = dx;
    return 0;
}
static const tg_op max_dim_op = {"MaxBackward0", max_dim_backward,
                                 sizeof(max_dim_ctx)};
static const tg_op min_dim_op = {"MinBackward0", max_dim_backward,
                                 sizeof(max_dim_ctx)};

/* Both ops: indices from tg_argmax or tg_argmin (find), values gathered,
 * one node recorded on values. */
static tg_tensor *extreme_dim(const char *fn, const tg_op *op,
                              tg_tensor *(*find)(const tg_tensor *, int,
                                                 bool),
                              const tg_tensor *x, int dim, bool keepdim,
                              tg_tensor **indices)
{
    if (indices)
        *indices = NULL;
    if (!x)
        return NULL;
    tg_check_alive(fn, x);
    int d = tg_dim_normalize(fn, dim, x->ndim);
    if (d < 0)
        return NULL;
    if (x->ndim > 0 && x->shape[d] == 0) {
        char s[TG_SHAPE_STR_MAX];
        tg_error(fn,
                 "dim %d of a tensor of shape %s has no elements to pick "
                 "from\n"
                 "  rule: the reduced dim must have size >= 1 (the other "
                 "dims may be empty)\n"
                 "  hint: check the shape before the call; %s over "
                 "another dim may be what was meant",
                 d, tg_shape_str(x, s), fn);
        return NULL;
    }
    if (x->ndim == 0)
        d = 0; // the one element: index 0
    tg_tensor *idx = find(x, d, keepdim);
    tg_tensor *xc = idx ? tg_contiguous(x) : NULL;
    tg_tensor *values =
        xc ? tg_alloc(idx->shape, idx->ndim, x->dtype) : NULL;
    if (values)
        gather_kernel(values, xc, idx, sizes_around(x->shape, x->ndim, d));
    tg_release(xc);
    tg_node *node = tg_record(op, &values, TG_INPUTS(x));
    if (node) {
        ((max_dim_ctx *)tg_node_ctx(node))->dim = d;
        tg_node_save(node, idx); // indices
    }
    if (!values) {
        tg_release(idx);
        return NULL;
    }
    if (indices)
        *indices = idx;
    else
        tg_release(idx);
    return values;
}

/* torch.max(x, dim, keepdim): the values, and the indices in *indices. */
tg_tensor *tg_max_dim(const tg_tensor *x, int dim, bool keepdim,
                      tg_tensor **indices)
{
    return extreme_dim("tg_max_dim", &max_dim_op, tg_argmax, x, dim, keepdim,
                       indices);
}

/* torch.min(x, dim, keepdim): the values, and the indices in *indices. */
tg_tensor *tg_min_dim(const tg_tensor *x, int dim, bool keepdim,
                      tg_tensor **indices)
{
    return extreme_dim("tg_min_dim", &min_dim_op, tg_argmin, x, dim, keepdim,
                       indices);
}
