/*
 * autograd/ops/view.c - the ops that change how a tensor's elements are
 * addressed without moving them: reshape, view, permute, transpose,
 * squeeze, unsqueeze, expand, broadcast_to, narrow, slice and select,
 * forward and backward.
 *
 * Every op here computes a new (shape, strides, offset) over x's storage and
 * returns a tensor sharing that storage (tg_view_make), exactly as PyTorch
 * does; writing through the result writes into x. The one exception is
 * tg_reshape, which copies when no strides can describe the new shape.
 * Copies proper (tg_contiguous, tg_clone, tg_to_dtype) are in copy.c.
 *
 * Backward: a view moves no values, so dL/dx is dL/dout re-indexed the
 * other way: cut back into x's shape (reshape, view, squeeze, unsqueeze),
 * permuted back (permute, transpose), summed over the dims that expand
 * repeated (expand, broadcast_to), or written into a zero tensor of x's
 * shape at the positions that were picked (narrow, slice, select: the
 * other elements of x did not reach out, so their gradient is 0). No view
 * saves a tensor: the gradient depends on the layout only, never on
 * values. (An op that saves a view does keep x's storage, whose version
 * counter then catches a later in-place write to x.)
 *
 * Layout reminder: element (i_0, ..., i_{n-1}) of x lives at
 *     offset + sum_d i_d * strides[d]
 * in the storage, counted in elements.
 */
#include "../internal.h"

#include <stdio.h>
#include <string.h>

/* ----------------------------------------------------------------- helpers */

/* Formats a dims argument as "(1, 0, 2)"; n <= TG_MAX_DIMS. */
static char *dims_format(const int *dims, int n, char buf[TG_SHAPE_STR_MAX])
{
    int64_t wide[TG_MAX_DIMS];
    for (int i = 0; i < n; i++)
        wide[i] = dims[i];
    return tg_shape_format(wide, n, buf);
}

/* A view of x with x's own layout (a new tensor object, same storage). */
static tg_tensor *alias(const tg_tensor *x)
{
    return tg_view_make(x, x->shape, x->strides, x->ndim, x->offset);
}

/* ------------------------------------------------------- reshape and view */

/* Resolves a requested shape against numel elements, as PyTorch's
 * infer_size: at most one size may be -1, and it becomes
 *     numel / prod(other sizes).
 * Writes the resolved shape into out; returns false with an error. */
static bool infer_shape(const char *fn, const tg_tensor *x,
                        const int64_t *shape, int ndim, int64_t *out)
{
    /* Tensors hold fewer than 2^59 elements (tg_shape_check), so the
     * product is capped there instead of overflowing. */
    const int64_t TOO_MANY = INT64_C(1) << 60;
    char s1[TG_SHAPE_STR_MAX], s2[TG_SHAPE_STR_MAX], count[48];
    bool is_view = strcmp(fn, "tg_view") == 0;
    const char *verb = is_view ? "view" : "reshape";
    const char *into = is_view ? "as" : "into";
    int infer = -1;
    int64_t known = 1; // product of the sizes other than -1, saturated
    bool zero = false;
    for (int d = 0; d < ndim; d++) {
        out[d] = shape[d];
        if (shape[d] == -1) {
            if (infer >= 0) {
                tg_error(fn,
                         "shape %s has more than one -1\n"
                         "  rule: only one size can be inferred (-1); "
                         "give the others explicitly",
                         tg_shape_format(shape, ndim, s2));
                return false;
            }
            infer = d;
        } else if (shape[d] < 0) {
            tg_error(fn,
                     "shape %s has the invalid size %lld at dim %d\n"
                     "  rule: sizes must be >= 0, or -1 for the one size "
                     "to infer",
                     tg_shape_format(shape, ndim, s2), (long long)shape[d],
                     d);
            return false;
        } else if (shape[d] == 0) {
            zero = true;
        } else if (known > TOO_MANY / shape[d]) {
            known = TOO_MANY; // more than any tensor can hold
        } else {
            known *= shape[d];
        }
    }
    if (zero)
        known = 0;
    if (infer >= 0 && known == 0 && x->numel == 0) {
        tg_error(fn,
                 "cannot infer the -1 in shape %s for a tensor of shape %s "
                 "(0 elements)\n"
                 "  rule: when the other sizes multiply to 0, the -1 could "
                 "be any size\n"
                 "  hint: give that size explicitly",
                 tg_shape_format(shape, ndim, s2), tg_shape_str(x, s1));
        return false;
    }
    if (infer >= 0 && known > 0 && x->numel % known == 0) {
        out[infer] = x->numel / known;
        return true;
    }
    if (infer < 0 && known == x->numel)
        return true;
    if (known == TOO_MANY)
        snprintf(count, sizeof count, "over 2^60");
    else
        snprintf(count, sizeof count, "%lld", (long long)known);
    if (infer >= 0)
        tg_error(fn,
                 "cannot %s a tensor of shape %s (%lld elements) %s "
                 "shape %s\n"
                 "  rule: the sizes other than -1 multiply to %s, which "
                 "does not divide %lld",
                 verb, tg_shape_str(x, s1), (long long)x->numel, into,
                 tg_shape_format(shape, ndim, s2), count,
                 (long long)x->numel);
    else
        tg_error(fn,
                 "cannot %s a tensor of shape %s (%lld elements) %s "
                 "shape %s (%s elements)\n"
                 "  rule: the element counts must be equal, but %lld != "
                 "%s",
                 verb, tg_shape_str(x, s1), (long long)x->numel, into,
                 tg_shape_format(shape, ndim, s2), count,
                 (long long)x->numel, count);
    return false;
}

