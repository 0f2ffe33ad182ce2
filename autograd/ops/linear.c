/*
 * autograd/ops/linear.c - y = x W^T + b in one node, as
 * torch.nn.functional.linear (torch.addmm for a 2-D x): the math, the plain
 * reference kernel, the op and its closed-form backward.
 *
 * The math. x (..., in) is read as a matrix X (M, in) of M = prod(x's
 * leading dims) rows (one row for a 1-D x); W is (out, in), as PyTorch
 * stores it; b is (out,) or absent.
 *
 *   Y[i, j] = sum_p X[i, p] W[j, p] + b[j]        Y = X W^T + b   (M, out)
 *
 * and y is Y with x's leading dims: (..., out). With G = dL/dY (M, out):
 *
 *   dX[i, p] = sum_j G[i, j] W[j, p]              dX = G W        (M, in)
 *   dW[j, p] = sum_i G[i, j] X[i, p]              dW = G^T X      (out, in)
 *   db[j]    = sum_i G[i, j]                                      (out,)
 *
 * Composed, this is tg_add(tg_matmul(x, tg_transpose(W, 0, 1)), b): two
 * nodes, a transposed view, and an (M, out) intermediate that the add
 * copies. Here one node saves x and W, and the forward writes Y once.
 *
 * The kernels: every product above is one (m, k) @ (k, n) block read
 * through strides (W^T, G^T are the same memory as W and G), computed by
 *   gemm_naive_*: the plain triple loop, products summed in double from
 *     p = 0 and rounded once; the reference, and what runs under
 *     TG_KERNELS_REFERENCE;
 *   tg_gemm_f32 / tg_gemm_f64 (gemm.c): the blocked, threaded kernels of
 *     tg_matmul, which sum in the operands' type in the same p order.
 * The bias is added after the sum (the sum of products, then + b[j], as a
 * BLAS addmm does with beta = 1). float64 results are therefore the same
 * bits on both kernels (without OpenBLAS), and the same bits as the
 * composed form; float32 ones agree within tg_matmul's bound (matmul.c).
 * db sums G's column in double, rows in order, on both kernels.
 *
 * Not here: dtype promotion (x, W and b must share one float dtype, as in
 * PyTorch) and int64 (PyTorch's addmm has none on CPU either).
 */
#include "../internal.h"
#include "gemm.h"

#include <string.h>

/* ---------------------------------------------------- reference kernel */

/* c (m, n), contiguous = a (m, k) @ b (k, n) through any strides:
 *   c[i, j] = sum_p a[i * sa_i + p * sa_p] * b[p * sb_p + j * sb_j]
 * summed in double from p = 0, rounded once. */
#define TG_LINEAR_NAIVE(sfx, T)                                             \
    static void gemm_naive_##sfx(const T *a, int64_t sa_i, int64_t sa_p,    \
                                 const T *b, int64_t sb_p, int64_t sb_j,    \
                                 T *c, int64_t m, int64_t k, int64_t n)     \
    {                                                                       \
        for (int64_t i = 0; i < m; i++)                                     \
            for (int64_t j = 0; j < n; j++) {                               \
                double sum = 0;                                             \
                for (int64_t p = 0; p < k; p++)                             \
                    sum += (double)a[i * sa_i + p * sa_p] *                 \
                           (double)b[p * sb_p + j * sb_j];                  \
                c[i * n + j] = (T)sum;                                      \
            }                                                               \
    }

TG_LINEAR_NAIVE(f32, float)
TG_LINEAR_NAIVE(f64, double)

/* One strided operand of a product: the first element and two strides. */
typedef struct operand {
    const void *p;
    int64_t s0, s1; // stride of the row index, of the column index
} operand;

/* c (m, n), contiguous = a (m, k) @ b (k, n), on the reference kernel when
 * naive, else on tg_matmul's fast one. */
