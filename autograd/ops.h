/*
 * autograd/ops.h - the operations a user calls on tensors: views,
 * elementwise maths with broadcasting, reductions, softmax, matmul,
 * LayerNorm and BatchNorm, the losses, joining and splitting (cat,
 * stack, split, chunk), and indexing by integer tensors.
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
 * may be -1 (inferred). New reference; arguments borrowed. */
tg_tensor *tg_reshape(const tg_tensor *x, const int64_t *shape, int ndim);
/* As Tensor.view: always a view; an error when the strides forbid it. New
 * reference; arguments borrowed. */
tg_tensor *tg_view(const tg_tensor *x, const int64_t *shape, int ndim);
/* As torch.permute: dims is a permutation of 0..ndim-1. New reference;
 * arguments borrowed. */
tg_tensor *tg_permute(const tg_tensor *x, const int *dims, int ndims);
/* Swaps dims dim0 and dim1, as torch.transpose. New reference; x
 * borrowed. */
tg_tensor *tg_transpose(const tg_tensor *x, int dim0, int dim1);
/* Removes dim if its size is 1 (else returns a view of x unchanged, as
 * PyTorch); tg_squeeze_all removes every size-1 dim. New references; x
 * borrowed. */
tg_tensor *tg_squeeze(const tg_tensor *x, int dim);
tg_tensor *tg_squeeze_all(const tg_tensor *x);
/* Inserts a size-1 dim at position dim (in [-ndim-1, ndim]). New
 * reference; x borrowed. */
tg_tensor *tg_unsqueeze(const tg_tensor *x, int dim);
/* As Tensor.expand: size-1 dims grow (stride 0), -1 keeps a size, new dims
 * may be prepended. New reference; arguments borrowed. */
tg_tensor *tg_expand(const tg_tensor *x, const int64_t *shape, int ndim);
/* As torch.broadcast_to (no -1). New reference; arguments borrowed. */
tg_tensor *tg_broadcast_to(const tg_tensor *x, const int64_t *shape,
                           int ndim);
/* Elements start .. start+length-1 of dim. New reference; x borrowed. */
tg_tensor *tg_narrow(const tg_tensor *x, int dim, int64_t start,
                     int64_t length);
/* As x[..., start:end:step, ...] on dim; start/end are clamped like Python
 * slices and may be negative; step >= 1. New reference; x borrowed. */
tg_tensor *tg_slice(const tg_tensor *x, int dim, int64_t start, int64_t end,
                    int64_t step);
/* As x.select(dim, index): removes dim. New reference; x borrowed. */
tg_tensor *tg_select(const tg_tensor *x, int dim, int64_t index);
/* Copies: a contiguous tensor (x itself retained if it already is), an
 * always-fresh copy, and a dtype conversion (x retained if same dtype).
 * New references (x itself, when retained, is one too); x borrowed. */
tg_tensor *tg_contiguous(const tg_tensor *x);
tg_tensor *tg_clone(const tg_tensor *x);
tg_tensor *tg_to_dtype(const tg_tensor *x, tg_dtype dtype);

/* ------------------------------------------------------------ elementwise */
/* Binary ops broadcast (NumPy rules) and promote types as PyTorch:
 * float32 with float64 gives float64, int64 with float gives the float; a
 * 0-d tensor only decides the type when it is of a higher kind (float next
 * to int). The _scalar forms take a C double like a Python number: it keeps
 * a float tensor's dtype. Every op here returns a new reference; arguments
 * are borrowed. */

/* a + b, a - b, a * b, a / b. New references; arguments borrowed. */
tg_tensor *tg_add(const tg_tensor *a, const tg_tensor *b);
tg_tensor *tg_sub(const tg_tensor *a, const tg_tensor *b);
tg_tensor *tg_mul(const tg_tensor *a, const tg_tensor *b);
tg_tensor *tg_div(const tg_tensor *a, const tg_tensor *b); // true division
/* a ** b; for int64 a negative exponent is an error (as PyTorch). New
 * reference; arguments borrowed. */
tg_tensor *tg_pow(const tg_tensor *a, const tg_tensor *b);
/* Elementwise max and min, as torch.maximum / minimum. New references;
 * arguments borrowed. */