/* Strides that make newshape address x's elements in the same C order, or
 * false when none exist. A port of PyTorch's computeStride
 * (ATen/TensorUtils.cpp).
 *
 * The idea: split x's dims into "chunks", maximal runs of dims that are
 * contiguous with each other (stride[d-1] == size[d] * stride[d], ignoring
 * size-1 dims). Inside a chunk the elements are evenly spaced by the
 * chunk's innermost stride, so the chunk can be re-cut into any dims whose
 * sizes multiply to the chunk's element count. Walking both shapes from the
 * right, each chunk must be covered exactly by a run of new dims; a new dim
 * that would straddle two chunks cannot be written with one stride.
 *
 * Examples: a transposed (2, 3), shape (3, 2) with strides (1, 3), is two
 * chunks of 2 and 3 elements, so reshaping it to (6,) fails (tg_reshape
 * then copies) while (3, 1, 2) works. (4, 3)
 * narrowed on dim 0 to (2, 3) keeps strides (3, 1): one chunk, any reshape
 * of its 6 elements works. */
static bool compute_strides(const tg_tensor *x, const int64_t *newshape,
                            int newdim, int64_t *newstrides)
{
    const int64_t *oldshape = x->shape, *oldstride = x->strides;
    int olddim = x->ndim;
    if (olddim == 0) { // a scalar: one element, any stride will do
        for (int d = 0; d < newdim; d++)
            newstrides[d] = 1;
        return true;
    }
    /* With no elements the strides are arbitrary: keep x's when the shape
     * is unchanged (as NumPy), else use contiguous ones. */
    if (x->numel == 0) {
        bool same = olddim == newdim;
        for (int d = 0; same && d < newdim; d++)
            same = oldshape[d] == newshape[d];
        if (same)
            memcpy(newstrides, oldstride, sizeof(int64_t) * (size_t)newdim);
        else
            tg_contiguous_strides(newshape, newdim, newstrides);
        return true;
    }
    /* Products below wrap instead of overflowing on strange strides (a
     * size-1 dim's stride is arbitrary); real layouts never wrap. */
#define WRAP_MUL(a, b) ((int64_t)((uint64_t)(a) * (uint64_t)(b)))
    int view_d = newdim - 1;
    int64_t chunk_base_stride = oldstride[olddim - 1]; // step inside chunk
    int64_t tensor_numel = 1; // elements of x's dims in this chunk so far
    int64_t view_numel = 1;   // elements of the new dims given to it
    for (int tensor_d = olddim - 1; tensor_d >= 0; tensor_d--) {
        tensor_numel *= oldshape[tensor_d];
        /* The chunk ends at dim 0 or where the next dim out is not laid
         * out right after this one. */
        bool chunk_ends =
            tensor_d == 0 ||
            (oldshape[tensor_d - 1] != 1 &&
             oldstride[tensor_d - 1] !=
                 WRAP_MUL(tensor_numel, chunk_base_stride));
        if (!chunk_ends)
            continue;
        while (view_d >= 0 &&
               (view_numel < tensor_numel || newshape[view_d] == 1)) {
            newstrides[view_d] = WRAP_MUL(view_numel, chunk_base_stride);
            view_numel *= newshape[view_d];
            view_d--;
        }
        if (view_numel != tensor_numel)
            return false; // a new dim straddles two chunks
        if (tensor_d > 0) {
            chunk_base_stride = oldstride[tensor_d - 1];
            tensor_numel = 1;
            view_numel = 1;
        }
    }
#undef WRAP_MUL
    return view_d == -1;
}

/* The backward shared by the ops that only regroup x's elements in C order
 * (reshape, view, squeeze, unsqueeze): out holds x's elements in the same
 * order under another shape, so dL/dx is g in the same order under x's
 * shape: dx = reshape(g, x.shape). g may be any layout; tg_reshape copies
 * it when it must. */
