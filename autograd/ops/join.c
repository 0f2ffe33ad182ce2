/*
 * autograd/ops/join.c - joining tensors along a dim (cat, stack) and
 * cutting one into pieces (split, split_sizes, chunk), forward and
 * backward.
 *
 * The math, for a dim d, with "x[.., k, ..]" meaning index k on dim d:
 *
 *   cat:    out[.., o_i + k, ..] = x_i[.., k, ..]   for k < n_i,
 *           o_i = n_0 + ... + n_{i-1}  (n_i = x_i.shape[d])
 *   stack:  out[.., i, ..]       = x_i              (a new dim d of size n)
 *           = cat(unsqueeze(x_0, d), ..., unsqueeze(x_{n-1}, d), d)
 *   split:  piece_j = x[.., s_j : s_j + len_j, ..], the pieces tiling
 *           dim d in order (split: len_j = split_size, the last one
 *           shorter; split_sizes: the given lengths; chunk: pieces of
 *           ceil(size / chunks), at most `chunks` of them)
 *
 * cat and stack copy into a new tensor; the pieces of a split are views
 * of x (narrow), sharing its storage as in PyTorch.
 *
 * Backward: joining and splitting move values without arithmetic, so each
 * backward moves the gradient back:
 *
 *   cat:    dx_i = g[.., o_i : o_i + n_i, ..]   (a view of g)
 *   stack:  dx_i = g[.., i, ..]                 (a view of g)
 *   split:  dx   = zeros(x.shape); dx[.., s_j : s_j + len_j, ..] = g_j
 *
 * PyTorch records one SplitBackward0 node with all the pieces as its
 * outputs; a tapegrad node has one output, so each piece has a node of its
 * own, with that name, and the engine adds the pieces' gradients into x's.
 * The numbers are the same; the price is one zero tensor of x's shape per
 * piece that receives a gradient.
 *
 * Not here: views of one tensor (view.c), copies (copy.c).
 */
#include "../internal.h"

#include <limits.h>
#include <stdio.h>
#include <string.h>

/* ----------------------------------------------------------------- helpers */

/* The dtype of cat's and stack's result, PyTorch's result_type over every
 * input. Each has dims (cat refuses 0-d tensors; stack unsqueezes them
 * first, in PyTorch as in the math above), so no 0-d rule applies and it
 * is a plain ranking: int64 < float32 < float64. A (0,) tensor that cat
 * leaves out still takes part, as in PyTorch. */
static tg_dtype join_dtype(const tg_tensor *const *tensors, int n)
{
    tg_dtype dtype = TG_INT64;
    for (int i = 0; i < n; i++)
        if (tensors[i]->dtype == TG_FLOAT64 ||
            (tensors[i]->dtype == TG_FLOAT32 && dtype == TG_INT64))
            dtype = tensors[i]->dtype;
    return dtype;
}

/* Checks the list argument of cat and stack: n >= 1 tensors in a non-NULL
 * array. Returns 1 when the list is good, 0 when an element is NULL (an
 * earlier call failed: no new message), -1 after an error. */
static int list_check(const char *fn, const tg_tensor *const *tensors, int n)
{
    if (n < 1 || !tensors) {
        tg_error(fn,
                 "got %d tensors in %s list\n"
                 "  rule: tensors points to n >= 1 tensors\n"
                 "  hint: const tg_tensor *parts[] = {a, b}; then %s(parts, "
                 "2, dim)",
                 n, tensors ? "a" : "a NULL", fn);
        return -1;
    }
    for (int i = 0; i < n; i++)
        if (!tensors[i])
            return 0;
    for (int i = 0; i < n; i++)
        tg_check_alive(fn, tensors[i]);
    return 1;
}

/* A view of out picking `len` indices of dim from start (a narrow made
 * without checks or recording: out is the op's own fresh result). */
static tg_tensor *block_of(const tg_tensor *out, int dim, int64_t start,
                           int64_t len)
{
    int64_t shape[TG_MAX_DIMS];
    memcpy(shape, out->shape, sizeof shape);
    shape[dim] = len;
    return tg_view_make(out, shape, out->strides, out->ndim,
                        out->offset + start * out->strides[dim]);
}

