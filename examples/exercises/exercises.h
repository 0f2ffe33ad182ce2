/*
 * examples/exercises/exercises.h - the graded exercises: what each one asks
 * you to write. Statements, hints and the math are in docs/exercises/.
 *
 * Each exercise is one file in this folder, ex01_*.c .. ex10_*.c, with its
 * function(s) stubbed out: a stub calls EX_NOT_IMPLEMENTED() and returns
 * NULL (or -1, or NAN). Replace the stub's body with your code, then grade it:
 *
 *     meson test -C build --suite exercises --print-errorlogs   # all
 *     meson test -C build --suite exercises ex04 --print-errorlogs  # one
 *
 * An exercise still stubbed fails with "not implemented yet". The graders
 * (tests/exercises/grade_ex*.c) compare your results with NumPy references
 * and run tg_gradcheck on your backward passes.
 *
 * Ownership as in the library: tensor arguments are borrowed; a tensor you
 * return or store through an out-pointer is a new reference (the grader
 * releases it). Release every tensor you make along the way: the graders
 * fail a test that leaves tensors alive.
 *
 * Unless an exercise says otherwise, inputs are float64 and contiguous, and
 * the results must be float64 and have the shapes given below.
 */
#ifndef TG_EXERCISES_H
#define TG_EXERCISES_H

#include <math.h>
#include <stdbool.h>
#include <stdint.h>

#include "tapegrad.h"

/* ------------------------------------------------------ stub marker */

/* A stub's first line: records that fn (in file) is not written yet, so
 * the grader fails with "not implemented yet" instead of checking (or
 * crashing on) the NULL the stub returns. Delete the line when you write
 * the function. */
#define EX_NOT_IMPLEMENTED() ex_not_implemented(__FILE__, __func__)
void ex_not_implemented(const char *file, const char *fn);

/* ----------------------------------------- 01: the broadcasting rule */

/* The shape NumPy and PyTorch broadcast a (na dims) and b (nb dims) to:
 * align the shapes at their last dim; two sizes are compatible when equal
 * or when one of them is 1; the result takes the size that is not 1 (so
 * (0,) with (1,) gives (0,), not (1,)). Writes the result to out and
 * returns its number of dims, or returns -1 when the shapes cannot be
 * broadcast (no error message needed). Sizes are >= 0; na, nb <=
 * TG_MAX_DIMS. */
int ex_broadcast_shape(const int64_t *a, int na, const int64_t *b, int nb,
                       int64_t out[TG_MAX_DIMS]);

/* --------------------------- 02: a gradient back to a broadcast shape */

/* grad is the gradient of a result that an input of shape `shape` (ndim
 * dims) was broadcast into. Returns the input's gradient: grad summed over
 * the leading dims that broadcasting added and over every dim where
 * `shape` has size 1 but grad does not, with shape `shape` (which
 * broadcasts to grad's shape). New reference.
 * grad may be float32 or float64; keep its dtype. */
tg_tensor *ex_sum_to_shape(const tg_tensor *grad, const int64_t *shape,
                           int ndim);

/* ------------------------------- 03: backward of mul, div and pow */

/* out = a * b, a / b, a ** b with a, b of one shape (no broadcasting; b
 * of pow is a tensor too, a > 0). Given grad_out = dL/dout, store dL/da in
 * *grad_a and dL/db in *grad_b (new references, the shape of a). Returns 0,
 * or -1 on error. */
int ex_mul_backward(const tg_tensor *a, const tg_tensor *b,
                    const tg_tensor *grad_out, tg_tensor **grad_a,
                    tg_tensor **grad_b);
int ex_div_backward(const tg_tensor *a, const tg_tensor *b,
                    const tg_tensor *grad_out, tg_tensor **grad_a,
                    tg_tensor **grad_b);
int ex_pow_backward(const tg_tensor *a, const tg_tensor *b,
                    const tg_tensor *grad_out, tg_tensor **grad_a,
                    tg_tensor **grad_b);

/* ------------------------------------------- 04: softmax backward */

/* y = softmax(x) along the last dim of a 2-D (rows, n) x. Given y and
 * grad_y = dL/dy, returns dL/dx, shape (rows, n). New reference. */
tg_tensor *ex_softmax_backward(const tg_tensor *y, const tg_tensor *grad_y);

/* ------------------------------------------ 05: LayerNorm forward */

/* LayerNorm over the last dim of a 2-D (rows, C) x, as
 * torch.nn.functional.layer_norm(x, (C,), weight, bias, eps):
 *   mean = x.mean(-1), var = x.var(-1, correction=0),
 *   rstd = 1 / sqrt(var + eps), y = (x - mean) * rstd * weight + bias.
 * weight and bias are (C,) or NULL (then 1 and 0). Returns y (rows, C) and
 * stores mean and rstd, both (rows,), in *mean and *rstd: three new
 * references. */
tg_tensor *ex_layer_norm_forward(const tg_tensor *x, const tg_tensor *weight,
                                 const tg_tensor *bias, double eps,
                                 tg_tensor **mean, tg_tensor **rstd);

/* ------------------------------ 06: LayerNorm backward (Karpathy's form) */