static int regroup_backward(tg_node *node, const tg_tensor *g,
                            tg_tensor **grads)
{
    int ndim;
    const int64_t *shape = tg_node_input_shape(node, 0, &ndim);
    if (tg_node_needs_grad(node, 0) &&
        !(grads[0] = tg_reshape(g, shape, ndim)))
        return -1;
    return 0;
}

/* forward: out = reshape(x, shape) (a view, or a view of a copy), so
 * dx = reshape(g, x.shape). PyTorch 1.13 names the view case
 * ReshapeAliasBackward0 and the copy case UnsafeViewBackward0 (after a
 * CloneBackward0 node; here the copy is part of the one node). Saved:
 * nothing. */
static const tg_op reshape_alias_op = {"ReshapeAliasBackward0",
                                       regroup_backward, 0};
static const tg_op reshape_copy_op = {"UnsafeViewBackward0",
                                      regroup_backward, 0};
/* forward: out = view(x, shape), so dx = reshape(g, x.shape). */
static const tg_op view_op = {"ViewBackward0", regroup_backward, 0};

/* reshape(x, shape): the same elements in the same C order, cut into new
 * dims. out[i_0..i_k] = x.flat[sum_d i_d * prod(shape[d+1:])]. A view when
 * compute_strides finds strides, else a contiguous copy. */
tg_tensor *tg_reshape(const tg_tensor *x, const int64_t *shape, int ndim)
{
    if (!x)
        return NULL;
    tg_check_alive("tg_reshape", x);
    int64_t newshape[TG_MAX_DIMS], newstrides[TG_MAX_DIMS];
    /* infer_shape matches the element counts; tg_shape_check also bounds
     * the other sizes of an empty result, whose strides must not
     * overflow. */
    if (!tg_shape_arg_ok("tg_reshape", shape, ndim) ||
        !infer_shape("tg_reshape", x, shape, ndim, newshape) ||
        tg_shape_check("tg_reshape", newshape, ndim) < 0)
        return NULL;
    if (compute_strides(x, newshape, ndim, newstrides)) {
        tg_tensor *out =
            tg_view_make(x, newshape, newstrides, ndim, x->offset);
        tg_record(&reshape_alias_op, &out, TG_INPUTS(x));
        return out;
    }
    /* No strides exist: copy into C order, then view the copy. */
    tg_tensor *copy = tg_contiguous_as(x, x->dtype);
    if (!copy)
        return NULL;
    tg_contiguous_strides(newshape, ndim, newstrides);
    tg_tensor *out =
        tg_view_make(copy, newshape, newstrides, ndim, copy->offset);
    tg_release(copy);
    tg_record(&reshape_copy_op, &out, TG_INPUTS(x));
    return out;
}

/* view(x, shape): reshape that must not copy. */
tg_tensor *tg_view(const tg_tensor *x, const int64_t *shape, int ndim)
{
    if (!x)
        return NULL;
    tg_check_alive("tg_view", x);
    int64_t newshape[TG_MAX_DIMS], newstrides[TG_MAX_DIMS];
    if (!tg_shape_arg_ok("tg_view", shape, ndim) ||
        !infer_shape("tg_view", x, shape, ndim, newshape) ||
        tg_shape_check("tg_view", newshape, ndim) < 0)
        return NULL;
    if (!compute_strides(x, newshape, ndim, newstrides)) {
        char s1[TG_SHAPE_STR_MAX], s2[TG_SHAPE_STR_MAX],
            s3[TG_SHAPE_STR_MAX];
        tg_error("tg_view",
                 "cannot view a tensor of shape %s with strides %s as "
                 "shape %s\n"
                 "  rule: a view keeps the storage, so each new dim must "
                 "step through memory with one stride; here a new dim "
                 "would span two non-adjacent blocks of x\n"
                 "  hint: use tg_reshape (it copies when it must), or "
                 "tg_view(tg_contiguous(x), ...)",
                 tg_shape_str(x, s1),
                 tg_shape_format(x->strides, x->ndim, s2),
                 tg_shape_format(newshape, ndim, s3));
        return NULL;
    }
    tg_tensor *out = tg_view_make(x, newshape, newstrides, ndim, x->offset);
    tg_record(&view_op, &out, TG_INPUTS(x));
    return out;
}

/* --------------------------------------------------- permute, transpose */

/* The dims of a permute, normalised to [0, ndim). */
typedef struct permute_ctx {
    int dims[TG_MAX_DIMS]; // (ndim,)
} permute_ctx;