tg_tensor *tg_maximum(const tg_tensor *a, const tg_tensor *b); // NaN wins
tg_tensor *tg_minimum(const tg_tensor *a, const tg_tensor *b);

/* a + s, a - s, s - a, a * s, a / s, s / a and a ** exponent: Python's
 * a + 2, a - 2, 2 - a (__rsub__), a * 2, a / 2, 2 / a (__rtruediv__) and
 * a ** 2. s / a is true division, so an int64 a gives float32 (as
 * 10 / torch.tensor([4]) does). New references; a borrowed. */
tg_tensor *tg_add_scalar(const tg_tensor *a, double s);
tg_tensor *tg_sub_scalar(const tg_tensor *a, double s);
tg_tensor *tg_rsub_scalar(const tg_tensor *a, double s); // s - a
tg_tensor *tg_mul_scalar(const tg_tensor *a, double s);
tg_tensor *tg_div_scalar(const tg_tensor *a, double s);
tg_tensor *tg_rdiv_scalar(const tg_tensor *a, double s); // s / a
tg_tensor *tg_pow_scalar(const tg_tensor *a, double exponent);

/* -x, exp, log, sqrt, 1 / sqrt, |x|, tanh, sigmoid and max(x, 0),
 * elementwise. New references; x borrowed. */
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
/* As torch.nn.functional.gelu(x, approximate). New reference; x borrowed. */
tg_tensor *tg_gelu(const tg_tensor *x, tg_gelu_approx approx);
/* x * sigmoid(x), as torch.nn.functional.silu (also called swish). New
 * reference. */
tg_tensor *tg_silu(const tg_tensor *x);

/* Comparisons give int64 0/1 tensors (tapegrad has no bool dtype). New
 * references; arguments borrowed. */
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
 * nonzero meaning true. New reference; arguments borrowed. */
tg_tensor *tg_where(const tg_tensor *cond, const tg_tensor *a,
                    const tg_tensor *b);
/* min(max(x, lo), hi); pass -INFINITY / INFINITY to leave a side open.
 * NaN stays NaN; lo > hi gives hi. A NaN bound is an error. An int64 x
 * stays int64 when both bounds are whole numbers or infinite; a fractional
 * bound gives float32. New reference; x borrowed. */
tg_tensor *tg_clamp(const tg_tensor *x, double lo, double hi);

/* ------------------------------------------------------------- reductions */
/* dims lists the dims to reduce (each once, negative allowed); dims NULL or
 * ndims 0 reduces every dim. keepdim keeps them with size 1. float32 sums
 * accumulate in double. */

/* Sum and mean over dims. New references; arguments borrowed. */
tg_tensor *tg_sum(const tg_tensor *x, const int *dims, int ndims,
                  bool keepdim);
tg_tensor *tg_mean(const tg_tensor *x, const int *dims, int ndims,
                   bool keepdim);
/* sum((x - mean)^2) / max(0, N - correction); correction 1 is PyTorch's
 * default (unbiased). N - correction <= 0 gives NaN or inf as PyTorch. New
 * references; arguments borrowed. */
tg_tensor *tg_var(const tg_tensor *x, const int *dims, int ndims,
                  int64_t correction, bool keepdim);
tg_tensor *tg_std(const tg_tensor *x, const int *dims, int ndims,
                  int64_t correction, bool keepdim);
/* As torch.amax / amin (NaN propagates). New references; arguments
 * borrowed. */
tg_tensor *tg_max(const tg_tensor *x, const int *dims, int ndims,
                  bool keepdim);
tg_tensor *tg_min(const tg_tensor *x, const int *dims, int ndims,
                  bool keepdim);
/* Index of the first maximum (minimum) along dim, int64; as
 * torch.argmax(x, dim). New references; x borrowed. */
