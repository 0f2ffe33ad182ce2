/*
 * autograd/ops/matmul.c - matrix products with torch.matmul's rules,
 * forward and backward.
 *
 * Shapes, as torch.matmul:
 *   (k,)      @ (k,)      -> ()             dot product
 *   (m, k)    @ (k, n)    -> (m, n)
 *   (k,)      @ (..., k, n) -> (..., n)     a becomes (1, k); the 1 is removed
 *   (..., m, k) @ (k,)    -> (..., m)       b becomes (k, 1); the 1 is removed
 *   (..., m, k) @ (..., k, n) -> (..., m, n) batch dims broadcast (NumPy rules)
 * The dtype is promoted as for elementwise ops (float32 with float64 gives
 * float64; int64 with a float gives the float). PyTorch instead requires
 * equal dtypes. int64 products are exact, wrapping modulo 2^64.
 *
 * The kernels:
 *   matmul_naive_*: the plain triple loop over strided operands, obviously
 *     correct; the reference the tests compare the fast kernels against,
 *     and what tg_matmul runs with TG_KERNELS_REFERENCE. It sums float32
 *     and float64 products in double and rounds once, so a float32 result
 *     is the correctly rounded value of a sum whose error is far below a
 *     float32 ulp.
 *   the fast kernels, for float32 and float64 (autograd/ops/gemm.c): a
 *     blocked, register-tiled, threaded C kernel, or OpenBLAS's sgemm and
 *     dgemm in a build with it. They read the operands through their
 *     strides (a transposed view is not copied) and, as BLAS and PyTorch
 *     do, accumulate in the operands' type. float64 agrees with the
 *     reference bit for bit on the C kernels; a float32 output may differ
 *     from it by up to (k + 2) * 2^-24 * (|a| @ |b|)[i, j], the error
 *     bound of a k-term float32 sum (gemm.c says why), on the C kernels
 *     and on OpenBLAS alike. The C kernels' results do not depend on the
 *     thread count.
 *   matmul_ikj_i64: int64, exact, on contiguous copies in i-k-j order:
 *     row i of the output is built as sum_p a[i,p] * b[p,:], so the inner
 *     loop streams through one row of b and one row of sums.
 *
 * Backward (matmul_backward, next to the op): da = g @ b^T, db = a^T @ g
 * on the operands with their 1-D promotions made, then summed over the
 * batch dims broadcasting added and reshaped back. One node per call; its
 * grad_fn name is the product PyTorch 1.13 runs for the case (see
 * recorded_op; PyTorch wraps some of them in view nodes of its own).
 */
#include "../internal.h"
#include "gemm.h"

#include <stdlib.h>
#include <string.h>

/* tg_matmul computed with the naive kernel on the strided operands (no
 * contiguous copy unless a dtype conversion is needed). For tests and
 * teaching: same arguments and checks as tg_matmul; the result is
 * tg_matmul's with TG_KERNELS_REFERENCE. New reference. */
tg_tensor *tg_matmul_reference(const tg_tensor *a, const tg_tensor *b);

/* --------------------------------------------------------------- shapes */

/* The product as a batch of (m, k) @ (k, n) blocks. */
typedef struct matmul_dims {
    int nbatch;
    int64_t batch[TG_MAX_DIMS];     // (nbatch,) broadcast batch dims
    int64_t nblocks;                // prod(batch); 0 for an empty result
    int64_t m, k, n;
    int64_t out_shape[TG_MAX_DIMS]; // batch, then m unless a is 1-D, then
    int out_ndim;                   // n unless b is 1-D
} matmul_dims;

/* The mismatch message of STYLE.md, with the hint that most likely fixes it:
 * transposing b when that makes the shapes fit (the usual x @ W.T), else
 * transposing a when that does, else transposing b as a first guess. */