/* ------------------------------------------------------------------- cat */

/* The legacy rule PyTorch 1.13 keeps: a 1-D tensor with no elements,
 * shape (0,), is left out of cat whatever the other shapes are, so that
 * a list can start from an empty accumulator. */
static bool cat_skips(const tg_tensor *t)
{
    return t->ndim == 1 && t->shape[0] == 0;
}

/* The reference kernel: out[.., o_i + k, ..] = x_i[.., k, ..], each input
 * copied (converted to out's dtype) into its block of out along dim.
 * Returns 0, or -1 when a block's view could not be made. */
static int cat_kernel(tg_tensor *out, const tg_tensor *const *tensors, int n,
                      int dim)
{
    int64_t offset = 0; // o_i
    for (int i = 0; i < n; i++) {
        if (cat_skips(tensors[i]))
            continue;
        int64_t len = tensors[i]->shape[dim]; // n_i
        tg_tensor *block = block_of(out, dim, offset, len);
        int rc = block ? tg_copy_(block, tensors[i]) : -1;
        tg_release(block);
        if (rc < 0)
            return -1;
        offset += len;
    }
    return 0;
}

typedef struct join_ctx {
    int dim; // normalised: cat's dim of the inputs, stack's new dim
    int n;   // the number of inputs
} join_ctx;

/* forward: out[.., o_i + k, ..] = x_i[.., k, ..], so each element of x_i
 * reached exactly one element of out and
 *   dx_i = g[.., o_i : o_i + n_i, ..] = narrow(g, dim, o_i, n_i),
 * a view of g. The offsets o_i come from the inputs' shapes, which the
 * node keeps. A skipped (0,) input gets an empty gradient, as in PyTorch.
 * Saved: nothing. */
static int cat_backward(tg_node *node, const tg_tensor *g, tg_tensor **grads)
{
    const join_ctx *c = tg_node_ctx(node);
    int64_t offset = 0; // o_i
    for (int i = 0; i < c->n; i++) {
        int ndim;
        const int64_t *shape = tg_node_input_shape(node, i, &ndim);
        bool skipped = ndim == 1 && shape[0] == 0;
        int64_t len = skipped ? 0 : shape[c->dim]; // n_i
        if (tg_node_needs_grad(node, i)) {
            grads[i] = skipped ? tg_zeros(shape, ndim, g->dtype)
                               : tg_narrow(g, c->dim, offset, len);
            if (!grads[i])
                return -1;
        }
        offset += len;
    }
    return 0;
}
static const tg_op cat_op = {"CatBackward0", cat_backward, sizeof(join_ctx)};

/* Finds cat's dim and result shape. The first input that is not skipped
 * sets the number of dims and every size but dim's; dim is counted in its
 * dims (when every input is skipped, in those of a (0,) tensor). Returns
 * the normalised dim, or -1 after an error. */