tg_tensor *tg_argmax(const tg_tensor *x, int dim, bool keepdim);
tg_tensor *tg_argmin(const tg_tensor *x, int dim, bool keepdim);
/* The maximum (minimum) along dim together with where it is, as
 * torch.max(x, dim, keepdim) and torch.min(x, dim, keepdim), which return
 * (values, indices). Returns the values (x's dtype); when indices is not
 * NULL, *indices receives the int64 index of each along dim. The index is
 * tg_argmax's (tg_argmin's): the first maximum on a tie, the first NaN in
 * a row holding one (whose value is then NaN). The gradient (MaxBackward0,
 * MinBackward0) goes to the element at the returned index only; tg_max
 * (torch.amax) shares it among ties instead. The dim must not be empty.
 * Returns a new reference; *indices receives a new reference too; x
 * borrowed. */
tg_tensor *tg_max_dim(const tg_tensor *x, int dim, bool keepdim,
                      tg_tensor **indices);
tg_tensor *tg_min_dim(const tg_tensor *x, int dim, bool keepdim,
                      tg_tensor **indices);

/* torch.histogram(x, bins, density): counts of x's elements in `bins`
 * equal bins over [min(x), max(x)] (each bin [a, b) except the last,
 * which includes its right edge; a constant x spans [x - 0.5, x + 0.5]).
 * With density, count / (numel * bin width). Returns the float64 counts
 * (bins,) as a new reference; when edges is not NULL, *edges receives the
 * (bins + 1,) float64 edges, a new reference too. Not differentiable (no
 * node is recorded). x borrowed. */
tg_tensor *tg_histogram(const tg_tensor *x, int64_t bins, bool density,
                        tg_tensor **edges);

/* Numerically stable (the max is subtracted first). New references; x
 * borrowed. */
tg_tensor *tg_softmax(const tg_tensor *x, int dim);
tg_tensor *tg_log_softmax(const tg_tensor *x, int dim);

/* ----------------------------------------------------------------- matmul */

/* As torch.matmul: 1-D @ 1-D is a dot product (0-d); 2-D @ 2-D is a matrix
 * product; a 1-D operand gains then loses a dim; batch dims broadcast. New
 * reference; arguments borrowed. */
tg_tensor *tg_matmul(const tg_tensor *a, const tg_tensor *b);

/* y = x W^T + b in one node, as torch.nn.functional.linear (torch.addmm
 * for a 2-D x): x (..., in), weight (out, in) as PyTorch stores it, bias
 * (out,) or NULL for none; y is (..., out). x, weight and bias share one
 * float dtype. The node is AddmmBackward0 (MmBackward0 without a bias).
 * New reference; arguments borrowed. */
tg_tensor *tg_linear(const tg_tensor *x, const tg_tensor *weight,
                     const tg_tensor *bias);


/* ---------------------------------------------------------- normalisation */
/* docs/normalization.md derives both backwards step by step. Each op also
 * has a _composed form built from the primitive ops above (mean, sub, mul,
 * rsqrt, ...), which the tape differentiates: the plain reference that the
 * fused op is tested against, and the version to read first. The composed
 * forms take the same arguments and make the same checks; being plain,
 * they keep x - mean in x's dtype (less accurate in float32 when |mean| >>
 * std) and have no special case for a constant channel with eps 0. */

/* As torch.nn.functional.layer_norm. Each of the M leading positions of x
 * is one row of N = prod(normalized_shape) elements; the trailing
 * `ndim` dims of x must equal normalized_shape:
 *   mean = sum(row) / N
 *   var  = sum((row - mean)^2) / N                 (biased)
 *   rstd = 1 / sqrt(var + eps)
 *   y    = (row - mean) * rstd * weight + bias
 * weight and bias have shape normalized_shape and the dtype of x; either
 * may be NULL (no affine part). Statistics accumulate in double, two-pass.
 * Saves x, weight and the per-row mean and rstd; records
 * NativeLayerNormBackward0. eps >= 0 (PyTorch's default is 1e-5). New
 * reference; arguments borrowed. */
tg_tensor *tg_layer_norm(const tg_tensor *x, const int64_t *normalized_shape,
                         int ndim, const tg_tensor *weight,
                         const tg_tensor *bias, double eps);
/* The same, also giving the statistics as torch.native_layer_norm does:
 * *mean and *rstd (NEW references, when the pointers are not NULL) have
 * x's leading dims followed by `ndim` ones, and x's dtype. They carry no
 * gradient. Returns a new reference; other arguments borrowed. */