static void mismatch_error(const tg_tensor *a, const tg_tensor *b,
                           int64_t ka, int64_t kb)
{
    char sa[TG_SHAPE_STR_MAX], sb[TG_SHAPE_STR_MAX];
    const char *rule = b->ndim == 1 ? "a.shape[-1] must equal b.shape[0] "
                                      "(b is a vector)"
                                    : "a.shape[-1] must equal b.shape[-2]";
    bool fix_b = b->ndim >= 2 && b->shape[b->ndim - 1] == ka;
    bool fix_a = a->ndim >= 2 && a->shape[a->ndim - 2] == kb;
    /* Suggest a transpose only where it would make the sizes agree. The
     * transpose is a new reference: the hint names it, so that it can be
     * released (tg_matmul(a, tg_transpose(b, -1, -2)) would leak it). */
    const char *hint = fix_b ? "\n  hint: transpose b first: "
                               "bt = tg_transpose(b, -1, -2); "
                               "y = tg_matmul(a, bt); tg_release(bt);"
                       : fix_a ? "\n  hint: transpose a first: "
                                 "at = tg_transpose(a, -1, -2); "
                                 "y = tg_matmul(at, b); tg_release(at);"
                       : b->ndim >= 2
                           ? "\n  hint: (n, k) @ (k, m) gives (n, m); "
                             "check which dims of a and b should be the "
                             "shared k"
                           : "";
    tg_error("tg_matmul",
             "cannot multiply %s by %s\n"
             "  rule: %s, but %lld != %lld%s",
             tg_shape_str(a, sa), tg_shape_str(b, sb), rule, (long long)ka,
             (long long)kb, hint);
}

/* Checks the operands and works out the shapes. 0 or -1 with an error. */
static int matmul_dims_make(const tg_tensor *a, const tg_tensor *b,
                            matmul_dims *s)
{
    char sa[TG_SHAPE_STR_MAX], sb[TG_SHAPE_STR_MAX];
    memset(s, 0, sizeof *s);
    if (a->ndim == 0 || b->ndim == 0) {
        tg_error("tg_matmul",
                 "cannot multiply %s by %s\n"
                 "  rule: both operands need at least 1 dim, but %s is 0-d\n"
                 "  hint: to scale by a scalar use tg_mul(a, b)",
                 tg_shape_str(a, sa), tg_shape_str(b, sb),
                 a->ndim == 0 && b->ndim == 0 ? "each"
                 : a->ndim == 0               ? "a"
                                              : "b");
        return -1;
    }
    int64_t ka = a->shape[a->ndim - 1];
    int64_t kb = b->ndim == 1 ? b->shape[0] : b->shape[b->ndim - 2];
    if (ka != kb) {
        mismatch_error(a, b, ka, kb);
        return -1;
    }
    s->m = a->ndim == 1 ? 1 : a->shape[a->ndim - 2];
    s->k = ka;
    s->n = b->ndim == 1 ? 1 : b->shape[b->ndim - 1];
    /* Batch dims: all but the last two, aligned from the right. */
    int na = a->ndim > 2 ? a->ndim - 2 : 0, nb = b->ndim > 2 ? b->ndim - 2 : 0;
    s->nbatch = na > nb ? na : nb;
    for (int i = 0; i < s->nbatch; i++) {
        int64_t da = i < na ? a->shape[na - 1 - i] : 1;
        int64_t db = i < nb ? b->shape[nb - 1 - i] : 1;
        if (da != db && da != 1 && db != 1) {
            char ba[TG_SHAPE_STR_MAX], bb[TG_SHAPE_STR_MAX];
            tg_error("tg_matmul",
                     "cannot multiply %s by %s\n"
                     "  rule: the batch dims (all but the last two) must "
                     "broadcast, but %s and %s differ at dim %d from the "
                     "end of the batch (%lld != %lld)\n"
                     "  hint: use tg_unsqueeze to add size-1 batch dims "
                     "where they should line up",
                     tg_shape_str(a, sa), tg_shape_str(b, sb),
                     tg_shape_format(a->shape, na, ba),
                     tg_shape_format(b->shape, nb, bb), -(i + 1),
                     (long long)da, (long long)db);
            return -1;
        }
        s->batch[s->nbatch - 1 - i] = da == 1 ? db : da;
    }
    for (int i = 0; i < s->nbatch; i++)
        s->out_shape[s->out_ndim++] = s->batch[i];
    if (a->ndim >= 2)
        s->out_shape[s->out_ndim++] = s->m;
    if (b->ndim >= 2)
        s->out_shape[s->out_ndim++] = s->n;
    /* (n, 1) @ (1, n) can be far larger than its operands, and broadcast
     * batch dims multiply: check the result's size before using it. */
    int64_t numel = tg_shape_check("tg_matmul", s->out_shape, s->out_ndim);
    if (numel < 0)
        return -1;
    /* With no outputs there is no block to compute (and the batch product
     * alone, unchecked when m or n is 0, could overflow). */
    s->nblocks = numel == 0 ? 0 : numel / (s->m * s->n);
    return 0;
}