/* The backward of exercise 05 with weight and bias given: from dy
 * (rows, C), x, weight (C,), and the forward's mean and rstd (rows,),
 * compute dx (rows, C), dweight (C,) and dbias (C,), as llm.c's
 * layernorm_backward: three new references. Returns 0 or -1. */
int ex_layer_norm_backward(const tg_tensor *dy, const tg_tensor *x,
                           const tg_tensor *weight, const tg_tensor *mean,
                           const tg_tensor *rstd, tg_tensor **dx,
                           tg_tensor **dweight, tg_tensor **dbias);

/* ---------------------------- 07: BatchNorm backward in one expression */

/* BatchNorm1d in training on x (N, C): per channel c, over the batch,
 *   mean = x.mean(0), var = x.var(0, correction=0),
 *   rstd = 1 / sqrt(var + eps), xhat = (x - mean) * rstd,
 *   y = xhat * weight + bias.
 * From dy (N, C), x, weight (C,), mean and rstd (C,), compute dx (N, C)
 * with one expression per element (makemore part 4), and dweight, dbias
 * (C,): three new references. Returns 0 or -1. */
int ex_batch_norm_backward(const tg_tensor *dy, const tg_tensor *x,
                           const tg_tensor *weight, const tg_tensor *mean,
                           const tg_tensor *rstd, tg_tensor **dx,
                           tg_tensor **dweight, tg_tensor **dbias);

/* ------------------------------------ 08: running statistics update */

/* What BatchNorm1d does to its buffers during a training forward on x
 * (N, C), N >= 2, as PyTorch:
 *   running_mean = (1 - momentum) * running_mean + momentum * x.mean(0)
 *   running_var  = (1 - momentum) * running_var
 *                  + momentum * x.var(0, correction=1)
 * In place on running_mean and running_var (C,). Returns 0 or -1. */
int ex_update_running_stats(tg_tensor *running_mean, tg_tensor *running_var,
                            const tg_tensor *x, double momentum);

/* ------------------------------------- 09: a custom op, RMSNorm */

/* RMSNorm over the last dim of x (rows, C) with weight (C,), as
 * torch.nn.functional.rms_norm(x, (C,), weight, eps):
 *   rms = sqrt(mean(x^2, -1) + eps), y = x / rms * weight.
 * Write it as a tg_function with a forward and your own backward, and
 * apply it with tg_function_apply so the tape records one node named
 * "RMSNormBackward". New reference. */
tg_tensor *ex_rms_norm(const tg_tensor *x, const tg_tensor *weight,
                       double eps);

/* ------------------------------- 10: a training loop for the spirals */

/* Trains model (inputs (B, 2) float32, outputs (B, classes) logits) on
 * train for `epochs` epochs of shuffled mini-batches of batch_size (drawn
 * with g), minimising tg_cross_entropy with opt. The model is in training
 * mode and stays in it. Returns the plain average of the batch losses of
 * the last epoch, or NAN on error. */
double ex_train(tg_module *model, tg_optimizer *opt, const tg_dataset *train,
                int epochs, int64_t batch_size, tg_generator *g);

/* ------------------ 14 to 16: makemore part 4, "becoming a backprop ninja" */
/* The network of examples/makemore/part4_mlp.h (p4_params, p4_forward,
 * p4_grads), float32 as in the lecture. These exercises check your
 * gradients with tg_cmp, the lecture's cmp(): approximately equal to the
 * tape's (torch.allclose's tolerance), and of the same shape. */
#include "../makemore/part4_mlp.h"

/* 14: backprop through the whole network by hand. Given the parameters,
 * the forward f of a batch (xb (n, 3) int64, yb (n,) int64) as
 * p4_forward_run computes it, fill every field of *d with dL/d(that
 * variable) for loss = f->loss: the 7 parameters and the 19
 * intermediates (not the loss), each a new reference of its variable's
 * shape, float32, written with tensor ops one intermediate at a time,
 * from dlogprobs back to dC. Returns 0 or -1. */
int ex_backprop_ninja(const p4_params *p, const p4_forward *f,
                      const tg_tensor *xb, const tg_tensor *yb, p4_grads *d);

/* 15: dL/dlogits of loss = the mean cross-entropy of logits (N, C)
 * against labels (N,) int64, in one expression (no step-by-step backward
 * through max, exp, sum, log). float32 or float64; keep logits' dtype.
 * New reference. */
tg_tensor *ex_cross_entropy_backward(const tg_tensor *logits,
                                     const tg_tensor *labels);

/* 16: one training step of the lecture's exercise 4 with your own
 * backward only: the forward of xb (n, 3), yb (n,) with BatchNorm on the
 * batch's mean and unbiased variance (eps 1e-5), the mean cross-entropy,
 * every parameter's gradient by hand, then p -= lr * grad for each. Store
 * the batch loss (before the update) in *loss and the seven gradients, in
 * the order of p4_params_list, in grads (new references). Nothing may be
 * recorded on the tape. Returns 0 or -1. */
int ex_train_step(p4_params *p, const tg_tensor *xb, const tg_tensor *yb,
                  double lr, double *loss, tg_tensor *grads[P4_NPARAMS]);

#endif