tg_tensor *tg_layer_norm_ex(const tg_tensor *x,
                            const int64_t *normalized_shape, int ndim,
                            const tg_tensor *weight, const tg_tensor *bias,
                            double eps, tg_tensor **mean, tg_tensor **rstd);
/* tg_layer_norm built from primitive ops (mean, sub, mul, rsqrt, ...). New
 * reference; arguments borrowed. */
tg_tensor *tg_layer_norm_composed(const tg_tensor *x,
                                  const int64_t *normalized_shape, int ndim,
                                  const tg_tensor *weight,
                                  const tg_tensor *bias, double eps);

/* A field left 0 means its default (autograd.h, "option structs"). */
typedef struct tg_batch_norm_options {
    /* false (default): training, normalise with this batch's statistics
     * and update the running ones; true: eval, normalise with the running
     * statistics (torch.nn.functional.batch_norm's training=False). */
    bool eval;
    /* running = (1 - momentum) * running + momentum * batch statistic, in
     * [0, 1]. 0: PyTorch's default 0.1 (TG_EXACT_ZERO: the running
     * statistics stay). PyTorch's momentum=None (a cumulative average) is
     * 1 / num_batches_tracked, which the modules compute. */
    double momentum;
    double eps; // inside the sqrt; 0: 1e-5 (TG_EXACT_ZERO: none)
    /* The variance used to normalise in training: sum((x - mean)^2) /
     * (n - correction). 0 (default) is PyTorch's biased variance; 1 is the
     * unbiased variance that makemore part 4 uses, whose backward has an
     * extra factor n / (n - 1). The running variance is always unbiased. */
    int64_t correction;
} tg_batch_norm_options;
/* training (eval false), momentum 0.1, eps 1e-5, correction 0: what a
 * zero-initialised struct and NULL mean. */
tg_batch_norm_options tg_batch_norm_defaults(void);

/* As torch.nn.functional.batch_norm(x, running_mean, running_var, weight,
 * bias, training, momentum, eps). x is (N, C), (N, C, L), (N, C, H, W) or
 * any (N, C, ...): channel is dim 1 and each channel's statistics run over
 * the n = numel / C values of every other dim:
 *   mean_c = sum(x_c) / n,  var_c = sum((x_c - mean_c)^2) / n   (biased)
 *   y      = (x - mean_c) / sqrt(var_c + eps) * weight_c + bias_c
 * and in training, in place (no gradient flows into them):
 *   running_mean = (1 - momentum) * running_mean + momentum * mean_c
 *   running_var  = (1 - momentum) * running_var
 *                  + momentum * var_c * n / (n - 1)          (unbiased)
 * In eval (training false) y uses running_mean and running_var instead.
 * running_mean and running_var are float tensors of shape (C,) that need
 * no gradient; both NULL means no running statistics (then training must
 * be true). weight and bias: (C,), x's dtype, or NULL. Training with n == 1
 * is an error, as in PyTorch. Records NativeBatchNormBackward0. New
 * reference; arguments borrowed (running_mean and running_var are updated
 * in place). */
tg_tensor *tg_batch_norm(const tg_tensor *x, tg_tensor *running_mean,
                         tg_tensor *running_var, const tg_tensor *weight,
                         const tg_tensor *bias, bool training,
                         double momentum, double eps);
/* The same with options (NULL: tg_batch_norm_defaults()), also giving the
 * statistics used to normalise: *mean and *invstd (NEW references when the
 * pointers are not NULL) of shape (C,) and x's dtype. In training they are
 * torch.native_batch_norm's save_mean and save_invstd; in eval they come
 * from the running statistics (where PyTorch returns empty tensors).
 * Returns a new reference; other arguments borrowed. */
tg_tensor *tg_batch_norm_ex(const tg_tensor *x, tg_tensor *running_mean,
                            tg_tensor *running_var, const tg_tensor *weight,
                            const tg_tensor *bias,
                            const tg_batch_norm_options *opts,
                            tg_tensor **mean, tg_tensor **invstd);
/* tg_batch_norm_ex built from primitive ops, step by step as makemore
 * part 4 writes it (bnmeani, bndiff, bndiff2, bnvar, bnvar_inv, bnraw).
 * New reference; arguments borrowed. */