/* forward: out = permute(x, dims), i.e. out's dim i is x's dim dims[i],
 * so dx = permute(g, inverse) where inverse[dims[i]] = i puts each dim of
 * g back where it came from. Saved: dims (ctx). */
static int permute_backward(tg_node *node, const tg_tensor *g,
                            tg_tensor **grads)
{
    const permute_ctx *c = tg_node_ctx(node);
    int inverse[TG_MAX_DIMS];
    for (int i = 0; i < g->ndim; i++)
        inverse[c->dims[i]] = i;
    if (tg_node_needs_grad(node, 0) &&
        !(grads[0] = tg_permute(g, inverse, g->ndim)))
        return -1;
    return 0;
}
static const tg_op permute_op = {"PermuteBackward0", permute_backward,
                                 sizeof(permute_ctx)};

/* permute(x, dims): out.shape[i] = x.shape[dims[i]], and
 * out[i_0..i_k] = x[j] with j[dims[i]] = i_i. Only the strides move:
 * out.strides[i] = x.strides[dims[i]]. */
tg_tensor *tg_permute(const tg_tensor *x, const int *dims, int ndims)
{
    if (!x)
        return NULL;
    tg_check_alive("tg_permute", x);
    char s1[TG_SHAPE_STR_MAX], s2[TG_SHAPE_STR_MAX];
    if (ndims > 0 && !dims) {
        tg_error("tg_permute",
                 "dims is NULL but ndims is %d\n"
                 "  hint: pass TG_DIMS(1, 0), or NULL with ndims 0 for a "
                 "0-d tensor",
                 ndims);
        return NULL;
    }
    if (ndims != x->ndim) {
        tg_error("tg_permute",
                 "got %d dim%s for a tensor of shape %s\n"
                 "  rule: dims must list each of the tensor's %d dim%s "
                 "exactly once",
                 ndims, tg_plural(ndims), tg_shape_str(x, s1), x->ndim,
                 tg_plural(x->ndim));
        return NULL;
    }
    /* Zeroed: with ndims 0 (a 0-d x) the loop writes nothing. */
    int64_t shape[TG_MAX_DIMS] = {0}, strides[TG_MAX_DIMS] = {0};
    int normal[TG_MAX_DIMS]; // dims in [0, ndim)
    bool seen[TG_MAX_DIMS] = {false};
    for (int i = 0; i < ndims; i++) {
        int d = tg_dim_normalize("tg_permute", dims[i], x->ndim);
        if (d < 0)
            return NULL;
        if (seen[d]) {
            tg_error("tg_permute",
                     "dims %s is not a permutation of the dims of a tensor "
                     "of shape %s\n"
                     "  rule: each dim must appear exactly once, but dim "
                     "%d appears more than once",
                     dims_format(dims, ndims, s2), tg_shape_str(x, s1), d);
            return NULL;
        }
        seen[d] = true;
        normal[i] = d;
        shape[i] = x->shape[d];
        strides[i] = x->strides[d];
    }
    tg_tensor *out = tg_view_make(x, shape, strides, ndims, x->offset);
    tg_node *node = tg_record(&permute_op, &out, TG_INPUTS(x));
    if (node) {
        permute_ctx *c = tg_node_ctx(node);
        for (int i = 0; i < ndims; i++)
            c->dims[i] = normal[i];
    }
    return out;
}

/* The two dims a transpose swapped, normalised. */
typedef struct transpose_ctx {
    int dim0, dim1;
} transpose_ctx;

/* forward: out = transpose(x, a, b), a swap, which is its own inverse: so
 * dx = transpose(g, a, b). Saved: a, b (ctx). */
static int transpose_backward(tg_node *node, const tg_tensor *g,
                              tg_tensor **grads)
{
    const transpose_ctx *c = tg_node_ctx(node);
    if (tg_node_needs_grad(node, 0) &&
        !(grads[0] = tg_transpose(g, c->dim0, c->dim1)))
        return -1;
    return 0;
}
static const tg_op transpose_op = {"TransposeBackward0", transpose_backward,
                                   sizeof(transpose_ctx)};

/* transpose(x, a, b): permute with dims a and b swapped. */
tg_tensor *tg_transpose(const tg_tensor *x, int dim0, int dim1)
{
    if (!x)
        return NULL;
    tg_check_alive("tg_transpose", x);
    int a = tg_dim_normalize("tg_transpose", dim0, x->ndim);
    int b = a < 0 ? -1 : tg_dim_normalize("tg_transpose", dim1, x->ndim);
    if (b < 0)
        return NULL;
    tg_tensor *out;
    if (x->ndim == 0) { // dims 0 and -1 both name the scalar itself
        out = alias(x);
    } else {
        int64_t shape[TG_MAX_DIMS], strides[TG_MAX_DIMS];
        memcpy(shape, x->shape, sizeof shape);
        memcpy(strides, x->strides, sizeof strides);
        shape[a] = x->shape[b];
        shape[b] = x->shape[a];
        strides[a] = x->strides[b];
        strides[b] = x->strides[a];
        out = tg_view_make(x, shape, strides, x->ndim, x->offset);
    }
    tg_node *node = tg_record(&transpose_op, &out, TG_INPUTS(x));
    if (node) {
        transpose_ctx *c = tg_node_ctx(node);
        c->dim0 = a;
        c->dim1 = b;
    }
    return out;
}

