/*
 * autograd/ops/index.c - picking elements by integer position: index_select,
 * x[idx] for an int64 tensor idx (tg_index), gather and one_hot, each
 * forward next to its backward.
 *
 * The math. For index_select along dim, view x as (outer, n, inner), with
 * n = x.shape[dim], outer the product of the dims before it and inner of
 * those after; idx holds m positions in [0, n):
 *
 *   index_select:  out[o, j, i] = x[o, idx[j], i]          out (outer, m, inner)
 *   index:         out[j..., i] = x[idx[j...], i]          idx of any shape
 *   gather:        out[p] = x[p with p[dim] replaced by idx[p]]   out: idx's shape
 *   one_hot:       out[p..., c] = (idx[p] == c)            int64, no gradient
 *
 * tg_index is index_select on dim 0 with idx read flat: C[Xb] in makemore,
 * a (27, 10) table indexed by (32, 3) contexts, is (32, 3, 10).
 *
 * Backward. Every output element is a copy of one input element, so the
 * gradient of an input element is the sum of the gradients of its copies
 * (index_add and scatter_add):
 *
 *   index_select:  dx[o, idx[j], i] += g[o, j, i]
 *   gather:        dx[p with p[dim] = idx[p]] += g[p]
 *
 * A row picked twice gets both gradients added, in the order of the output:
 * the loop that makemore part 4 writes by hand for dC,
 *   for k, j: dC[Xb[k, j]] += demb[k, j]
 * No gradient flows to idx (integers), as in PyTorch's graph.
 *
 * Negative indices follow PyTorch: tg_index counts them from the end (as
 * x[idx] does, idx in [-n, n)); index_select and gather refuse them (idx
 * in [0, n)), as torch.index_select and torch.gather do. Every index is
 * checked before anything is read. idx is int64 (PyTorch's Long; tapegrad
 * has no int32), of any layout; x of any dtype and layout. Forwards copy
 * elements bit for bit; backwards accumulate in x's float dtype.
 *
 * Not here: indexing by a mask (x[mask]), several index tensors at once
 * (x[rows, cols]; gather does the lecture's logprobs[range(n), Yb]),
 * index assignment (x[idx] = v) and scatter as a forward op.
 */
#include "../internal.h"

#include <stdio.h>
#include <string.h>

/* ---------------------------------------------------------------- checks */

/* idx is int64. */
static int index_dtype_check(const char *fn, const tg_tensor *idx)
{
    if (idx->dtype == TG_INT64)
        return 0;
    tg_error(fn,
             "idx is %s\n"
             "  rule: indices are an int64 tensor (PyTorch's Long)\n"
             "  hint: convert them: tg_to_dtype(idx, TG_INT64)",
             tg_dtype_name(idx->dtype));
    return -1;
}

/* x has at least one dim (there is nothing to index in a 0-d tensor). */
static int index_dims_check(const char *fn, const tg_tensor *x)
{
    if (x->ndim > 0)
        return 0;
    tg_error(fn,
             "cannot index a 0-d tensor\n"
             "  rule: x has at least one dim to index (PyTorch: too many "
             "indices for tensor of dimension 0)\n"
             "  hint: make it (1,) first with tg_reshape(x, TG_SHAPE(1))");
    return -1;
}

/* Every one of the count values v[k] (flat positions of idx) lies in
 * [0, n), or in [-n, n) when negatives count from the end; n is the size
 * of x's dim (1 for a 0-d x). */
static int index_range_check(const char *fn, const tg_tensor *x, int dim,
                             int64_t n, const int64_t *v, int64_t count,
                             bool wrap)
{
    int64_t lo = wrap ? -n : 0;
    for (int64_t k = 0; k < count; k++) {
        if (v[k] >= lo && v[k] < n)
            continue;
        char sx[TG_SHAPE_STR_MAX];
        tg_error(fn,
                 "index %lld is out of range for dim %d of x of shape %s\n"
                 "  rule: every index lies in [%lld, %lld)%s\n"
                 "  hint: it is at flat position %lld of idx; indices "
                 "count from 0",
                 (long long)v[k], dim, tg_shape_str(x, sx), (long long)lo,
                 (long long)n,
                 wrap ? "; a negative index counts from the end, as in "
                        "PyTorch's x[idx]"
                      : "; negative indices are refused, as in PyTorch",
                 (long long)k);
        return -1;
    }
    return 0;
}

/* --------------------------------------------------------------- kernels */