tg_tensor *tg_batch_norm_composed(const tg_tensor *x,
                                  tg_tensor *running_mean,
                                  tg_tensor *running_var,
                                  const tg_tensor *weight,
                                  const tg_tensor *bias,
                                  const tg_batch_norm_options *opts);

/* ----------------------------------------------------------------- losses */
/* As torch.nn.functional's losses. Each is one op with its own backward,
 * except tg_cross_entropy, which is tg_log_softmax followed by
 * tg_nll_loss exactly as PyTorch composes it (grad_fn NllLossBackward0). */

/* How a loss turns its per-element values into the result: their mean
 * (PyTorch's default), their sum, or none (the values themselves). */
typedef enum tg_reduction {
    TG_REDUCTION_MEAN = 0,
    TG_REDUCTION_SUM = 1,
    TG_REDUCTION_NONE = 2,
} tg_reduction;

/* (input - target)^2, reduced. input and target have the same shape and
 * the same float dtype (F.mse_loss). 0-d for mean/sum. New reference;
 * arguments borrowed. */
tg_tensor *tg_mse_loss(const tg_tensor *input, const tg_tensor *target,
                       tg_reduction reduction);
/* The negative log-likelihood of class labels: -logp[i, labels[i]],
 * reduced (F.nll_loss). logp is (N, C) log-probabilities (or (C,) with a
 * 0-d label); labels is int64 (N,) with values in [0, C). The mean of an
 * empty batch is NaN, as PyTorch. New reference; arguments borrowed. */
tg_tensor *tg_nll_loss(const tg_tensor *logp, const tg_tensor *labels,
                       tg_reduction reduction);
/* Cross-entropy of logits (N, C) against int64 labels (N,), or of (C,)
 * logits against a 0-d label: nll_loss(log_softmax(logits, class dim),
 * labels), stable for any logit size. New reference; arguments borrowed. */
tg_tensor *tg_cross_entropy(const tg_tensor *logits, const tg_tensor *labels,
                            tg_reduction reduction);
/* Binary cross-entropy of logits against targets in [0, 1] of the same
 * shape and float dtype, computed without overflow as
 * max(x, 0) - x * t + log(1 + exp(-|x|))
 * (F.binary_cross_entropy_with_logits, no weights). As in PyTorch, targets
 * outside [0, 1] are not checked. New reference; arguments borrowed. */
tg_tensor *tg_binary_cross_entropy_with_logits(const tg_tensor *logits,
                                               const tg_tensor *targets,
                                               tg_reduction reduction);

/* ------------------------------------------------- joining and splitting */
/* cat and stack copy into a new tensor; the pieces of split and chunk are
 * views of x (no copy). Lists are arrays of n borrowed tensors; a NULL
 * entry returns NULL without a new error, as a NULL argument does. */

/* As torch.cat(tensors, dim): the tensors joined along an existing dim,
 * in order. They must have the same number of dims and the same sizes
 * except along dim; the result's dtype is the highest of theirs (int64 <
 * float32 < float64, as PyTorch promotes). PyTorch 1.13's legacy rule is
 * kept: a tensor of shape (0,) is left out whatever its dims (it still
 * takes part in the dtype), so an empty start is harmless. dim counts in
 * the dims of the first tensor that is not left out; when all are (0,),
 * dim must be 0 or -1 (PyTorch accepts any dim there). 0-d tensors are an
 * error. n may exceed TG_MAX_INPUTS. Records CatBackward0. New reference;
 * arguments borrowed. */
tg_tensor *tg_cat(const tg_tensor *const *tensors, int n, int dim);
/* As torch.stack(tensors, dim): n tensors of one shape joined along a new
 * dim of size n at position dim (in [-ndim-1, ndim]), i.e. tg_cat of each
 * tensor unsqueezed at dim; dtype as tg_cat. Records StackBackward0. New
 * reference; arguments borrowed. */
tg_tensor *tg_stack(const tg_tensor *const *tensors, int n, int dim);