/* x as a (batch..., rows, cols) view: a 1-D a becomes (1, k), a 1-D b
 * becomes (k, 1) (the stride of the new dim never matters: its only index
 * is 0); batch dims x lacks or has as 1 get stride 0, so one block of x is
 * reused for every batch index. New reference. */
static tg_tensor *as_blocks(const tg_tensor *x, const matmul_dims *s,
                            bool is_a)
{
    int64_t shape[TG_MAX_DIMS], strides[TG_MAX_DIMS];
    int nb = s->nbatch, xb = x->ndim > 2 ? x->ndim - 2 : 0;
    for (int i = 0; i < nb; i++) {
        int xi = i - (nb - xb); // the same dim in x, if x has it
        shape[i] = s->batch[i];
        strides[i] = (xi < 0 || x->shape[xi] == 1) ? 0 : x->strides[xi];
    }
    int64_t last = x->strides[x->ndim - 1];
    shape[nb] = is_a ? s->m : s->k;
    shape[nb + 1] = is_a ? s->k : s->n;
    if (x->ndim == 1) {
        strides[nb] = is_a ? 0 : last;
        strides[nb + 1] = is_a ? last : 0;
    } else {
        strides[nb] = x->strides[x->ndim - 2];
        strides[nb + 1] = last;
    }
    return tg_view_make(x, shape, strides, nb + 2, x->offset);
}

/* Element offset of block `block` (a flat index over the batch dims) in a
 * view made by as_blocks. */
static int64_t block_offset(const tg_tensor *v, const matmul_dims *s,
                            int64_t block)
{
    int64_t off = 0;
    for (int i = s->nbatch - 1; i >= 0; i--) {
        off += (block % s->batch[i]) * v->strides[i];
        block /= s->batch[i];
    }
    return off;
}

/* -------------------------------------------------------------- kernels */

/* c (m, n), contiguous = a (m, k) @ b (k, n), one block.
 *   c[i, j] = sum_p a[i, p] * b[p, j]
 * ACC is the accumulator: double for the float dtypes, uint64_t for int64
 * (unsigned, so that overflow wraps instead of being undefined).
 * The reference: any strides (sa_* for a, sb_* for b), p innermost. */
#define TG_MATMUL_NAIVE(sfx, T, ACC)                                        \
    static void matmul_naive_##sfx(const T *a, int64_t sa_i, int64_t sa_p, \
                                   const T *b, int64_t sb_p, int64_t sb_j, \
                                   T *c, int64_t m, int64_t k, int64_t n)   \
    {                                                                       \
        for (int64_t i = 0; i < m; i++)                                     \
            for (int64_t j = 0; j < n; j++) {                               \
                ACC sum = 0;                                                \
                for (int64_t p = 0; p < k; p++)                             \
                    sum += (ACC)a[i * sa_i + p * sa_p] *                    \
                           (ACC)b[p * sb_p + j * sb_j];                     \
                c[i * n + j] = (T)sum;                                      \
            }                                                               \
    }

TG_MATMUL_NAIVE(f32, float, double)
TG_MATMUL_NAIVE(f64, double, double)
TG_MATMUL_NAIVE(i64, int64_t, uint64_t)