/* out[o, j, i] = x[o, idx[j], i] for x viewed as (outer, n, inner) and
 * out as (outer, m, inner), both contiguous; a negative idx[j] counts from
 * the end (tg_index only: the others refused it). Copies bytes, so every
 * dtype is exact. */
static void index_select_kernel(const char *x, char *out, size_t itemsize,
                                int64_t outer, int64_t n, int64_t inner,
                                const int64_t *idx, int64_t m)
{
    size_t row = (size_t)inner * itemsize;
    for (int64_t o = 0; o < outer; o++)
        for (int64_t j = 0; j < m; j++) {
            int64_t r = idx[j] < 0 ? idx[j] + n : idx[j];
            memcpy(out + (size_t)(o * m + j) * row,
                   x + (size_t)(o * n + r) * row, row);
        }
}

/* dx[o, idx[j], i] += g[o, j, i]: index_add, dx and g contiguous of one
 * float dtype. */
static void index_add_kernel(tg_tensor *dx, const tg_tensor *g,
                             int64_t outer, int64_t n, int64_t inner,
                             const int64_t *idx, int64_t m)
{
    for (int64_t o = 0; o < outer; o++)
        for (int64_t j = 0; j < m; j++) {
            int64_t r = idx[j] < 0 ? idx[j] + n : idx[j];
            int64_t to = (o * n + r) * inner, from = (o * m + j) * inner;
            if (dx->dtype == TG_FLOAT32) {
                float *d = (float *)tg_base_ptr(dx) + to;
                const float *s = (const float *)tg_base_ptr(g) + from;
                for (int64_t i = 0; i < inner; i++)
                    d[i] += s[i];
            } else {
                double *d = (double *)tg_base_ptr(dx) + to;
                const double *s = (const double *)tg_base_ptr(g) + from;
                for (int64_t i = 0; i < inner; i++)
                    d[i] += s[i];
            }
        }
}

/* The (outer, n, inner) view of shape around dim. */
static void split_at(const int64_t *shape, int ndim, int dim, int64_t *outer,
                     int64_t *n, int64_t *inner)
{
    *outer = 1;
    *inner = 1;
    for (int d = 0; d < dim; d++)
        *outer *= shape[d];
    for (int d = dim + 1; d < ndim; d++)
        *inner *= shape[d];
    *n = shape[dim];
}

/* A new contiguous tensor of zeros (no checks). */
static tg_tensor *zeros_of(const int64_t *shape, int ndim, tg_dtype dtype)
{
    tg_tensor *t = tg_alloc(shape, ndim, dtype);
    if (t)
        memset(tg_base_ptr(t), 0, (size_t)t->numel * tg_dtype_size(dtype));
    return t;
}

/* ---------------------------------------------------- index_select, index */

/* Saved: 0 idx. Inputs: 0 x. */
typedef struct select_ctx {
    int dim; // the dim of x that idx picks along (0 for tg_index)
} select_ctx;

/* forward: out[o, j, i] = x[o, idx[j], i]   (index_select_kernel)
 * so dL/dx[o, r, i] = sum over j with idx[j] = r of g[o, j, i]:
 *   dx[o, idx[j], i] += g[o, j, i]           (index_add_kernel)
 * g has out's shape, which for tg_index is idx's shape followed by
 * x.shape[1:]: read flat, it is the (1, m, inner) of dim 0. */
static int select_backward(tg_node *node, const tg_tensor *g,
                           tg_tensor **grads)
{
    const select_ctx *c = tg_node_ctx(node);
    const tg_tensor *idx = tg_node_saved(node, 0);
    int ndim;
    const int64_t *shape = tg_node_input_shape(node, 0, &ndim);
    tg_dtype dtype = tg_node_input_dtype(node, 0);
    tg_tensor *ic = tg_contiguous_as(idx, TG_INT64);
    tg_tensor *gc = ic ? tg_contiguous_as(g, dtype) : NULL;
    tg_tensor *dx = gc ? zeros_of(shape, ndim, dtype) : NULL;
    if (dx) {
        int64_t outer, n, inner;
        split_at(shape, ndim, c->dim, &outer, &n, &inner);
        index_add_kernel(dx, gc, outer, n, inner,
                         (const int64_t *)tg_base_ptr(ic), idx->numel);
    }
    tg_release(gc);
    tg_release(ic);
    grads[0] = dx;
    return dx ? 0 : -1;
}
static const tg_op index_select_op = {"IndexSelectBackward0", select_backward,
                                      sizeof(select_ctx)};
static const tg_op index_op = {"IndexBackward0", select_backward,
                               sizeof(select_ctx)};

/* out = index_select(x, dim, idx) with out's shape given; idx checked to
 * be int64 with every value in range. Records op. */
