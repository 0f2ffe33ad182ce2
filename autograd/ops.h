/*
 * autograd/ops.h - the operations a user calls on tensors: views,
 * elementwise maths with broadcasting, reductions, softmax and matmul.
 *
 * Each op lives in one file of autograd/ops/ with its forward, its math and
 * (as the tape grows) its backward. Semantics follow PyTorch: same shapes,
 * same broadcasting, same type promotion, same numbers within the stated
 * tolerances.
 *
 * Ownership: every op returns a NEW reference; arguments are BORROWED. A
 * NULL argument returns NULL without a new error, so chains fail once.
 * Dims may be negative (counted from the end).
 */
#ifndef TG_AUTOGRAD_OPS_H
#define TG_AUTOGRAD_OPS_H

#include "../tensor/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------ views */
/* These share storage with x (no copy) unless said otherwise. */

/* As torch.reshape: a view when the strides allow it, else a copy. One size
 * may be -1 (inferred). */
tg_tensor *tg_reshape(const tg_tensor *x, const int64_t *shape, int ndim);
/* As Tensor.view: always a view; an error when the strides forbid it. */
tg_tensor *tg_view(const tg_tensor *x, const int64_t *shape, int ndim);
/* dims is a permutation of 0..ndim-1. */
tg_tensor *tg_permute(const tg_tensor *x, const int *dims, int ndims);
tg_tensor *tg_transpose(const tg_tensor *x, int dim0, int dim1);
/* Removes dim if its size is 1 (else returns a view of x unchanged, as
 * PyTorch); tg_squeeze_all removes every size-1 dim. */
tg_tensor *tg_squeeze(const tg_tensor *x, int dim);
tg_tensor *tg_squeeze_all(const tg_tensor *x);
/* Inserts a size-1 dim at position dim (in [-ndim-1, ndim]). */
tg_tensor *tg_unsqueeze(const tg_tensor *x, int dim);
/* As Tensor.expand: size-1 dims grow (stride 0), -1 keeps a size, new dims
 * may be prepended. */
tg_tensor *tg_expand(const tg_tensor *x, const int64_t *shape, int ndim);
/* As torch.broadcast_to (no -1). */
tg_tensor *tg_broadcast_to(const tg_tensor *x, const int64_t *shape,
                           int ndim);
/* Elements start .. start+length-1 of dim. */
tg_tensor *tg_narrow(const tg_tensor *x, int dim, int64_t start,
                     int64_t length);
/* As x[..., start:end:step, ...] on dim; start/end are clamped like Python
 * slices and may be negative; step >= 1. */
tg_tensor *tg_slice(const tg_tensor *x, int dim, int64_t start, int64_t end,
                    int64_t step);
/* As x.select(dim, index): removes dim. */
tg_tensor *tg_select(const tg_tensor *x, int dim, int64_t index);
/* Copies: a contiguous tensor (x itself retained if it already is), an
 * always-fresh copy, and a dtype conversion (x retained if same dtype). */
tg_tensor *tg_contiguous(const tg_tensor *x);
tg_tensor *tg_clone(const tg_tensor *x);
tg_tensor *tg_to_dtype(const tg_tensor *x, tg_dtype dtype);

/* ------------------------------------------------------------ elementwise */
/* Binary ops broadcast (NumPy rules) and promote types as PyTorch:
 * float32 with float64 gives float64, int64 with float gives the float; a
 * 0-d tensor only decides the type when it is of a higher kind (float next
 * to int). The _scalar forms take a C double like a Python number: it keeps
 * a float tensor's dtype. */

tg_tensor *tg_add(const tg_tensor *a, const tg_tensor *b);
tg_tensor *tg_sub(const tg_tensor *a, const tg_tensor *b);
tg_tensor *tg_mul(const tg_tensor *a, const tg_tensor *b);
tg_tensor *tg_div(const tg_tensor *a, const tg_tensor *b); // true division
/* a ** b; for int64 a negative exponent is an error (as PyTorch). */
tg_tensor *tg_pow(const tg_tensor *a, const tg_tensor *b);
tg_tensor *tg_maximum(const tg_tensor *a, const tg_tensor *b); // NaN wins
tg_tensor *tg_minimum(const tg_tensor *a, const tg_tensor *b);

tg_tensor *tg_add_scalar(const tg_tensor *a, double s);
tg_tensor *tg_sub_scalar(const tg_tensor *a, double s);
tg_tensor *tg_rsub_scalar(const tg_tensor *a, double s); // s - a
tg_tensor *tg_mul_scalar(const tg_tensor *a, double s);
tg_tensor *tg_div_scalar(const tg_tensor *a, double s);
tg_tensor *tg_pow_scalar(const tg_tensor *a, double exponent);