static void product(tg_dtype dtype, bool naive, operand a, operand b,
                    void *c, int64_t m, int64_t k, int64_t n)
{
    if (m == 0 || n == 0)
        return;
    if (k == 0) { // an empty sum
        memset(c, 0, (size_t)(m * n) * tg_dtype_size(dtype));
        return;
    }
    if (dtype == TG_FLOAT32) {
        if (naive)
            gemm_naive_f32(a.p, a.s0, a.s1, b.p, b.s0, b.s1, c, m, k, n);
        else
            tg_gemm_f32(a.p, a.s0, a.s1, b.p, b.s0, b.s1, c, m, k, n);
    } else {
        if (naive)
            gemm_naive_f64(a.p, a.s0, a.s1, b.p, b.s0, b.s1, c, m, k, n);
        else
            tg_gemm_f64(a.p, a.s0, a.s1, b.p, b.s0, b.s1, c, m, k, n);
    }
}

/* y[i, j] += b[j] for y (m, n) contiguous, b with stride sb. One body,
 * add_bias_at: called with sb == 1 (the usual case) by a copy built for
 * each CPU width (TG_VECTOR_CLONES), where the compiler knows the stride
 * and vectorises, and with any sb by a plain one; one addition per
 * element, the same bits in every copy. */
#define TG_LINEAR_ADD_BIAS(sfx, T)                                          \
    static inline __attribute__((always_inline)) void add_bias_at_##sfx(    \
        T *restrict y, const T *restrict b, int64_t sb, int64_t m,          \
        int64_t n)                                                          \
    {                                                                       \
        for (int64_t i = 0; i < m; i++)                                     \
            for (int64_t j = 0; j < n; j++)                                 \
                y[i * n + j] += b[j * sb];                                  \
    }                                                                       \
    static TG_VECTOR_CLONES void add_bias_unit_##sfx(                       \
        T *y, const T *b, int64_t m, int64_t n)                             \
    {                                                                       \
        add_bias_at_##sfx(y, b, 1, m, n);                                   \
    }                                                                       \
    static void add_bias_##sfx(T *y, const T *b, int64_t sb, int64_t m,     \
                               int64_t n)                                   \
    {                                                                       \
        if (sb == 1)                                                        \
            add_bias_unit_##sfx(y, b, m, n);                                \
        else                                                                \
            add_bias_at_##sfx(y, b, sb, m, n);                              \
    }
TG_LINEAR_ADD_BIAS(f32, float)
TG_LINEAR_ADD_BIAS(f64, double)

static void add_bias(tg_dtype dtype, void *y, const void *b, int64_t sb,
                     int64_t m, int64_t n)
{
    if (dtype == TG_FLOAT32)
        add_bias_f32(y, b, sb, m, n);
    else
        add_bias_f64(y, b, sb, m, n);
}

/* db[j] = sum_i g[i * s0 + j * s1], each column summed in double with
 * the rows in order. The walk goes along the rows (g is usually
 * row-major), a block of columns at a time, each column's partial sum in
 * acc: the same additions in the same order as a column-by-column loop.
 * Rows go four at a time, added to acc[j] one after another while it
 * stays in a register. As for the bias, one body (column_sums_at) serves
 * rows of unit stride (s1 == 1, the usual case) in a copy for each CPU
 * width that the compiler vectorises across the columns, and any stride
 * in a plain copy: the same additions in the same order, the same bits. */