static tg_tensor *select_checked(const tg_op *op, const tg_tensor *x, int dim,
                                 const tg_tensor *idx, const tg_tensor *ic,
                                 const int64_t *shape, int ndim)
{
    tg_tensor *xc = tg_contiguous(x);
    tg_tensor *out = xc ? tg_alloc(shape, ndim, x->dtype) : NULL;
    if (out) {
        int64_t outer, n, inner;
        split_at(x->shape, x->ndim, dim, &outer, &n, &inner);
        index_select_kernel(tg_base_ptr(xc), tg_base_ptr(out),
                            tg_dtype_size(x->dtype), outer, n, inner,
                            (const int64_t *)tg_base_ptr(ic), idx->numel);
    }
    tg_release(xc);
    tg_node *node = tg_record(op, &out, TG_INPUTS(x));
    if (node) {
        ((select_ctx *)tg_node_ctx(node))->dim = dim;
        tg_node_save(node, idx);
    }
    return out;
}

/* out = x with dim replaced by the idx.numel() rows idx picks */
tg_tensor *tg_index_select(const tg_tensor *x, int dim, const tg_tensor *idx)
{
    const char *fn = "tg_index_select";
    if (!x || !idx)
        return NULL;
    tg_check_alive("tg_index_select", x);
    tg_check_alive("tg_index_select", idx);
    if (index_dims_check(fn, x) < 0 || index_dtype_check(fn, idx) < 0)
        return NULL;
    int d = tg_dim_normalize(fn, dim, x->ndim);
    if (d < 0)
        return NULL;
    if (idx->ndim > 1) {
        char si[TG_SHAPE_STR_MAX];
        tg_error(fn,
                 "idx has shape %s\n"
                 "  rule: idx is 1-D (or 0-d), one position per picked "
                 "slice\n"
                 "  hint: for indices of any shape along dim 0 use "
                 "tg_index(x, idx), PyTorch's x[idx]",
                 tg_shape_str(idx, si));
        return NULL;
    }
    tg_tensor *ic = tg_contiguous_as(idx, TG_INT64);
    if (!ic)
        return NULL;
    tg_tensor *out = NULL;
    if (index_range_check(fn, x, d, x->shape[d],
                          (const int64_t *)tg_base_ptr(ic), ic->numel,
                          false) == 0) {
        int64_t shape[TG_MAX_DIMS];
        memcpy(shape, x->shape, sizeof(int64_t) * (size_t)x->ndim);
        shape[d] = idx->numel;
        out = select_checked(&index_select_op, x, d, idx, ic, shape,
                             x->ndim);
    }
    tg_release(ic);
    return out;
}

/* out[j..., i] = x[idx[j...], i]: idx's shape followed by x.shape[1:] */
tg_tensor *tg_index(const tg_tensor *x, const tg_tensor *idx)
{
    const char *fn = "tg_index";
    if (!x || !idx)
        return NULL;
    tg_check_alive("tg_index", x);
    tg_check_alive("tg_index", idx);
    if (index_dims_check(fn, x) < 0 || index_dtype_check(fn, idx) < 0)
        return NULL;
    int64_t shape[2 * TG_MAX_DIMS];
    int ndim = idx->ndim + x->ndim - 1;
    memcpy(shape, idx->shape, sizeof(int64_t) * (size_t)idx->ndim);
    memcpy(shape + idx->ndim, x->shape + 1,
           sizeof(int64_t) * (size_t)(x->ndim - 1));
    if (tg_shape_check(fn, shape, ndim) < 0)
        return NULL;
    tg_tensor *ic = tg_contiguous_as(idx, TG_INT64);
    if (!ic)
        return NULL;
    tg_tensor *out = NULL;
    if (index_range_check(fn, x, 0, x->shape[0],
                          (const int64_t *)tg_base_ptr(ic), ic->numel,
                          true) == 0)
        out = select_checked(&index_op, x, 0, idx, ic, shape, ndim);
    tg_release(ic);
    return out;
}

/* ----------------------------------------------------------------- gather */

/* A tensor's shape and strides with at least one dim: a 0-d tensor reads
 * as (1,), as PyTorch's gather treats it. */
typedef struct dims1 {
    int ndim;
    int64_t shape[TG_MAX_DIMS], strides[TG_MAX_DIMS];
} dims1;

static dims1 dims_of(const tg_tensor *t)
{
    dims1 r = {t->ndim > 0 ? t->ndim : 1, {1}, {0}};
    for (int d = 0; d < t->ndim; d++) {
        r.shape[d] = t->shape[d];
        r.strides[d] = t->strides[d];
    }
    return r;
}