/* -------------------------------------------------- squeeze, unsqueeze */

/* x without dim d, starting at the given storage offset. */
static tg_tensor *drop_dim(const tg_tensor *x, int d, int64_t offset)
{
    int64_t shape[TG_MAX_DIMS], strides[TG_MAX_DIMS];
    int n = 0;
    for (int i = 0; i < x->ndim; i++) {
        if (i == d)
            continue;
        shape[n] = x->shape[i];
        strides[n] = x->strides[i];
        n++;
    }
    return tg_view_make(x, shape, strides, n, offset);
}

/* forward: out = squeeze(x, dim) drops a size-1 dim (or is x unchanged),
 * so dx = reshape(g, x.shape) puts it back. Saved: nothing. PyTorch calls
 * the one-dim form SqueezeBackward1 and the every-dim form
 * SqueezeBackward0. */
static const tg_op squeeze_dim_op = {"SqueezeBackward1", regroup_backward,
                                     0};
static const tg_op squeeze_all_op = {"SqueezeBackward0", regroup_backward,
                                     0};

/* squeeze(x, dim): drops dim when x.shape[dim] == 1, else x unchanged.
 * No address changes: a size-1 dim only ever has index 0. */
tg_tensor *tg_squeeze(const tg_tensor *x, int dim)
{
    if (!x)
        return NULL;
    tg_check_alive("tg_squeeze", x);
    int d = tg_dim_normalize("tg_squeeze", dim, x->ndim);
    if (d < 0)
        return NULL;
    tg_tensor *out = x->ndim == 0 || x->shape[d] != 1
                         ? alias(x)
                         : drop_dim(x, d, x->offset);
    tg_record(&squeeze_dim_op, &out, TG_INPUTS(x));
    return out;
}

/* squeeze(x): drops every size-1 dim; (1, 3, 1) -> (3,), (1, 1) -> (). */
tg_tensor *tg_squeeze_all(const tg_tensor *x)
{
    if (!x)
        return NULL;
    tg_check_alive("tg_squeeze_all", x);
    int64_t shape[TG_MAX_DIMS], strides[TG_MAX_DIMS];
    int n = 0;
    for (int i = 0; i < x->ndim; i++) {
        if (x->shape[i] == 1)
            continue;
        shape[n] = x->shape[i];
        strides[n] = x->strides[i];
        n++;
    }
    tg_tensor *out = tg_view_make(x, shape, strides, n, x->offset);
    tg_record(&squeeze_all_op, &out, TG_INPUTS(x));
    return out;
}

/* forward: out = unsqueeze(x, dim) inserts a size-1 dim, so
 * dx = reshape(g, x.shape) takes it out again. Saved: nothing. */
static const tg_op unsqueeze_op = {"UnsqueezeBackward0", regroup_backward,
                                   0};

/* unsqueeze(x, dim): inserts a size-1 dim so that out.shape[dim] == 1;
 * dim is a position in the result, so it ranges over [-ndim-1, ndim]. Its
 * stride is irrelevant (index always 0); PyTorch's choice is kept:
 * shape[dim] * strides[dim] of the dim it lands before, 1 at the end. */
tg_tensor *tg_unsqueeze(const tg_tensor *x, int dim)
{
    if (!x)
        return NULL;
    tg_check_alive("tg_unsqueeze", x);
    char s[TG_SHAPE_STR_MAX];
    int n = x->ndim + 1; // dims of the result
    if (dim < -n || dim >= n) {
        tg_error("tg_unsqueeze",
                 "dim %d is out of range for unsqueezing a tensor with %d "
                 "dims\n"
                 "  rule: dim is the new dim's position in the result, so "
                 "it must be in [%d, %d]",
                 dim, x->ndim, -n, n - 1);
        return NULL;
    }
    if (n > TG_MAX_DIMS) {
        tg_error("tg_unsqueeze",
                 "cannot add a dim to a tensor of shape %s\n"
                 "  rule: a tensor has at most %d dims (TG_MAX_DIMS)\n"
                 "  hint: tg_squeeze_all or tg_reshape can merge dims first",
                 tg_shape_str(x, s), TG_MAX_DIMS);
        return NULL;
    }
    int d = dim < 0 ? dim + n : dim;
    int64_t shape[TG_MAX_DIMS], strides[TG_MAX_DIMS];
    for (int i = 0, j = 0; i < n; i++) {
        if (i == d) {
            shape[i] = 1;
            strides[i] = d < x->ndim ? x->shape[d] * x->strides[d] : 1;
        } else {
            shape[i] = x->shape[j];
            strides[i] = x->strides[j];
            j++;
        }
    }
    tg_tensor *out = tg_view_make(x, shape, strides, n, x->offset);
    tg_record(&unsqueeze_op, &out, TG_INPUTS(x));
    return out;
}