static int cat_shape(const tg_tensor *const *tensors, int n, int dim,
                     int64_t *shape, int *ndim)
{
    char s1[TG_SHAPE_STR_MAX], s2[TG_SHAPE_STR_MAX];
    for (int i = 0; i < n; i++)
        if (tensors[i]->ndim == 0) {
            tg_error("tg_cat",
                     "tensor %d is 0-d\n"
                     "  rule: cat joins tensors along an existing dim, so "
                     "each needs at least one dim\n"
                     "  hint: tg_stack joins 0-d tensors into a (n,) "
                     "tensor, or tg_unsqueeze(t, 0) makes it (1,)",
                     i);
            return -1;
        }
    int first = 0; // the input that sets the shape
    while (first < n - 1 && cat_skips(tensors[first]))
        first++;
    const tg_tensor *ref = tensors[first];
    int d = tg_dim_normalize("tg_cat", dim, ref->ndim);
    if (d < 0)
        return -1;
    memcpy(shape, ref->shape, sizeof(int64_t) * TG_MAX_DIMS);
    *ndim = ref->ndim;
    if (cat_skips(ref)) // every input is (0,)
        return d;
    int64_t total = 0;
    for (int i = 0; i < n; i++) {
        const tg_tensor *t = tensors[i];
        if (cat_skips(t))
            continue;
        if (t->ndim != ref->ndim) {
            tg_error("tg_cat",
                     "cannot cat tensor %d of shape %s with tensor %d of "
                     "shape %s\n"
                     "  rule: the tensors must have the same number of "
                     "dims (%d and %d here); only a (0,) tensor is left "
                     "out\n"
                     "  hint: tg_unsqueeze or tg_reshape one of them first",
                     first, tg_shape_str(ref, s1), i, tg_shape_str(t, s2),
                     ref->ndim, t->ndim);
            return -1;
        }
        for (int k = 0; k < ref->ndim; k++)
            if (k != d && t->shape[k] != ref->shape[k]) {
                tg_error("tg_cat",
                         "cannot cat tensor %d of shape %s with tensor %d "
                         "of shape %s along dim %d\n"
                         "  rule: sizes must match except along dim %d, "
                         "but dim %d has size %lld and %lld",
                         first, tg_shape_str(ref, s1), i,
                         tg_shape_str(t, s2), d, d, k,
                         (long long)ref->shape[k], (long long)t->shape[k]);
                return -1;
            }
        total += t->shape[d]; // each < 2^59 and n < 2^31: no overflow
    }
    shape[d] = total;
    if (tg_shape_check("tg_cat", shape, *ndim) < 0)
        return -1;
    return d;
}

/* torch.cat(tensors, dim). */
tg_tensor *tg_cat(const tg_tensor *const *tensors, int n, int dim)
{
    int ok = list_check("tg_cat", tensors, n);
    if (ok <= 0)
        return NULL;
    int64_t shape[TG_MAX_DIMS];
    int ndim;
    int d = cat_shape(tensors, n, dim, shape, &ndim);
    if (d < 0)
        return NULL;
    tg_tensor *out = tg_alloc(shape, ndim, join_dtype(tensors, n));
    if (out && cat_kernel(out, tensors, n, d) < 0) {
        tg_release(out);
        return NULL;
    }
    tg_node *node = tg_record(&cat_op, &out, tensors, n);
    if (node)
        *(join_ctx *)tg_node_ctx(node) = (join_ctx){d, n};
    return out;
}

/* ----------------------------------------------------------------- stack */

/* The reference kernel: out[.., i, ..] = x_i, each input copied (converted
 * to out's dtype) into its slice i of the new dim. Returns 0, or -1 when a
 * slice's view could not be made. */
static int stack_kernel(tg_tensor *out, const tg_tensor *const *tensors,
                        int n, int dim)
{
    for (int i = 0; i < n; i++) {
        /* out[.., i, ..]: dim dropped, offset i * strides[dim] */
        int64_t shape[TG_MAX_DIMS], strides[TG_MAX_DIMS];
        for (int k = 0, j = 0; k < out->ndim; k++)
            if (k != dim) {
                shape[j] = out->shape[k];
                strides[j] = out->strides[k];
                j++;
            }
        tg_tensor *slice =
            tg_view_make(out, shape, strides, out->ndim - 1,
                         out->offset + i * out->strides[dim]);
        int rc = slice ? tg_copy_(slice, tensors[i]) : -1;
        tg_release(slice);
        if (rc < 0)
            return -1;
    }
    return 0;
}

/* forward: out[.., i, ..] = x_i, so dx_i = g[.., i, ..] = select(g, dim,
 * i), a view of g. Saved: nothing. */
static int stack_backward(tg_node *node, const tg_tensor *g,
                          tg_tensor **grads)
{
    const join_ctx *c = tg_node_ctx(node);
    for (int i = 0; i < c->n; i++)
        if (tg_node_needs_grad(node, i) &&
            !(grads[i] = tg_select(g, c->dim, i)))
            return -1;
    return 0;
}
static const tg_op stack_op = {"StackBackward0", stack_backward,
                               sizeof(join_ctx)};