/* The element offset in x (strides xs) of x[p with p[dim] = i]: where
 * gather reads for position p of idx, whose value there is i. */
static int64_t source_offset(const dims1 *ix, const int64_t *xs, int dim,
                             const int64_t *p, int64_t i)
{
    int64_t at = 0;
    for (int d = 0; d < ix->ndim; d++)
        at += (d == dim ? i : p[d]) * xs[d];
    return at;
}

/* Moves the multi-index p to the next position of shape, in C order. */
static void next_position(const dims1 *ix, int64_t *p)
{
    for (int d = ix->ndim - 1; d >= 0; d--) {
        if (++p[d] < ix->shape[d])
            return;
        p[d] = 0;
    }
}

/* Saved: 0 idx. Inputs: 0 x. */
typedef struct gather_ctx {
    int dim;
} gather_ctx;

/* forward: out[p] = x[p with p[dim] = idx[p]]
 * so each g[p] goes back to the element it was copied from, and elements
 * picked several times sum their gradients (scatter_add):
 *   dx[p with p[dim] = idx[p]] += g[p] */
static int gather_backward(tg_node *node, const tg_tensor *g,
                           tg_tensor **grads)
{
    const gather_ctx *c = tg_node_ctx(node);
    const tg_tensor *idx = tg_node_saved(node, 0);
    int ndim;
    const int64_t *shape = tg_node_input_shape(node, 0, &ndim);
    tg_dtype dtype = tg_node_input_dtype(node, 0);
    tg_tensor *ic = tg_contiguous_as(idx, TG_INT64);
    tg_tensor *gc = ic ? tg_contiguous_as(g, dtype) : NULL;
    tg_tensor *dx = gc ? zeros_of(shape, ndim, dtype) : NULL;
    if (dx) {
        dims1 ix = dims_of(idx), xd = dims_of(dx); // dx is contiguous
        const int64_t *v = (const int64_t *)tg_base_ptr(ic);
        int64_t p[TG_MAX_DIMS] = {0};
        for (int64_t k = 0; k < idx->numel; k++, next_position(&ix, p)) {
            int64_t at = source_offset(&ix, xd.strides, c->dim, p, v[k]);
            if (dtype == TG_FLOAT32)
                ((float *)tg_base_ptr(dx))[at] +=
                    ((const float *)tg_base_ptr(gc))[k];
            else
                ((double *)tg_base_ptr(dx))[at] +=
                    ((const double *)tg_base_ptr(gc))[k];
        }
    }
    tg_release(gc);
    tg_release(ic);
    grads[0] = dx;
    return dx ? 0 : -1;
}
static const tg_op gather_op = {"GatherBackward0", gather_backward,
                                sizeof(gather_ctx)};

/* idx has x's number of dims and is no larger than x in the dims other
 * than dim. */
static int gather_shape_check(const char *fn, const tg_tensor *x, int dim,
                              const tg_tensor *idx)
{
    char sx[TG_SHAPE_STR_MAX], si[TG_SHAPE_STR_MAX];
    tg_shape_str(x, sx);
    tg_shape_str(idx, si);
    if (idx->ndim != x->ndim) {
        tg_error(fn,
                 "idx of shape %s and x of shape %s have different numbers "
                 "of dims\n"
                 "  rule: idx has as many dims as x (%d), as in PyTorch\n"
                 "  hint: one index per row of (N, C) log-probabilities is "
                 "an (N, 1) idx: tg_unsqueeze(labels, 1)",
                 si, sx, x->ndim);
        return -1;
    }
    for (int d = 0; d < x->ndim; d++)
        if (d != dim && idx->shape[d] > x->shape[d]) {
            tg_error(fn,
                     "idx of shape %s is larger than x of shape %s in dim "
                     "%d\n"
                     "  rule: idx.shape[d] <= x.shape[d] for every d other "
                     "than dim %d, here %lld > %lld\n"
                     "  hint: idx picks along dim %d; in the other dims it "
                     "addresses x's own elements, so it cannot go beyond "
                     "them",
                     si, sx, d, dim, (long long)idx->shape[d],
                     (long long)x->shape[d], dim);
            return -1;
        }
    return 0;
}

