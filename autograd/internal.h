/*
 * autograd/internal.h - what an op file needs to record itself on the tape.
 * Not installed.
 *
 * The pattern, in every op of autograd/ops/:
 *
 *   static int mul_backward(tg_node *node, const tg_tensor *g,
 *                           tg_tensor **grads) { ... }
 *   static const tg_op mul_op = {"MulBackward0", mul_backward, 0};
 *
 *   tg_tensor *tg_mul(const tg_tensor *a, const tg_tensor *b)
 *   {
 *       tg_tensor *out = tg_binary_apply(...);
 *       tg_node *node = tg_record(&mul_op, &out, TG_INPUTS(a, b));
 *       if (node) {                 // an input needs grad: keep a and b
 *           tg_node_save(node, a);
 *           tg_node_save(node, b);
 *       }
 *       return out;
 *   }
 *
 * A backward receives dL/d(out) (borrowed, out's shape, any layout) and
 * stores NEW references in grads[i] for the inputs where
 * tg_node_needs_grad(node, i); NULL means a zero gradient. Each gradient
 * must have its input's shape (tg_sum_to_input reduces a broadcast one);
 * the engine converts the dtype. Backward runs with gradients disabled, so
 * it may use any op. Returns 0, or -1 after tg_error.
 */
#ifndef TG_AUTOGRAD_INTERNAL_H
#define TG_AUTOGRAD_INTERNAL_H

#include "../tensor/internal.h"
#include "../tensor/debug.h" // tg_check_alive
#include "autograd.h"
#include "ops.h"

typedef int (*tg_backward_fn)(tg_node *node, const tg_tensor *grad_out,
                              tg_tensor **grad_inputs);

/* What every node of one op shares. */
typedef struct tg_op {
    const char *name;        // PyTorch's grad_fn name where there is one
    tg_backward_fn backward;
    size_t ctx_size;         // bytes of tg_node_ctx(node): the op's params
} tg_op;

/* The inputs as an array and a count: TG_INPUTS(a, b). */
#define TG_INPUTS(...)                                                     \
    ((const tg_tensor *const[]){__VA_ARGS__}),                             \
    ((int)(sizeof((const tg_tensor *const[]){__VA_ARGS__}) /               \
           sizeof(const tg_tensor *)))

/* Records op on the tape with output *out, when gradients are enabled and
 * an input requires grad: *out then requires grad and points to the node,
 * which is returned. Returns NULL when there is nothing to record (also
 * when *out is NULL). When recording fails (out of memory) *out is
 * released and set to NULL, and NULL is returned. NULL inputs are allowed
 * (they need no gradient). */
tg_node *tg_record(const tg_op *op, tg_tensor **out,
                   const tg_tensor *const *inputs, int ninputs);

/* True when an op on these inputs would be recorded. */
bool tg_grad_needed(const tg_tensor *const *inputs, int ninputs);

/* Keeps t's data for backward (a detached alias: same storage, no
 * history, so saving an op's own output makes no cycle). Returns the index
 * for tg_node_saved, or -1 (the error is reported at backward). */
int tg_node_save(tg_node *node, const tg_tensor *t);
/* The i-th saved tensor, borrowed. */
const tg_tensor *tg_node_saved(const tg_node *node, int i);
bool tg_node_needs_grad(const tg_node *node, int i);
/* The op's parameter block (op->ctx_size bytes, zeroed). */
void *tg_node_ctx(tg_node *node);
/* Shape, ndim and dtype of input i as it was at forward time. */
const int64_t *tg_node_input_shape(const tg_node *node, int i, int *ndim);
tg_dtype tg_node_input_dtype(const tg_node *node, int i);

/* Sums g over the dims that broadcasting added or stretched, so that the
 * result has `shape` (which must broadcast to g's shape): the gradient of
 * an input that was broadcast in the forward. Returns g retained when the
 * shapes already match. New reference. */
tg_tensor *tg_sum_to_shape(const tg_tensor *g, const int64_t *shape,
                           int ndim);
/* tg_sum_to_shape to input i's forward-time shape: the gradient of a
 * broadcast operand. New reference. */
tg_tensor *tg_sum_to_input(const tg_node *node, const tg_tensor *g, int i);

/* The checks LayerNorm and BatchNorm share (autograd/ops/layer_norm.c;
 * nn/norm.c checks a layer's settings with them when building it). Each
 * returns 0, or -1 with an error naming fn. */
/* eps is a finite number >= 0. */
int tg_norm_eps_check(const char *fn, double eps);
/* Parameter `name` (weight, running_mean, ...) has x's dtype; `group`
 * names what must share it in the rule ("weight, bias and x"). */
int tg_norm_dtype_check(const char *fn, const char *name, const tg_tensor *p,
                        const tg_tensor *x, const char *group);

/* BatchNorm's momentum in [0, 1], eps finite >= 0, correction 0 or 1.
 * Returns 0, or -1 with an error naming fn (autograd/ops/batch_norm.c;
 * nn/norm.c checks a layer's settings with it when building it). */
int tg_batch_norm_options_check(const char *fn,
                                const tg_batch_norm_options *o);

/* Every check of tg_batch_norm_ex on its arguments (x (N, C, ...) float,
 * the (C,) vectors, the options, n > 1 in training), reported under fn,
 * for ops that normalise as BatchNorm does (sync_batch_norm_math.c).
 * Returns 0, or -1 (with an error unless x was NULL). */
int tg_batch_norm_args_check(const char *fn, const tg_tensor *x,
                             const tg_tensor *running_mean,
                             const tg_tensor *running_var,
                             const tg_tensor *weight, const tg_tensor *bias,
                             const tg_batch_norm_options *opts);
/* opts with every field left 0 replaced by its default (a literal 0,
 * TG_EXACT_ZERO, becomes 0.0); NULL: the defaults. */
tg_batch_norm_options
tg_batch_norm_options_resolve(const tg_batch_norm_options *opts);

/* An option field's value: dflt when the field is 0 (left out), 0 when it
 * is TG_EXACT_ZERO, the value itself otherwise (autograd.h, "option
 * structs"). */
double tg_option_or(double value, double dflt);
/* A number given as a plain argument, as an option field: 0 becomes
 * TG_EXACT_ZERO, so that it stays 0. */
double tg_option_literal(double value);

/* acc += g with tg_add's own loops (autograd/ops/arith.c), in place, not
 * recorded: for a float acc and a g of acc's dtype and shape, which the
 * caller has checked (backward's accumulation of gradients, tape.c). */
void tg_add_into(tg_tensor *acc, const tg_tensor *g);

#endif