/* The fast int64 kernel: a and b row-major (lda k, ldb n); acc holds n
 * partial sums of one output row, added in the same p order as the
 * reference (exact either way: integer sums wrap, they do not round). */
static void matmul_ikj_i64(const int64_t *a, const int64_t *b, int64_t *c,
                           int64_t m, int64_t k, int64_t n, uint64_t *acc)
{
    for (int64_t i = 0; i < m; i++) {
        for (int64_t j = 0; j < n; j++)
            acc[j] = 0;
        for (int64_t p = 0; p < k; p++) {
            const uint64_t aip = (uint64_t)a[i * k + p];
            const int64_t *brow = b + p * n;
            for (int64_t j = 0; j < n; j++)
                acc[j] += aip * (uint64_t)brow[j];
        }
        for (int64_t j = 0; j < n; j++)
            c[i * n + j] = (int64_t)acc[j];
    }
}

/* Runs one kernel over every block. va, vb come from as_blocks; out is
 * contiguous (nblocks, m, n) whatever its final shape. With naive false,
 * an int64 va and vb must be contiguous in their last two dims (the float
 * kernels take any strides). */
static int matmul_run(const tg_tensor *va, const tg_tensor *vb,
                      tg_tensor *out, const matmul_dims *s, bool naive)
{
    int64_t m = s->m, k = s->k, n = s->n;
    bool ikj = !naive && out->dtype == TG_INT64;
    /* n + 1: malloc(0) may return NULL. */
    uint64_t *acc = ikj ? tg_malloc(sizeof(uint64_t) * (size_t)(n + 1))
                        : NULL;
    if (ikj && !acc) {
        tg_error("tg_matmul", "out of memory for a row of %lld sums",
                 (long long)n);
        return -1;
    }
    int nb = s->nbatch;
    int64_t sa_i = va->strides[nb], sa_p = va->strides[nb + 1];
    int64_t sb_p = vb->strides[nb], sb_j = vb->strides[nb + 1];
    for (int64_t blk = 0; blk < s->nblocks; blk++) {
        int64_t oa = block_offset(va, s, blk), ob = block_offset(vb, s, blk);
        int64_t oc = blk * m * n;
        switch (out->dtype) {
#define TG_MATMUL_CASE(DT, sfx, T, FAST)                                    \
        case DT: {                                                          \
            const T *pa = (const T *)tg_base_ptr(va) + oa;                  \
            const T *pb = (const T *)tg_base_ptr(vb) + ob;                  \
            T *pc = (T *)tg_base_ptr(out) + oc;                             \
            if (naive)                                                      \
                matmul_naive_##sfx(pa, sa_i, sa_p, pb, sb_p, sb_j, pc, m,   \
                                   k, n);                                   \
            else                                                            \
                FAST;                                                       \
            break;                                                          \
        }
            TG_MATMUL_CASE(TG_FLOAT32, f32, float,
                           tg_gemm_f32(pa, sa_i, sa_p, pb, sb_p, sb_j, pc, m,
                                       k, n))
            TG_MATMUL_CASE(TG_FLOAT64, f64, double,
                           tg_gemm_f64(pa, sa_i, sa_p, pb, sb_p, sb_j, pc, m,
                                       k, n))
            TG_MATMUL_CASE(TG_INT64, i64, int64_t,
                           matmul_ikj_i64(pa, pb, pc, m, k, n, acc))
#undef TG_MATMUL_CASE
        }
    }
    free(acc);
    return 0;
}

/* -------------------------------------------------------------- the op */

/* The converted operand: for the int64 fast kernel always a contiguous
 * copy (x itself when it already is one); for the others x as it is,
 * unless its dtype must change. New reference.
 *
 * A batch dim of stride 0 (x was expanded) repeats one block: it is copied
 * as size 1, and as_blocks broadcasts it again, so an expanded operand
 * costs one block of memory, not the whole batch. */