#define TG_LINEAR_COLUMN_SUMS(sfx, T)                                       \
    static inline __attribute__((always_inline)) void column_sums_at_##sfx( \
        const T *restrict g, int64_t s0, int64_t s1, T *restrict db,        \
        int64_t m, int64_t n)                                               \
    {                                                                       \
        enum { COLS = 256 };                                                \
        double acc[COLS];                                                   \
        for (int64_t j0 = 0; j0 < n; j0 += COLS) {                          \
            int64_t w = n - j0 < COLS ? n - j0 : COLS;                      \
            for (int64_t j = 0; j < w; j++)                                 \
                acc[j] = 0;                                                 \
            int64_t i = 0;                                                  \
            for (; i + 4 <= m; i += 4) { /* four rows, added in order */    \
                const T *g0 = g + i * s0 + j0 * s1, *g1 = g0 + s0;          \
                const T *g2 = g1 + s0, *g3 = g2 + s0;                       \
                for (int64_t j = 0; j < w; j++)                             \
                    acc[j] = acc[j] + (double)g0[j * s1] +                  \
                             (double)g1[j * s1] + (double)g2[j * s1] +      \
                             (double)g3[j * s1];                            \
            }                                                               \
            for (; i < m; i++)                                              \
                for (int64_t j = 0; j < w; j++)                             \
                    acc[j] += (double)g[i * s0 + (j0 + j) * s1];            \
            for (int64_t j = 0; j < w; j++)                                 \
                db[j0 + j] = (T)acc[j];                                     \
        }                                                                   \
    }                                                                       \
    static TG_VECTOR_CLONES void column_sums_unit_##sfx(                    \
        const T *g, int64_t s0, T *db, int64_t m, int64_t n)                \
    {                                                                       \
        column_sums_at_##sfx(g, s0, 1, db, m, n);                           \
    }                                                                       \
    static void column_sums_##sfx(const T *g, int64_t s0, int64_t s1,       \
                                  T *db, int64_t m, int64_t n)              \
    {                                                                       \
        if (s1 == 1)                                                        \
            column_sums_unit_##sfx(g, s0, db, m, n);                        \
        else                                                                \
            column_sums_at_##sfx(g, s0, s1, db, m, n);                      \
    }

TG_LINEAR_COLUMN_SUMS(f32, float)
TG_LINEAR_COLUMN_SUMS(f64, double)

static void column_sums(tg_dtype dtype, operand g, void *db, int64_t m,
                        int64_t n)
{
    if (dtype == TG_FLOAT32)
        column_sums_f32(g.p, g.s0, g.s1, db, m, n);
    else
        column_sums_f64(g.p, g.s0, g.s1, db, m, n);
}

/* ----------------------------------------------------------- row views */

/* t (..., n) as the matrix (M, n) of its rows: *rows holds t itself when
 * its leading dims fold into one row index of a single stride, else a
 * contiguous copy (also when t's dtype is not dtype). New reference in
 * *rows, or NULL. */
static operand as_rows(const tg_tensor *t, tg_dtype dtype, tg_tensor **rows)
{
    int nd = t->ndim;
    bool folds = t->dtype == dtype;
    if (folds && nd >= 2) {
        int64_t expect = t->strides[nd - 2] * t->shape[nd - 2];
        for (int d = nd - 3; d >= 0 && folds; d--) {
            folds = t->shape[d] == 1 || t->strides[d] == expect;
            expect *= t->shape[d];
        }
    }
    *rows = folds ? tg_retain((tg_tensor *)t) : tg_contiguous_as(t, dtype);
    if (!*rows)
        return (operand){NULL, 0, 0};
    const tg_tensor *r = *rows;
    return (operand){tg_base_ptr(r), nd >= 2 ? r->strides[nd - 2] : 0,
                     r->strides[nd - 1]};
}

/* The operand's transpose: the same memory with the strides swapped. */
static operand transposed(operand a)
{
    return (operand){a.p, a.s1, a.s0};
}

static operand matrix(const tg_tensor *w)
{
    return (operand){tg_base_ptr(w), w->strides[0], w->strides[1]};
}

/* ------------------------------------------------------------ backward */

typedef struct linear_ctx {
    int x_saved, w_saved; // tg_node_saved indices, -1 if not saved
    bool naive;           // the forward ran the reference kernel
} linear_ctx;

/* forward: Y = X W^T + b, Y[i, j] = sum_p X[i, p] W[j, p] + b[j], so
 *   dX = G W     (M, in):   G (M, out) @ W (out, in)
 *   dW = G^T X   (out, in): G^T (out, M) @ X (M, in)
 *   db[j] = sum_i G[i, j]
 * Saved: W when x needs a gradient, x when W does; b is not needed. */