/* torch.stack(tensors, dim). */
tg_tensor *tg_stack(const tg_tensor *const *tensors, int n, int dim)
{
    int ok = list_check("tg_stack", tensors, n);
    if (ok <= 0)
        return NULL;
    char s1[TG_SHAPE_STR_MAX], s2[TG_SHAPE_STR_MAX];
    const tg_tensor *ref = tensors[0];
    for (int i = 1; i < n; i++)
        if (!tg_same_shape(ref, tensors[i])) {
            tg_error("tg_stack",
                     "cannot stack tensor 0 of shape %s with tensor %d of "
                     "shape %s\n"
                     "  rule: every tensor must have the same shape\n"
                     "  hint: tg_cat joins tensors whose sizes differ "
                     "along one dim",
                     tg_shape_str(ref, s1), i, tg_shape_str(tensors[i], s2));
            return NULL;
        }
    int nd = ref->ndim + 1; // dims of the result
    if (dim < -nd || dim >= nd) {
        tg_error("tg_stack",
                 "dim %d is out of range for stacking tensors of shape %s\n"
                 "  rule: dim is the new dim's position in the result, so "
                 "it must be in [%d, %d]",
                 dim, tg_shape_str(ref, s1), -nd, nd - 1);
        return NULL;
    }
    if (nd > TG_MAX_DIMS) {
        tg_error("tg_stack",
                 "cannot stack tensors of shape %s\n"
                 "  rule: the result would have %d dims, and a tensor has "
                 "at most %d (TG_MAX_DIMS)\n"
                 "  hint: tg_reshape the tensors to fewer dims first",
                 tg_shape_str(ref, s1), nd, TG_MAX_DIMS);
        return NULL;
    }
    int d = dim < 0 ? dim + nd : dim;
    int64_t shape[TG_MAX_DIMS];
    for (int k = 0, j = 0; k < nd; k++)
        shape[k] = k == d ? n : ref->shape[j++];
    if (tg_shape_check("tg_stack", shape, nd) < 0)
        return NULL;
    tg_tensor *out = tg_alloc(shape, nd, join_dtype(tensors, n));
    if (out && stack_kernel(out, tensors, n, d) < 0) {
        tg_release(out);
        return NULL;
    }
    tg_node *node = tg_record(&stack_op, &out, tensors, n);
    if (node)
        *(join_ctx *)tg_node_ctx(node) = (join_ctx){d, n};
    return out;
}

/* ------------------------------------------------- split, split_sizes, chunk */

/* Where one piece of a split lies in x. */
typedef struct piece_ctx {
    int dim;
    int64_t start, length;
} piece_ctx;

/* forward: piece = x[.., start : start + length, ..], so the piece's
 * elements of x get g and the others 0:
 *   dx = zeros(x.shape);  dx[.., start : start + length, ..] = g
 * The engine adds the pieces' dx into x's gradient. Saved: the place
 * (ctx). */
static int piece_backward(tg_node *node, const tg_tensor *g,
                          tg_tensor **grads)
{
    if (!tg_node_needs_grad(node, 0))
        return 0;
    const piece_ctx *c = tg_node_ctx(node);
    int ndim;
    const int64_t *shape = tg_node_input_shape(node, 0, &ndim);
    tg_tensor *dx = tg_zeros(shape, ndim, g->dtype);
    tg_tensor *part = dx ? block_of(dx, c->dim, c->start, c->length) : NULL;
    int rc = part ? tg_copy_(part, g) : -1;
    tg_release(part);
    if (rc < 0) {
        tg_release(dx);
        return -1;
    }
    grads[0] = dx;
    return 0;
}
static const tg_op split_op = {"SplitBackward0", piece_backward,
                               sizeof(piece_ctx)};
static const tg_op split_sizes_op = {"SplitWithSizesBackward0",
                                     piece_backward, sizeof(piece_ctx)};

/* Sets out[0 .. max_out) to NULL (when out is given): what every split
 * function leaves there when it fails. */
static void clear_out(tg_tensor **out, int max_out)
{
    for (int i = 0; out && i < max_out; i++)
        out[i] = NULL;
}

/* Checks x for fn (a NULL x fails silently) and normalises dim. Returns
 * the dim, or -1. */