/* The split functions store the pieces in out[0 .. count) and return
 * count, or -1 after an error (out[0 .. max_out) are then NULL). Each
 * piece is a NEW reference the caller releases, and a view of x: piece j
 * is x narrowed to its place along dim. Called with out NULL and max_out
 * 0 they return count and make nothing, to size out. */

/* As torch.split(x, split_size, dim): pieces of split_size elements along
 * dim, the last one shorter; count = ceil(size / split_size), and 1 when
 * the dim is empty (split_size may then be 0). Each piece records
 * SplitBackward0. out receives new references; x borrowed. */
int tg_split(const tg_tensor *x, int64_t split_size, int dim,
             tg_tensor **out, int max_out);
/* As torch.split(x, [sizes], dim): nsizes pieces of the given lengths
 * (each >= 0, adding up to the dim's size); out has room for nsizes.
 * Returns nsizes, or -1. Each piece records SplitWithSizesBackward0. out
 * receives new references; x and sizes borrowed. */
int tg_split_sizes(const tg_tensor *x, const int64_t *sizes, int nsizes,
                   int dim, tg_tensor **out);
/* As torch.chunk(x, chunks, dim): pieces of ceil(size / chunks) elements,
 * so at most chunks of them (6 into 4 gives three of 2), or chunks empty
 * pieces when the dim is empty; max_out = chunks is always enough. out
 * receives new references; x borrowed. */
int tg_chunk(const tg_tensor *x, int chunks, int dim, tg_tensor **out,
             int max_out);

/* --------------------------------------------------------------- indexing */
/* Picking elements by integer position (autograd/ops/index.c). idx is an
 * int64 tensor of any layout; every index is checked. The backward adds
 * each output gradient into the element it was copied from, so an index
 * that repeats sums its gradients (index_add, scatter_add); idx gets no
 * gradient. */

/* As torch.index_select(x, dim, idx): x with dim replaced by the
 * idx.numel() slices idx picks, in idx's order, repeats allowed. idx is
 * 1-D (or 0-d: one slice, dim kept). Indices lie in [0, x.shape[dim]):
 * negative ones are refused, as PyTorch's index_select does. x has at
 * least one dim (PyTorch also takes a 0-d x). Records
 * IndexSelectBackward0. New reference; arguments borrowed. */
tg_tensor *tg_index_select(const tg_tensor *x, int dim, const tg_tensor *idx);
/* PyTorch's x[idx] for an integer tensor idx of any shape: the rows of x
 * (dim 0) that idx names, shaped idx.shape + x.shape[1:], so a (27, 10)
 * embedding table indexed by (32, 3) contexts gives (32, 3, 10) (makemore's
 * C[Xb]). Indices lie in [-n, n) for n = x.shape[0]; a negative one counts
 * from the end, as in PyTorch's x[idx]. Records IndexBackward0. New
 * reference; arguments borrowed. */
tg_tensor *tg_index(const tg_tensor *x, const tg_tensor *idx);
/* As torch.gather(x, dim, idx): out[p] = x[p with p[dim] replaced by
 * idx[p]], of idx's shape. idx has x's number of dims and
 * idx.shape[d] <= x.shape[d] for every d != dim; indices lie in
 * [0, x.shape[dim]). makemore's logprobs[range(n), Yb] is
 * tg_gather(logprobs, 1, Yb viewed as (n, 1)). Records GatherBackward0.
 * New reference; arguments borrowed. */
tg_tensor *tg_gather(const tg_tensor *x, int dim, const tg_tensor *idx);
/* As torch.nn.functional.one_hot(idx, num_classes): int64, idx's shape
 * followed by (num_classes,), 1 at each idx value and 0 elsewhere.
 * num_classes -1 means max(idx) + 1 (an empty idx then needs
 * num_classes >= 1, as in PyTorch). Class values lie in
 * [0, num_classes). Not differentiable (no node is recorded). New
 * reference; idx borrowed. */
tg_tensor *tg_one_hot(const tg_tensor *idx, int64_t num_classes);

/* ------------------------------------------- BatchNorm over virtual ranks */