tg_tensor *tg_neg(const tg_tensor *x);
tg_tensor *tg_exp(const tg_tensor *x);
tg_tensor *tg_log(const tg_tensor *x);
tg_tensor *tg_sqrt(const tg_tensor *x);
tg_tensor *tg_rsqrt(const tg_tensor *x); // 1 / sqrt(x)
tg_tensor *tg_abs(const tg_tensor *x);
tg_tensor *tg_tanh(const tg_tensor *x);
tg_tensor *tg_sigmoid(const tg_tensor *x);
tg_tensor *tg_relu(const tg_tensor *x);

typedef enum tg_gelu_approx {
    TG_GELU_EXACT = 0, // x * Phi(x) with erf, torch's approximate='none'
    TG_GELU_TANH = 1,  // the tanh form, torch's approximate='tanh'
} tg_gelu_approx;
tg_tensor *tg_gelu(const tg_tensor *x, tg_gelu_approx approx);

/* Comparisons give int64 0/1 tensors (tapegrad has no bool dtype). */
tg_tensor *tg_eq(const tg_tensor *a, const tg_tensor *b);
tg_tensor *tg_ne(const tg_tensor *a, const tg_tensor *b);
tg_tensor *tg_lt(const tg_tensor *a, const tg_tensor *b);
tg_tensor *tg_le(const tg_tensor *a, const tg_tensor *b);
tg_tensor *tg_gt(const tg_tensor *a, const tg_tensor *b);
tg_tensor *tg_ge(const tg_tensor *a, const tg_tensor *b);
tg_tensor *tg_eq_scalar(const tg_tensor *a, double s);
tg_tensor *tg_ne_scalar(const tg_tensor *a, double s);
tg_tensor *tg_lt_scalar(const tg_tensor *a, double s);
tg_tensor *tg_le_scalar(const tg_tensor *a, double s);
tg_tensor *tg_gt_scalar(const tg_tensor *a, double s);
tg_tensor *tg_ge_scalar(const tg_tensor *a, double s);

/* cond ? a : b elementwise, all three broadcast; cond is any dtype,
 * nonzero meaning true. */
tg_tensor *tg_where(const tg_tensor *cond, const tg_tensor *a,
                    const tg_tensor *b);
/* min(max(x, lo), hi); pass -INFINITY / INFINITY to leave a side open.
 * NaN stays NaN; lo > hi gives hi. A NaN bound is an error. An int64 x
 * stays int64 when both bounds are whole numbers or infinite; a fractional
 * bound gives float32. */
tg_tensor *tg_clamp(const tg_tensor *x, double lo, double hi);

/* ------------------------------------------------------------- reductions */
/* dims lists the dims to reduce (each once, negative allowed); dims NULL or
 * ndims 0 reduces every dim. keepdim keeps them with size 1. float32 sums
 * accumulate in double. */

tg_tensor *tg_sum(const tg_tensor *x, const int *dims, int ndims,
                  bool keepdim);
tg_tensor *tg_mean(const tg_tensor *x, const int *dims, int ndims,
                   bool keepdim);
/* sum((x - mean)^2) / max(0, N - correction); correction 1 is PyTorch's
 * default (unbiased). N - correction <= 0 gives NaN or inf as PyTorch. */
tg_tensor *tg_var(const tg_tensor *x, const int *dims, int ndims,
                  int64_t correction, bool keepdim);
tg_tensor *tg_std(const tg_tensor *x, const int *dims, int ndims,
                  int64_t correction, bool keepdim);
/* As torch.amax / amin (NaN propagates). */
tg_tensor *tg_max(const tg_tensor *x, const int *dims, int ndims,
                  bool keepdim);
tg_tensor *tg_min(const tg_tensor *x, const int *dims, int ndims,
                  bool keepdim);
/* Index of the first maximum along dim, int64; as torch.argmax(x, dim). */
tg_tensor *tg_argmax(const tg_tensor *x, int dim, bool keepdim);
tg_tensor *tg_argmin(const tg_tensor *x, int dim, bool keepdim);

/* Numerically stable (the max is subtracted first). */
tg_tensor *tg_softmax(const tg_tensor *x, int dim);
tg_tensor *tg_log_softmax(const tg_tensor *x, int dim);

/* ----------------------------------------------------------------- matmul */

/* As torch.matmul: 1-D @ 1-D is a dot product (0-d); 2-D @ 2-D is a matrix
 * product; a 1-D operand gains then loses a dim; batch dims broadcast. */
tg_tensor *tg_matmul(const tg_tensor *a, const tg_tensor *b);

#ifdef __cplusplus
}
#endif

#endif