static tg_tensor *operand(const tg_tensor *x, tg_dtype dtype, bool naive)
{
    if ((naive || dtype != TG_INT64) && x->dtype == dtype)
        return tg_retain((tg_tensor *)x);
    int64_t shape[TG_MAX_DIMS];
    for (int d = 0; d < x->ndim; d++)
        shape[d] = d < x->ndim - 2 && x->strides[d] == 0 && x->shape[d] > 1
                       ? 1
                       : x->shape[d];
    tg_tensor *once = tg_view_make(x, shape, x->strides, x->ndim, x->offset);
    tg_tensor *c = once ? tg_contiguous_as(once, dtype) : NULL;
    tg_release(once);
    return c;
}

/* out = a @ b without the tape. */
static tg_tensor *product(const tg_tensor *a, const tg_tensor *b, bool naive)
{
    if (!a || !b)
        return NULL;
    matmul_dims s;
    if (matmul_dims_make(a, b, &s) < 0)
        return NULL;
    tg_dtype dtype = tg_result_type(a, b);
    if (s.nblocks == 0) // nothing to compute: an empty result
        return tg_alloc(s.out_shape, s.out_ndim, dtype);
    tg_tensor *ca = operand(a, dtype, naive);
    tg_tensor *cb = ca ? operand(b, dtype, naive) : NULL;
    tg_tensor *va = cb ? as_blocks(ca, &s, true) : NULL;
    tg_tensor *vb = va ? as_blocks(cb, &s, false) : NULL;
    tg_tensor *out = vb ? tg_alloc(s.out_shape, s.out_ndim, dtype) : NULL;
    if (out && matmul_run(va, vb, out, &s, naive) < 0) {
        tg_release(out);
        out = NULL;
    }
    tg_release(vb);
    tg_release(va);
    tg_release(cb);
    tg_release(ca);
    return out;
}

/* ------------------------------------------------------------ backward */

/* Which operands were 1-D, and where backward finds them. */
typedef struct matmul_ctx {
    bool a_vector, b_vector;  // (k,) operands, promoted to (1, k) / (k, 1)
    int a_saved, b_saved;     // tg_node_saved indices, -1 if not saved
} matmul_ctx;

/* x with its 1-D promotion made: (k,) becomes (1, k) for a, (k, 1) for b
 * (a view); other operands retained. New reference. */
static tg_tensor *promoted(const tg_tensor *x, bool is_a)
{
    if (x->ndim != 1)
        return tg_retain((tg_tensor *)x);
    return tg_unsqueeze(x, is_a ? 0 : 1);
}

/* full (batch..., rows, cols) summed over the batch dims input i lacks or
 * had as 1, then reshaped to input i's shape (which drops a promoted 1).
 * New reference. */
static tg_tensor *to_input(const tg_node *node, const tg_tensor *full, int i,
                           bool vector)
{
    int ndim;
    const int64_t *shape = tg_node_input_shape(node, i, &ndim);
    int64_t pshape[2]; // the promoted shape of a 1-D operand
    pshape[0] = i == 0 ? 1 : shape[0];
    pshape[1] = i == 0 ? shape[0] : 1;
    tg_tensor *summed = vector ? tg_sum_to_shape(full, pshape, 2)
                               : tg_sum_to_shape(full, shape, ndim);
    tg_tensor *r = tg_reshape(summed, shape, ndim);
    tg_release(summed);
    return r;
}

/* forward: out = a @ b, per block c[i, j] = sum_p a[i, p] * b[p, j], so
 *   da = g @ b^T    (batch..., m, k)
 *   db = a^T @ g    (batch..., k, n)
 * with g given its promoted 1s back ((batch..., m, n)), a and b promoted
 * as in the forward, and each result summed over the batch dims its
 * operand was broadcast along. Saved: b when a needs a gradient, a when b
 * does. */