static int split_dim(const char *fn, const tg_tensor *x, int dim)
{
    if (!x)
        return -1;
    tg_check_alive(fn, x);
    if (x->ndim == 0) {
        tg_error(fn,
                 "cannot split a 0-d tensor\n"
                 "  rule: %s cuts a dim into pieces, so x needs at least one "
                 "dim\n"
                 "  hint: tg_unsqueeze(x, 0) makes it shape (1,)",
                 fn);
        return -1;
    }
    return tg_dim_normalize(fn, dim, x->ndim);
}

/* Checks that out has room for count pieces (out NULL with max_out 0 only
 * asks for the count). Returns 1 to make the pieces, 0 to return the
 * count only, -1 after an error. */
static int room_check(const char *fn, int64_t count, tg_tensor **out,
                      int max_out)
{
    if (!out && max_out == 0)
        return 0;
    if (!out || max_out < count) {
        tg_error(fn,
                 "out has room for %d tensor%s (%s) but the split makes "
                 "%lld\n"
                 "  rule: out points to max_out >= the number of pieces\n"
                 "  hint: %s(x, ..., NULL, 0) returns the number of pieces "
                 "without making them",
                 max_out, tg_plural(max_out), out ? "given" : "NULL",
                 (long long)count, fn);
        return -1;
    }
    return 1;
}

/* Makes the count pieces of x along dim d into out: piece j starts where
 * piece j - 1 ended and has length sizes[j], or, with sizes NULL,
 * min(split_size, what is left). Each piece is a view of x recorded as a
 * node of op. Returns count, or -1 with out cleared. */
static int make_pieces(const tg_op *op, const tg_tensor *x, int d,
                       int count, const int64_t *sizes, int64_t split_size,
                       tg_tensor **out)
{
    int64_t start = 0;
    for (int j = 0; j < count; j++) {
        int64_t left = x->shape[d] - start;
        int64_t len = sizes ? sizes[j] : split_size < left ? split_size : left;
        tg_tensor *piece = block_of(x, d, start, len);
        tg_node *node = tg_record(op, &piece, TG_INPUTS(x));
        if (node) {
            piece_ctx *c = tg_node_ctx(node);
            c->dim = d;
            c->start = start;
            c->length = len;
        }
        if (!piece) {
            for (int i = 0; i < j; i++)
                tg_release(out[i]);
            clear_out(out, count);
            return -1;
        }
        out[j] = piece;
        start += len;
    }
    return count;
}

/* torch.split(x, split_size, dim): pieces of split_size along dim, the
 * last one shorter; count = ceil(size / split_size), and 1 when the dim
 * is empty. */
int tg_split(const tg_tensor *x, int64_t split_size, int dim,
             tg_tensor **out, int max_out)
{
    int d = split_dim("tg_split", x, dim);
    if (d < 0) {
        clear_out(out, max_out);
        return -1;
    }
    int64_t size = x->shape[d];
    if (split_size < 0 || (split_size == 0 && size > 0)) {
        char s[TG_SHAPE_STR_MAX];
        tg_error("tg_split",
                 "split_size %lld cannot cut dim %d (size %lld) of a tensor "
                 "of shape %s\n"
                 "  rule: split_size must be >= 1 (0 only for a dim of "
                 "size 0)\n"
                 "  hint: tg_chunk cuts a dim into a given number of pieces",
                 (long long)split_size, d, (long long)size,
                 tg_shape_str(x, s));
        clear_out(out, max_out);
        return -1;
    }
    int64_t count = size == 0 ? 1 : (size + split_size - 1) / split_size;
    if (count > INT_MAX) {
        tg_error("tg_split",
                 "splitting dim %d (size %lld) into pieces of %lld makes "
                 "%lld pieces\n"
                 "  rule: the number of pieces must fit in an int\n"
                 "  hint: use a larger split_size",
                 d, (long long)size, (long long)split_size,
                 (long long)count);
        clear_out(out, max_out);
        return -1;
    }
    int room = room_check("tg_split", count, out, max_out);
    if (room <= 0) {
        if (room < 0)
            clear_out(out, max_out);
        return room < 0 ? -1 : (int)count;
    }
    return make_pieces(&split_op, x, d, (int)count, NULL, split_size, out);
}