/* SyncBatchNorm's arithmetic in one process, without MPI: in training, x's
 * rows are split into world_size shards as tg_dist_shard_range splits them
 * (numpy.array_split: the first N % world_size one row longer; a shard may
 * be empty), each shard's count, mean and M2 per channel are combined in
 * shard order with Chan's formula, and the backward adds the shards'
 * [sum(dy), sum(dy * (x - mean))], exactly what tg_sync_batch_norm does on
 * world_size processes (the same functions compute it,
 * autograd/ops/sync_batch_norm_math.c). The result equals tg_batch_norm_ex
 * on the whole batch up to rounding, running statistics included: a way
 * to study data-parallel BatchNorm on a machine without MPI
 * (docs/distributed.md). In eval (opts->eval true) it is
 * tg_batch_norm_ex with the running statistics. opts as tg_batch_norm_ex
 * (NULL: tg_batch_norm_defaults()); correction must be 0. Records
 * SyncBatchNormBackward. New reference; arguments borrowed (running_mean
 * and running_var are updated in place). */
tg_tensor *tg_batch_norm_virtual_ranks(const tg_tensor *x, int world_size,
                                       tg_tensor *running_mean,
                                       tg_tensor *running_var,
                                       const tg_tensor *weight,
                                       const tg_tensor *bias,
                                       const tg_batch_norm_options *opts);

/* ------------------------------------------------ convolution, pooling */
/* 2-D convolution and pooling over (N, C, H, W) images, as
 * torch.nn.functional's conv2d, max_pool2d and avg_pool2d
 * (autograd/ops/conv.c, pool.c; docs/convolution.md has the math). Each
 * also takes one unbatched (C, H, W) image and then returns (C', H', W').
 * Float32 or float64 only. */

/* conv2d's settings. A zero field means PyTorch's default (stride 1,
 * padding 0, dilation 1, groups 1), so (tg_conv2d_options){0} and
 * (tg_conv2d_options){.padding = {1, 1}} both work as written; index 0 is
 * the height, 1 the width. Negative values are errors. */
typedef struct tg_conv2d_options {
    int64_t stride[2];
    int64_t padding[2];  // zeros added on each side
    int64_t dilation[2]; // spacing of the kernel's taps
    int64_t groups;      // in and out channels split into this many groups
} tg_conv2d_options;
/* stride (1, 1), padding (0, 0), dilation (1, 1), groups 1: what a zeroed
 * struct also means. */
tg_conv2d_options tg_conv2d_defaults(void);

/* As torch.nn.functional.conv2d(x, weight, bias, stride, padding,
 * dilation, groups): x (N, C_in, H, W), weight (C_out, C_in / groups, kH,
 * kW), bias (C_out,) or NULL; opts NULL means the defaults. The output is
 * (N, C_out, H_out, W_out) with
 *   H_out = (H + 2 padding[0] - dilation[0] (kH - 1) - 1) / stride[0] + 1
 * (rounded down; W_out alike) and
 *   y[n, o, p, q] = bias[o] + sum over c, i, j of weight[o, c, i, j]
 *                   * x[n, g C_in / groups + c, p stride[0] - padding[0]
 *                       + i dilation[0], q stride[1] - padding[1]
 *                       + j dilation[1]]
 * for o in group g, x read as 0 in the padding (a cross-correlation, as in
 * PyTorch). Computed as im2col and one matrix product per group (the gemm
 * of tg_matmul); TG_KERNELS_REFERENCE runs the plain loops instead. x,
 * weight and bias have one dtype. Records ConvolutionBackward0 (gradients
 * for x, weight and bias). New reference; arguments borrowed. */
tg_tensor *tg_conv2d(const tg_tensor *x, const tg_tensor *weight,
                     const tg_tensor *bias, const tg_conv2d_options *opts);

/* As torch.nn.functional.max_pool2d(x, kernel, stride, padding) with
 * dilation 1 and ceil_mode false: the maximum of each kernel[0] x
 * kernel[1] window, moved by stride (NULL: stride = kernel) over x padded
 * by padding (NULL: 0) with -inf; H_out = (H + 2 padding[0] - kernel[0])
 * / stride[0] + 1, W_out alike. padding <= kernel / 2 in each dim. The
 * gradient goes to the first maximum of each window in row-major order
 * (a NaN wins), as in PyTorch. Records MaxPool2DWithIndicesBackward0. New
 * reference; arguments borrowed. */