static int matmul_backward(tg_node *node, const tg_tensor *g,
                           tg_tensor **grads)
{
    const matmul_ctx *c = tg_node_ctx(node);
    tg_tensor *g_b = c->b_vector ? tg_unsqueeze(g, -1)
                                 : tg_retain((tg_tensor *)g);
    tg_tensor *gfull = c->a_vector ? tg_unsqueeze(g_b, -2)
                                   : tg_retain(g_b);
    tg_release(g_b);
    if (!gfull)
        return -1;
    if (tg_node_needs_grad(node, 0)) {
        tg_tensor *b = promoted(tg_node_saved(node, c->b_saved), false);
        tg_tensor *bt = tg_transpose(b, -1, -2);
        tg_tensor *da = tg_matmul(gfull, bt);
        grads[0] = to_input(node, da, 0, c->a_vector);
        tg_release(da);
        tg_release(bt);
        tg_release(b);
    }
    if (tg_node_needs_grad(node, 1)) {
        tg_tensor *a = promoted(tg_node_saved(node, c->a_saved), true);
        tg_tensor *at = tg_transpose(a, -1, -2);
        tg_tensor *db = tg_matmul(at, gfull);
        grads[1] = to_input(node, db, 1, c->b_vector);
        tg_release(db);
        tg_release(at);
        tg_release(a);
    }
    tg_release(gfull);
    return (tg_node_needs_grad(node, 0) && !grads[0]) ||
                   (tg_node_needs_grad(node, 1) && !grads[1])
               ? -1
               : 0;
}

/* PyTorch 1.13's grad_fn names, one per shape class. torch.matmul runs
 * one product and names the node after it:
 *   (k,) @ (k,)            DotBackward0
 *   (m, k) @ (k,)          MvBackward0
 *   (m, k) @ (k, n)        MmBackward0
 *   (k,) @ (k, n)          MmBackward0   (PyTorch: SqueezeBackward3 around it)
 *   batch dims on a or b   BmmBackward0  (PyTorch: UnsafeViewBackward0 or
 *                                         CloneBackward0 around a bmm, mm or
 *                                         mv of the folded batch)
 * tapegrad records a single node, named after the product. */
static const tg_op dot_op = {"DotBackward0", matmul_backward,
                             sizeof(matmul_ctx)};
static const tg_op mv_op = {"MvBackward0", matmul_backward,
                            sizeof(matmul_ctx)};
static const tg_op mm_op = {"MmBackward0", matmul_backward,
                            sizeof(matmul_ctx)};
static const tg_op bmm_op = {"BmmBackward0", matmul_backward,
                             sizeof(matmul_ctx)};

static const tg_op *recorded_op(const tg_tensor *a, const tg_tensor *b)
{
    if (a->ndim > 2 || b->ndim > 2)
        return &bmm_op;
    if (b->ndim == 2)
        return &mm_op;
    return a->ndim == 1 ? &dot_op : &mv_op;
}

/* ------------------------------------------------------- the public op */

/* The product, then one node on the tape when a or b needs a gradient. */
static tg_tensor *matmul(const tg_tensor *a, const tg_tensor *b, bool naive)
{
    tg_tensor *out = product(a, b, naive);
    if (!out)
        return NULL;
    tg_node *node = tg_record(recorded_op(a, b), &out, TG_INPUTS(a, b));
    if (node) {
        matmul_ctx *c = tg_node_ctx(node);
        c->a_vector = a->ndim == 1;
        c->b_vector = b->ndim == 1;
        c->a_saved = c->b_saved = -1;
        if (tg_node_needs_grad(node, 1))
            c->a_saved = tg_node_save(node, a); // a, for db = a^T @ g
        if (tg_node_needs_grad(node, 0))
            c->b_saved = tg_node_save(node, b); // b, for da = g @ b^T
    }
    return out;
}

/* out = a @ b, with the shapes listed at the top of this file */
tg_tensor *tg_matmul(const tg_tensor *a, const tg_tensor *b)
{
    tg_check_alive("tg_matmul", a);
    tg_check_alive("tg_matmul", b);
    tg_tensor *out = matmul(a, b, tg_use_reference_kernels());
    if (out)
        out->made_by = "tg_matmul";
    return out;
}

tg_tensor *tg_matmul_reference(const tg_tensor *a, const tg_tensor *b)
{
    return matmul(a, b, true);
}