/* torch.split(x, [sizes...], dim): nsizes pieces of the given lengths,
 * which must add up to the dim's size. */
int tg_split_sizes(const tg_tensor *x, const int64_t *sizes, int nsizes,
                   int dim, tg_tensor **out)
{
    int d = split_dim("tg_split_sizes", x, dim);
    if (d < 0) {
        clear_out(out, nsizes);
        return -1;
    }
    char s[TG_SHAPE_STR_MAX];
    if (nsizes < 0 || (nsizes > 0 && (!sizes || !out))) {
        tg_error("tg_split_sizes",
                 "got nsizes %d with sizes %s and out %s\n"
                 "  rule: sizes and out each point to nsizes >= 0 "
                 "entries\n"
                 "  hint: int64_t sizes[] = {2, 3}; tg_tensor *out[2]; "
                 "then tg_split_sizes(x, sizes, 2, dim, out)",
                 nsizes, sizes ? "given" : "NULL", out ? "given" : "NULL");
        clear_out(out, nsizes);
        return -1;
    }
    int64_t size = x->shape[d], total = 0;
    for (int j = 0; j < nsizes; j++) {
        if (sizes[j] < 0 || sizes[j] > size - total) {
            tg_error("tg_split_sizes",
                     "sizes[%d] = %lld does not fit in dim %d (size %lld) "
                     "of a tensor of shape %s after %lld elements\n"
                     "  rule: sizes must be >= 0 and add up to %lld",
                     j, (long long)sizes[j], d, (long long)size,
                     tg_shape_str(x, s), (long long)total, (long long)size);
            clear_out(out, nsizes);
            return -1;
        }
        total += sizes[j];
    }
    if (total != size) {
        tg_error("tg_split_sizes",
                 "sizes add up to %lld, not to the size %lld of dim %d of a "
                 "tensor of shape %s\n"
                 "  rule: the pieces must cover the dim exactly\n"
                 "  hint: tg_split(x, n, dim, ...) makes the last piece "
                 "shorter by itself",
                 (long long)total, (long long)size, d, tg_shape_str(x, s));
        clear_out(out, nsizes);
        return -1;
    }
    return make_pieces(&split_sizes_op, x, d, nsizes, sizes, 0, out);
}

/* torch.chunk(x, chunks, dim): pieces of ceil(size / chunks), so at most
 * `chunks` of them (fewer when that size covers the dim sooner: 6 into 4
 * gives three of 2); an empty dim gives `chunks` empty pieces. */
int tg_chunk(const tg_tensor *x, int chunks, int dim, tg_tensor **out,
             int max_out)
{
    int d = split_dim("tg_chunk", x, dim);
    if (d < 0) {
        clear_out(out, max_out);
        return -1;
    }
    if (chunks < 1) {
        tg_error("tg_chunk",
                 "chunks is %d\n"
                 "  rule: chunks must be >= 1",
                 chunks);
        clear_out(out, max_out);
        return -1;
    }
    int64_t size = x->shape[d];
    int64_t split_size = (size + chunks - 1) / chunks;
    int64_t count = size == 0 ? chunks : (size + split_size - 1) / split_size;
    int room = room_check("tg_chunk", count, out, max_out);
    if (room <= 0) {
        if (room < 0)
            clear_out(out, max_out);
        return room < 0 ? -1 : (int)count;
    }
    if (size == 0) { // PyTorch splits with sizes here: chunks zeros
        int64_t zeros[1] = {0};
        int made = 0;
        for (; made < count; made++)
            if (make_pieces(&split_sizes_op, x, d, 1, zeros, 0,
                            out + made) < 0)
                break;
        if (made == count)
            return (int)count;
        for (int i = 0; i < made; i++)
            tg_release(out[i]);
        clear_out(out, max_out);
        return -1;
    }
    return make_pieces(&split_op, x, d, (int)count, NULL, split_size, out);
}