/* --------------------------------------------------- expand, broadcast */

/* forward: out = expand(x, shape), where every out[i] reads x[j(i)] and a
 * grown or new dim maps many i to one j, so dx[j] = sum of g[i] over all i
 * with j(i) = j: g summed over the new leading dims and, with keepdim, over
 * the grown size-1 dims (tg_sum_to_shape). Saved: nothing (x's shape is on
 * the node). tg_broadcast_to records the same node, as PyTorch. */
static int expand_backward(tg_node *node, const tg_tensor *g,
                           tg_tensor **grads)
{
    if (tg_node_needs_grad(node, 0) &&
        !(grads[0] = tg_sum_to_input(node, g, 0)))
        return -1;
    return 0;
}
static const tg_op expand_op = {"ExpandBackward0", expand_backward, 0};

/* The layout of x expanded to shape, as PyTorch's inferExpandGeometry.
 * Aligned from the right, each dim of x either keeps its size (its stride
 * too) or has size 1 and grows (stride 0, so every index reads the same
 * element); dims in front of x's are new and have stride 0 when bigger than
 * 1. minus_one_keeps: a size of -1 keeps x's size (expand) or is an error
 * (broadcast_to). */
static tg_tensor *expand_impl(const char *fn, const tg_tensor *x,
                              const int64_t *shape, int ndim,
                              bool minus_one_keeps)
{
    char s1[TG_SHAPE_STR_MAX], s2[TG_SHAPE_STR_MAX];
    const char *verb = minus_one_keeps ? "expand" : "broadcast";
    if (!tg_shape_arg_ok(fn, shape, ndim))
        return NULL;
    if (ndim < x->ndim) {
        tg_error(fn,
                 "cannot %s a tensor of shape %s to shape %s\n"
                 "  rule: the target needs at least as many dims as the "
                 "tensor (%d), but has %d\n"
                 "  hint: new dims can only be added in front",
                 verb, tg_shape_str(x, s1),
                 tg_shape_format(shape, ndim, s2), x->ndim, ndim);
        return NULL;
    }
    int64_t out_shape[TG_MAX_DIMS], out_strides[TG_MAX_DIMS];
    for (int i = ndim - 1; i >= 0; i--) {
        int xd = i - (ndim - x->ndim); // the matching dim of x, or < 0
        int64_t size = xd >= 0 ? x->shape[xd] : 1;
        int64_t stride = xd >= 0 ? x->strides[xd]
                         : i == ndim - 1
                             ? 0 // x is 0-d: PyTorch gives all strides 0
                             : out_shape[i + 1] * out_strides[i + 1];
        int64_t target = shape[i];
        if (target == -1 && minus_one_keeps) {
            if (xd < 0) {
                tg_error(fn,
                         "cannot %s a tensor of shape %s to shape %s\n"
                         "  rule: -1 keeps an existing size, but dim %d "
                         "is a new leading dim\n"
                         "  hint: give the new dim's size explicitly",
                         verb, tg_shape_str(x, s1),
                         tg_shape_format(shape, ndim, s2), i);
                return NULL;
            }
            target = size;
        }
        if (target < 0) {
            tg_error(fn,
                     "shape %s has the invalid size %lld at dim %d\n"
                     "  rule: sizes must be >= 0%s",
                     tg_shape_format(shape, ndim, s2), (long long)target, i,
                     minus_one_keeps ? ", or -1 to keep the existing size"
                                     : " (use tg_expand for -1)");
            return NULL;
        }
        if (target != size) {
            if (size != 1) {
                tg_error(fn,
                         "cannot %s a tensor of shape %s to shape %s\n"
                         "  rule: only size-1 dims can grow, but dim %d "
                         "has size %lld and the target asks for %lld\n"
                         "  hint: to repeat along a new dim, tg_unsqueeze "
                         "first so the size-1 dim is where it should grow",
                         verb, tg_shape_str(x, s1),
                         tg_shape_format(shape, ndim, s2), i,
                         (long long)size, (long long)target);
                return NULL;
            }
            size = target;
            stride = 0;
        }
        out_shape[i] = size;
        out_strides[i] = stride;
    }
    /* Growing many size-1 dims can make the element count overflow. */
    if (tg_shape_check(fn, out_shape, ndim) < 0)
        return NULL;
    tg_tensor *out = tg_view_make(x, out_shape, out_strides, ndim, x->offset);
    tg_record(&expand_op, &out, TG_INPUTS(x));
    return out;
}