tg_tensor *tg_max_pool2d(const tg_tensor *x, const int64_t kernel[2],
                         const int64_t stride[2], const int64_t padding[2]);
/* As torch.nn.functional.avg_pool2d(x, kernel, stride, padding) with
 * ceil_mode false and count_include_pad true (PyTorch's defaults): the sum
 * of each window divided by kernel[0] * kernel[1], padding counted as
 * zeros. Arguments and output shape as tg_max_pool2d. Records
 * AvgPool2DBackward0. New reference; arguments borrowed. */
tg_tensor *tg_avg_pool2d(const tg_tensor *x, const int64_t kernel[2],
                         const int64_t stride[2], const int64_t padding[2]);

/* ------------------------------------------- GroupNorm and InstanceNorm */
/* One computation over groups of channels (autograd/ops/group_norm.c,
 * docs/normalization.md section 8): x is (N, C, *) and each sample's C
 * channels are split into G groups of C / G; each group of each sample is
 * normalised over its (C / G) * prod(shape[2:]) values, then weight and
 * bias act per channel. G = C is InstanceNorm, G = 1 normalises each
 * sample whole (LayerNorm over (C, ...) without the affine part). Both ops
 * record NativeGroupNormBackward0, whose closed-form backward is
 * LayerNorm's applied to each group. */

/* As torch.nn.functional.group_norm(x, num_groups, weight, bias, eps):
 * x is (N, C, *) float32 or float64 with C divisible by num_groups >= 1;
 *   mean = sum(group) / n,  var = sum((group - mean)^2) / n     (biased)
 *   y    = (x - mean) / sqrt(var + eps) * weight[c] + bias[c]
 * over the n = (C / num_groups) * prod(shape[2:]) values of each group of
 * each sample. weight and bias: (C,) of x's dtype, or NULL. Statistics
 * accumulate in double, two-pass. A constant group with eps 0 gives NaN,
 * as in PyTorch (tg_instance_norm gives the bias there, as PyTorch's
 * instance_norm). New reference; arguments borrowed. */
tg_tensor *tg_group_norm(const tg_tensor *x, int64_t num_groups,
                         const tg_tensor *weight, const tg_tensor *bias,
                         double eps);
/* tg_group_norm built from primitive ops (reshape, mean, sub, mul, rsqrt,
 * ...), which the tape differentiates: the plain reference of the fused
 * op. New reference; arguments borrowed. */
tg_tensor *tg_group_norm_composed(const tg_tensor *x, int64_t num_groups,
                                  const tg_tensor *weight,
                                  const tg_tensor *bias, double eps);
/* As torch.nn.functional.instance_norm(x, running_mean, running_var,
 * weight, bias, use_input_stats, momentum, eps). x is (N, C, *) with at
 * least one dim after C. With use_input_stats, each channel of each sample
 * is normalised over its own values: tg_group_norm with num_groups = C;
 * the product of the dims after C must then be > 1. When running_mean and
 * running_var are given they are updated in place (no gradient), as
 * PyTorch does it: each sample's copy moves by momentum towards that
 * sample's statistics and the copies are averaged over the batch,
 *   running_mean = (1 - m) * running_mean + m * mean_n(mean[n, c])
 *   running_var  = (1 - m) * running_var
 *                  + m * mean_n(var[n, c] * S / (S - 1))       (unbiased)
 * with S the values per channel. Without use_input_stats the running
 * statistics normalise instead (they are required then and are not
 * updated): that is BatchNorm in eval, and records
 * NativeBatchNormBackward0. running_mean, running_var, weight, bias: (C,)
 * of x's dtype, or NULL (the running pair both or neither); momentum in
 * [0, 1]. New reference; arguments borrowed (the running statistics are
 * updated in place). */
tg_tensor *tg_instance_norm(const tg_tensor *x, tg_tensor *running_mean,
                            tg_tensor *running_var, const tg_tensor *weight,
                            const tg_tensor *bias, bool use_input_stats,
                            double momentum, double eps);

#ifdef __cplusplus
}
#endif

#endif