static int linear_backward(tg_node *node, const tg_tensor *g,
                           tg_tensor **grads)
{
    const linear_ctx *c = tg_node_ctx(node);
    tg_dtype dtype = tg_node_input_dtype(node, 1);
    int xnd;
    const int64_t *xshape = tg_node_input_shape(node, 0, &xnd);
    int64_t in = xshape[xnd - 1], out = g->shape[g->ndim - 1], M = 1;
    for (int d = 0; d < xnd - 1; d++)
        M *= xshape[d];
    tg_tensor *grows = NULL;
    operand G = as_rows(g, dtype, &grows);
    if (!grows)
        return -1;
    int rc = 0;
    if (tg_node_needs_grad(node, 0)) { // dX = G W
        grads[0] = tg_alloc(xshape, xnd, dtype);
        if (grads[0])
            product(dtype, c->naive, G,
                    matrix(tg_node_saved(node, c->w_saved)),
                    tg_base_ptr(grads[0]), M, out, in);
        else
            rc = -1;
    }
    if (rc == 0 && tg_node_needs_grad(node, 1)) { // dW = G^T X
        tg_tensor *xrows = NULL;
        operand X = as_rows(tg_node_saved(node, c->x_saved), dtype, &xrows);
        grads[1] = xrows ? tg_alloc(TG_SHAPE(out, in), dtype) : NULL;
        if (grads[1])
            product(dtype, c->naive, transposed(G), X, tg_base_ptr(grads[1]),
                    out, M, in);
        else
            rc = -1;
        tg_release(xrows);
    }
    if (rc == 0 && tg_node_needs_grad(node, 2)) { // db = G summed over rows
        grads[2] = tg_alloc(TG_SHAPE(out), dtype);
        if (grads[2])
            column_sums(dtype, G, tg_base_ptr(grads[2]), M, out);
        else
            rc = -1;
    }
    tg_release(grows);
    return rc;
}

/* PyTorch 1.13 names F.linear's node AddmmBackward0 for a 2-D x with a
 * bias and MmBackward0 without one (around other inputs it adds view,
 * squeeze or add nodes). tapegrad records one node for every shape, named
 * after the product it computes on the folded rows. */
static const tg_op addmm_op = {"AddmmBackward0", linear_backward,
                               sizeof(linear_ctx)};
static const tg_op mm_op = {"MmBackward0", linear_backward,
                            sizeof(linear_ctx)};

/* ------------------------------------------------------------ the op */

static int linear_check(const tg_tensor *x, const tg_tensor *w,
                        const tg_tensor *b);

tg_tensor *tg_linear(const tg_tensor *x, const tg_tensor *w,
                     const tg_tensor *b)
{
    if (!x || !w)
        return NULL;
    tg_check_alive("tg_linear", x);
    tg_check_alive("tg_linear", w);
    tg_check_alive("tg_linear", b);
    if (linear_check(x, w, b) < 0)
        return NULL;
    tg_dtype dtype = x->dtype;
    int64_t in = w->shape[1], out = w->shape[0];
    int64_t shape[TG_MAX_DIMS];
    memcpy(shape, x->shape, sizeof(int64_t) * (size_t)x->ndim);
    shape[x->ndim - 1] = out;
    int64_t numel = tg_shape_check("tg_linear", shape, x->ndim);
    if (numel < 0)
        return NULL;
    int64_t M = 1;
    for (int d = 0; d < x->ndim - 1; d++)
        M *= x->shape[d];
    bool naive = tg_use_reference_kernels();
    tg_tensor *xrows = NULL;
    operand X = as_rows(x, dtype, &xrows);
    tg_tensor *y = xrows ? tg_alloc(shape, x->ndim, dtype) : NULL;
    if (y) {
        product(dtype, naive, X, transposed(matrix(w)), tg_base_ptr(y), M,
                in, out);
        if (b)
            add_bias(dtype, tg_base_ptr(y), tg_base_ptr(b), b->strides[0], M,
                     out);
    }
    tg_release(xrows);
    tg_node *node = tg_record(b ? &addmm_op : &mm_op, &y, TG_INPUTS(x, w, b));
    if (node) {
        linear_ctx *c = tg_node_ctx(node);
        c->naive = naive;
        c->x_saved = c->w_saved = -1;
        if (tg_node_needs_grad(node, 1))
            c->x_saved = tg_node_save(node, x); // x, for dW = G^T X
        if (tg_node_needs_grad(node, 0))
            c->w_saved = tg_node_save(node, w); // W, for dX = G W
        /* A tensor that could not be saved (out of memory, reported)
         * fails the op now rather than its backward later. */
        if ((tg_node_needs_grad(node, 1) && c->x_saved < 0) ||
            (tg_node_needs_grad(node, 0) && c->w_saved < 0)) {
            tg_release(y);
            return NULL;
        }
    }
    return y;
}