/* expand(x, shape): out[i_0..i_k] = x[j] where, aligned from the right,
 * j_d = i_d for a kept dim and 0 for a grown one. No copy; writes through
 * an expanded view hit one element many times. */
tg_tensor *tg_expand(const tg_tensor *x, const int64_t *shape, int ndim)
{
    if (!x)
        return NULL;
    tg_check_alive("tg_expand", x);
    return expand_impl("tg_expand", x, shape, ndim, true);
}

/* broadcast_to(x, shape): the same as expand with every size given. */
tg_tensor *tg_broadcast_to(const tg_tensor *x, const int64_t *shape,
                           int ndim)
{
    if (!x)
        return NULL;
    tg_check_alive("tg_broadcast_to", x);
    return expand_impl("tg_broadcast_to", x, shape, ndim, false);
}

/* ------------------------------------------------ narrow, slice, select */

/* The region of x that narrow, slice or select picked, normalised: on dim,
 * the indices start, start + step, ... below end (clamped, non-negative),
 * and for select (drop) the one index start with the dim removed. */
typedef struct region_ctx {
    int dim;
    int64_t start, end, step;
    bool drop;
} region_ctx;

/* forward: out = x[..., start:end:step, ...] (or x[..., start, ...]), so
 * each out element is one x element and every other x element did not
 * reach out:
 *     dx = zeros(x.shape);  dx[..., start:end:step, ...] = g
 * written by taking the same view of a fresh zero tensor and copying g
 * into it. Saved: the region (ctx). */
static int region_backward(tg_node *node, const tg_tensor *g,
                           tg_tensor **grads)
{
    if (!tg_node_needs_grad(node, 0))
        return 0;
    const region_ctx *c = tg_node_ctx(node);
    int ndim;
    const int64_t *shape = tg_node_input_shape(node, 0, &ndim);
    /* Backward runs with gradients off: dx and its view are not recorded. */
    tg_tensor *dx = tg_zeros(shape, ndim, g->dtype);
    tg_tensor *part = !dx      ? NULL
                      : c->drop ? tg_select(dx, c->dim, c->start)
                                : tg_slice(dx, c->dim, c->start, c->end,
                                           c->step);
    int rc = part ? tg_copy_(part, g) : -1;
    tg_release(part);
    if (rc < 0) {
        tg_release(dx);
        return -1;
    }
    grads[0] = dx;
    return 0;
}
static const tg_op slice_op = {"SliceBackward0", region_backward,
                               sizeof(region_ctx)};
static const tg_op select_op = {"SelectBackward0", region_backward,
                                sizeof(region_ctx)};

/* Records op (slice_op or select_op) on out with its region. */
static tg_tensor *record_region(const tg_op *op, tg_tensor *out,
                                const tg_tensor *x, int dim, int64_t start,
                                int64_t end, int64_t step)
{
    tg_node *node = tg_record(op, &out, TG_INPUTS(x));
    if (node) {
        region_ctx *c = tg_node_ctx(node);
        c->dim = dim;
        c->start = start;
        c->end = end;
        c->step = step;
        c->drop = op == &select_op;
    }
    return out;
}

/* Checks that x has dims to index into; op names the operation. */
static bool has_dims(const char *fn, const char *op, const tg_tensor *x)
{
    tg_check_alive(fn, x);
    if (x->ndim > 0)
        return true;
    tg_error(fn,
             "cannot %s a 0-d tensor\n"
             "  rule: %s needs a tensor with at least one dim\n"
             "  hint: tg_unsqueeze(x, 0) makes it shape (1,)",
             op, fn);
    return false;
}

/* narrow(x, dim, start, length) = x[..., start:start+length, ...]:
 * out.shape[dim] = length, offset += start * strides[dim]. A negative start
 * counts from the end, as PyTorch; start == size is allowed with length 0. */
