/*
 * autograd/ops/matmul.c - matrix products with torch.matmul's rules.
 *
 * Forward only so far. Shapes, as torch.matmul:
 *   (k,)      @ (k,)      -> ()             dot product
 *   (m, k)    @ (k, n)    -> (m, n)
 *   (k,)      @ (..., k, n) -> (..., n)     a becomes (1, k); the 1 is removed
 *   (..., m, k) @ (k,)    -> (..., m)       b becomes (k, 1); the 1 is removed
 *   (..., m, k) @ (..., k, n) -> (..., m, n) batch dims broadcast (NumPy rules)
 * The dtype is promoted as for elementwise ops (float32 with float64 gives
 * float64; int64 with a float gives the float). PyTorch instead requires
 * equal dtypes. int64 products are exact, wrapping modulo 2^64.
 *
 * Accumulation: float32 and float64 products are summed in double and
 * rounded to the output dtype once, so a float32 result is the correctly
 * rounded value of a sum whose error is far below a float32 ulp.
 *
 * Two kernels compute the same thing:
 *   matmul_naive_*: the plain triple loop over strided operands, obviously
 *     correct; the reference the tests compare the fast kernel against.
 *   matmul_ikj_*: the kernel tg_matmul uses, on contiguous copies, in
 *     i-k-j order: row i of the output is built as sum_p a[i,p] * b[p,:],
 *     so the inner loop streams through one row of b and one row of an
 *     accumulator, both contiguous (the naive j-inner-k order jumps n
 *     elements through b at every step).
 * This file is not a BLAS: no blocking, no threads.
 */
#include "../../tensor/internal.h"
#include "../ops.h"

#include <stdlib.h>
#include <string.h>

/* tg_matmul computed with the naive kernel on the strided operands (no
 * contiguous copy unless a dtype conversion is needed). For tests and
 * teaching: same arguments, checks and result as tg_matmul. New
 * reference. */
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
    const char *hint = (!fix_b && fix_a)
                           ? "\n  hint: did you mean "
                             "tg_matmul(tg_transpose(a, -1, -2), b)?"
                       : b->ndim >= 2 ? "\n  hint: did you mean "
                                        "tg_matmul(a, tg_transpose(b, -1, "
                                        "-2))?"
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
 * (unsigned, so that overflow wraps instead of being undefined). */
#define TG_MATMUL_KERNELS(sfx, T, ACC)                                      \
    /* The reference: any strides (sa_* for a, sb_* for b), p innermost. */ \
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
    }                                                                       \
    /* The fast one: a and b row-major (lda k, ldb n); acc holds n          \
     * partial sums of one output row. For each (i, j) the products are     \
     * added in the same p order as above, so both agree bit for bit. */    \
    static void matmul_ikj_##sfx(const T *a, const T *b, T *c, int64_t m,   \
                                 int64_t k, int64_t n, ACC *acc)            \
    {                                                                       \
        for (int64_t i = 0; i < m; i++) {                                   \
            for (int64_t j = 0; j < n; j++)                                 \
                acc[j] = 0;                                                 \
            for (int64_t p = 0; p < k; p++) {                               \
                const ACC aip = (ACC)a[i * k + p];                          \
                const T *brow = b + p * n;                                  \
                for (int64_t j = 0; j < n; j++)                             \
                    acc[j] += aip * (ACC)brow[j];                           \
            }                                                               \
            for (int64_t j = 0; j < n; j++)                                 \
                c[i * n + j] = (T)acc[j];                                   \
        }                                                                   \
    }

TG_MATMUL_KERNELS(f32, float, double)
TG_MATMUL_KERNELS(f64, double, double)
TG_MATMUL_KERNELS(i64, int64_t, uint64_t)

/* Runs one kernel over every block. va, vb come from as_blocks; out is
 * contiguous (nblocks, m, n) whatever its final shape. With naive false, va
 * and vb must be contiguous in their last two dims. */
static int matmul_run(const tg_tensor *va, const tg_tensor *vb,
                      tg_tensor *out, const matmul_dims *s, bool naive)
{
    int64_t m = s->m, k = s->k, n = s->n;
    /* n + 1: malloc(0) may return NULL. 8 bytes fit double and uint64_t. */
    void *acc = naive ? NULL : malloc(sizeof(double) * (size_t)(n + 1));
    if (!naive && !acc) {
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
#define TG_MATMUL_CASE(DT, sfx, T, ACC)                                     \
        case DT: {                                                          \
            const T *pa = (const T *)tg_base_ptr(va) + oa;                  \
            const T *pb = (const T *)tg_base_ptr(vb) + ob;                  \
            T *pc = (T *)tg_base_ptr(out) + oc;                             \
            if (naive)                                                      \
                matmul_naive_##sfx(pa, sa_i, sa_p, pb, sb_p, sb_j, pc, m,   \
                                   k, n);                                   \
            else                                                            \
                matmul_ikj_##sfx(pa, pb, pc, m, k, n, (ACC *)acc);          \
            break;                                                          \
        }
            TG_MATMUL_CASE(TG_FLOAT32, f32, float, double)
            TG_MATMUL_CASE(TG_FLOAT64, f64, double, double)
            TG_MATMUL_CASE(TG_INT64, i64, int64_t, uint64_t)
#undef TG_MATMUL_CASE
        }
    }
    free(acc);
    return 0;
}

/* -------------------------------------------------------------- the op */

/* The converted operand: for the fast kernel always a contiguous copy (x
 * itself when it already is one); for the naive kernel x as it is, unless
 * its dtype must change. New reference.
 *
 * A batch dim of stride 0 (x was expanded) repeats one block: it is copied
 * as size 1, and as_blocks broadcasts it again, so an expanded operand
 * costs one block of memory, not the whole batch. */
static tg_tensor *operand(const tg_tensor *x, tg_dtype dtype, bool naive)
{
    if (naive && x->dtype == dtype)
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

static tg_tensor *matmul(const tg_tensor *a, const tg_tensor *b, bool naive)
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

/* out = a @ b, with the shapes listed at the top of this file */
tg_tensor *tg_matmul(const tg_tensor *a, const tg_tensor *b)
{
    return matmul(a, b, false);
}

tg_tensor *tg_matmul_reference(const tg_tensor *a, const tg_tensor *b)
{
    return matmul(a, b, true);
}