/* ------------------------------------------------------------ checks */

/* t (x, weight or bias) has x's float dtype. */
static int dtype_check(const char *name, const tg_tensor *t,
                       const tg_tensor *x)
{
    if (!tg_dtype_is_float(x->dtype)) {
        tg_error("tg_linear",
                 "cannot apply a linear map to an %s x\n"
                 "  rule: x, weight and bias must be float32 or float64 "
                 "(PyTorch has no integer linear either)\n"
                 "  hint: convert first: tg_to_dtype(x, TG_FLOAT32)",
                 tg_dtype_name(x->dtype));
        return -1;
    }
    if (t->dtype != x->dtype) {
        tg_error("tg_linear",
                 "%s is %s but x is %s\n"
                 "  rule: x, weight and bias have one dtype (as in PyTorch, "
                 "nothing is converted silently)\n"
                 "  hint: convert it with tg_to_dtype(%s, %s)",
                 name, tg_dtype_name(t->dtype), tg_dtype_name(x->dtype),
                 name, x->dtype == TG_FLOAT32 ? "TG_FLOAT32" : "TG_FLOAT64");
        return -1;
    }
    return 0;
}

/* x (..., in), w (out, in), b (out,) or NULL, one float dtype. */
static int linear_check(const tg_tensor *x, const tg_tensor *w,
                        const tg_tensor *b)
{
    char sx[TG_SHAPE_STR_MAX], sw[TG_SHAPE_STR_MAX], sb[TG_SHAPE_STR_MAX];
    if (w->ndim != 2) {
        tg_error("tg_linear",
                 "weight must be 2-D, but it is %s\n"
                 "  rule: weight is (out_features, in_features), as "
                 "PyTorch's\n"
                 "  hint: a map to one output is a (1, in_features) "
                 "weight: tg_unsqueeze(weight, 0)",
                 tg_shape_str(w, sw));
        return -1;
    }
    int64_t out = w->shape[0], in = w->shape[1];
    if (x->ndim == 0) {
        tg_error("tg_linear",
                 "cannot apply a %s weight to a 0-d x\n"
                 "  rule: x is (..., in_features): at least one dim, the "
                 "last one of size in_features\n"
                 "  hint: one sample of %lld features is a (%lld,) tensor",
                 tg_shape_str(w, sw), (long long)in, (long long)in);
        return -1;
    }
    int64_t last = x->shape[x->ndim - 1];
    if (last != in) {
        bool swapped = last == out;
        tg_error("tg_linear",
                 "cannot apply a %s weight to x of shape %s\n"
                 "  rule: x.shape[-1] must equal weight.shape[1] "
                 "(in_features), but %lld != %lld\n"
                 "  hint: %s",
                 tg_shape_str(w, sw), tg_shape_str(x, sx), (long long)last,
                 (long long)in,
                 swapped ? "weight is (out_features, in_features); this one "
                           "looks transposed: tg_transpose(weight, 0, 1)"
                         : "the layer before must give weight.shape[1] "
                           "features");
        return -1;
    }
    if (b && (b->ndim != 1 || b->shape[0] != out)) {
        tg_error("tg_linear",
                 "bias of shape %s does not fit a %s weight\n"
                 "  rule: bias is (out_features,) = (%lld,)\n"
                 "  hint: pass NULL for no bias",
                 tg_shape_str(b, sb), tg_shape_str(w, sw), (long long)out);
        return -1;
    }
    if (dtype_check("weight", w, x) < 0)
        return -1;
    return b ? dtype_check("bias", b, x) : 0;
}