tg_tensor *tg_narrow(const tg_tensor *x, int dim, int64_t start,
                     int64_t length)
{
    if (!x || !has_dims("tg_narrow", "narrow", x))
        return NULL;
    int d = tg_dim_normalize("tg_narrow", dim, x->ndim);
    if (d < 0)
        return NULL;
    int64_t size = x->shape[d];
    int64_t s = start < 0 ? start + size : start;
    if (start < -size || start > size || length < 0 || s > size - length) {
        char buf[TG_SHAPE_STR_MAX];
        tg_error("tg_narrow",
                 "start %lld and length %lld do not fit in dim %d (size "
                 "%lld) of a tensor of shape %s\n"
                 "  rule: start must be in [%lld, %lld] (negative counts "
                 "from the end), length >= 0, and start + length <= %lld",
                 (long long)start, (long long)length, d, (long long)size,
                 tg_shape_str(x, buf), (long long)-size, (long long)size,
                 (long long)size);
        return NULL;
    }
    int64_t shape[TG_MAX_DIMS];
    memcpy(shape, x->shape, sizeof shape);
    shape[d] = length;
    tg_tensor *out = tg_view_make(x, shape, x->strides, x->ndim,
                                  x->offset + s * x->strides[d]);
    /* A narrow is the slice s:s+length (PyTorch records SliceBackward0). */
    return record_region(&slice_op, out, x, d, s, s + length, 1);
}

/* slice(x, dim, start, end, step) = x[..., start:end:step, ...] with
 * Python's clamping: negative start/end count from the end, then both are
 * clipped to [0, size] (end to at least start). Pass INT64_MAX as end for
 * "to the end" (Python's omitted end).
 *     out.shape[dim]   = ceil((end - start) / step)
 *     out.strides[dim] = strides[dim] * step
 *     offset          += start * strides[dim]                            */
tg_tensor *tg_slice(const tg_tensor *x, int dim, int64_t start, int64_t end,
                    int64_t step)
{
    if (!x || !has_dims("tg_slice", "slice", x))
        return NULL;
    int d = tg_dim_normalize("tg_slice", dim, x->ndim);
    if (d < 0)
        return NULL;
    if (step < 1) {
        tg_error("tg_slice",
                 "step %lld is not allowed\n"
                 "  rule: step must be >= 1 (PyTorch has no negative "
                 "steps either)",
                 (long long)step);
        return NULL;
    }
    int64_t size = x->shape[d];
    if (start < 0)
        start += size; // no overflow: size >= 0 and start < 0
    if (end < 0)
        end += size;
    start = start < 0 ? 0 : start > size ? size : start;
    end = end < start ? start : end > size ? size : end;
    int64_t len = end - start;
    int64_t shape[TG_MAX_DIMS], strides[TG_MAX_DIMS];
    memcpy(shape, x->shape, sizeof shape);
    memcpy(strides, x->strides, sizeof strides);
    shape[d] = len == 0 ? 0 : (len - 1) / step + 1;
    /* stride * step, as PyTorch. With two or more elements left that step
     * lies inside the storage. With fewer the stride is never used, and a
     * product beyond TG_MAX_NUMEL (only a huge step gets there) is
     * skipped, so that no later stride or offset computation can
     * overflow. */
    int64_t st = x->strides[d];
    if (shape[d] > 1 ||
        (st >= -(TG_MAX_NUMEL / step) && st <= TG_MAX_NUMEL / step))
        strides[d] = st * step;
    tg_tensor *out = tg_view_make(x, shape, strides, x->ndim,
                                  x->offset + start * x->strides[d]);
    return record_region(&slice_op, out, x, d, start, end, step);
}

/* select(x, dim, index) = x[..., index, ...]: dim disappears and
 * offset += index * strides[dim]; a negative index counts from the end. */
tg_tensor *tg_select(const tg_tensor *x, int dim, int64_t index)
{
    if (!x || !has_dims("tg_select", "select from", x))
        return NULL;
    int d = tg_dim_normalize("tg_select", dim, x->ndim);
    if (d < 0)
        return NULL;
    int64_t size = x->shape[d];
    if (index < -size || index >= size) {
        char s[TG_SHAPE_STR_MAX];
        if (size == 0) {
            tg_error("tg_select",
                     "index %lld is out of range for dim %d of a tensor of "
                     "shape %s\n"
                     "  rule: that dim has size 0, so no index is valid",
                     (long long)index, d, tg_shape_str(x, s));
            return NULL;
        }
        tg_error("tg_select",
                 "index %lld is out of range for dim %d (size %lld) of a "
                 "tensor of shape %s\n"
                 "  rule: index must be in [%lld, %lld] (negative counts "
                 "from the end)",
                 (long long)index, d, (long long)size, tg_shape_str(x, s),
                 (long long)-size, (long long)size - 1);
        return NULL;
    }
    int64_t i = index < 0 ? index + size : index;
    tg_tensor *out = drop_dim(x, d, x->offset + i * x->strides[d]);
    return record_region(&select_op, out, x, d, i, i + 1, 1);
}