/* out[p] = x[p with p[dim] = idx[p]], out of idx's shape */
tg_tensor *tg_gather(const tg_tensor *x, int dim, const tg_tensor *idx)
{
    const char *fn = "tg_gather";
    if (!x || !idx)
        return NULL;
    tg_check_alive("tg_gather", x);
    tg_check_alive("tg_gather", idx);
    if (index_dtype_check(fn, idx) < 0)
        return NULL;
    int d = tg_dim_normalize(fn, dim, x->ndim);
    if (d < 0 || gather_shape_check(fn, x, d, idx) < 0)
        return NULL;
    tg_tensor *ic = tg_contiguous_as(idx, TG_INT64);
    if (!ic)
        return NULL;
    const int64_t *v = (const int64_t *)tg_base_ptr(ic);
    dims1 xd = dims_of(x), ix = dims_of(idx);
    tg_tensor *out = NULL;
    /* a 0-d x reads as (1,): its only valid index is 0 */
    if (index_range_check(fn, x, d, xd.shape[d], v, ic->numel, false) < 0)
        goto done;
    out = tg_alloc(idx->shape, idx->ndim, x->dtype);
    if (out) {
        size_t itemsize = tg_dtype_size(x->dtype);
        const char *base = tg_base_ptr(x);
        int64_t p[TG_MAX_DIMS] = {0};
        for (int64_t k = 0; k < ic->numel; k++, next_position(&ix, p)) {
            int64_t at = source_offset(&ix, xd.strides, d, p, v[k]);
            memcpy(tg_base_ptr(out) + (size_t)k * itemsize,
                   base + at * (int64_t)itemsize, itemsize);
        }
    }
    tg_node *node = tg_record(&gather_op, &out, TG_INPUTS(x));
    if (node) {
        ((gather_ctx *)tg_node_ctx(node))->dim = d;
        tg_node_save(node, idx);
    }
done:
    tg_release(ic);
    return out;
}

/* ---------------------------------------------------------------- one_hot */

/* out[p..., c] = (idx[p] == c), int64, idx's shape followed by
 * (num_classes,) */
tg_tensor *tg_one_hot(const tg_tensor *idx, int64_t num_classes)
{
    const char *fn = "tg_one_hot";
    if (!idx)
        return NULL;
    tg_check_alive("tg_one_hot", idx);
    if (index_dtype_check(fn, idx) < 0)
        return NULL;
    if (num_classes < -1) {
        tg_error(fn,
                 "num_classes is %lld\n"
                 "  rule: num_classes >= 0, or -1 for the largest class "
                 "value + 1\n"
                 "  hint: for makemore's 27 characters, "
                 "tg_one_hot(idx, 27)",
                 (long long)num_classes);
        return NULL;
    }
    tg_tensor *ic = tg_contiguous_as(idx, TG_INT64);
    if (!ic)
        return NULL;
    const int64_t *v = (const int64_t *)tg_base_ptr(ic);
    tg_tensor *out = NULL;
    int64_t C = num_classes, max = -1;
    for (int64_t k = 0; k < ic->numel; k++) {
        if (v[k] < 0) {
            tg_error(fn,
                     "class value %lld at flat position %lld is negative\n"
                     "  rule: class values are >= 0 (PyTorch: Class values "
                     "must be non-negative)\n"
                     "  hint: classes count from 0",
                     (long long)v[k], (long long)k);
            goto done;
        }
        if (v[k] > max)
            max = v[k];
    }
    if (ic->numel == 0 && C <= 0) { // as PyTorch, also for num_classes 0
        tg_error(fn,
                 "cannot infer the number of classes of an empty idx\n"
                 "  rule: num_classes -1 means max(idx) + 1, which an empty "
                 "idx does not have, and PyTorch refuses 0 classes too\n"
                 "  hint: give num_classes >= 1");
        goto done;
    }
    if (C == -1)
        C = max + 1;
    if (max >= C) {
        tg_error(fn,
                 "class value %lld is too large for %lld classes\n"
                 "  rule: class values lie in [0, num_classes) = [0, %lld)\n"
                 "  hint: num_classes -1 takes max(idx) + 1 = %lld",
                 (long long)max, (long long)C, (long long)C,
                 (long long)max + 1);
        goto done;
    }
    int64_t shape[TG_MAX_DIMS + 1];
    memcpy(shape, idx->shape, sizeof(int64_t) * (size_t)idx->ndim);
    shape[idx->ndim] = C;
    if (tg_shape_check(fn, shape, idx->ndim + 1) < 0)
        goto done;
    out = zeros_of(shape, idx->ndim + 1, TG_INT64);
    for (int64_t k = 0; out && k < ic->numel; k++)
        ((int64_t *)tg_base_ptr(out))[k * C + v[k]] = 1;
done:
    tg_release(ic);
    return out;
}
