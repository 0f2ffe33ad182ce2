/*
 * autograd/autograd.h - the tape: requires_grad, backward, no_grad,
 * custom differentiable functions, gradcheck and the Graphviz export.
 *
 * How it works (docs/autograd.md has the long version): while gradients are
 * enabled, every differentiable op whose inputs need a gradient appends a
 * node to this thread's tape, a Wengert list in execution order. A node
 * keeps what its backward needs (saved tensors, a few parameters) and links
 * to the nodes that made its inputs. tg_backward(loss) walks the tape from
 * loss's node towards the start, in reverse execution order, so every node
 * is visited after all the nodes that use its output: no recursion, no
 * topological sort. Leaves (tensors made by the user with requires_grad)
 * receive their gradient in x->grad, accumulated with +=.
 *
 * A node lives while its output tensor does or while a later node needs it;
 * tg_backward releases what the nodes it walked saved (the memory that
 * matters) unless told to keep it, and a node itself goes with the last
 * tensor that needs it. So a forward pass, differentiated or not, costs no
 * memory once its tensors are released.
 *
 * The tape is per thread: a graph belongs to the thread that recorded it.
 * Only that thread extends it, runs its backward and releases its tensors;
 * another thread that tries is refused with an error (docs/tensor.md,
 * Threads).
 *
 * Ownership as everywhere: returned tensors are NEW references, arguments
 * are BORROWED; x->grad belongs to x.
 */
#ifndef TG_AUTOGRAD_H
#define TG_AUTOGRAD_H

#include "../tensor/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/* --------------------------------------------------------- option structs */
/*
 * Every option struct of the library (tg_gradcheck_options,
 * tg_batch_norm_options, tg_batch_norm_config, tg_sgd_config,
 * tg_adam_config, ...) follows one convention: a field left 0 means its
 * documented default, so a zero-initialised struct, one built with
 * designated initialisers, and a NULL pointer all mean the defaults:
 *   tg_batch_norm_config c = {.cumulative = true}; // eps 1e-5, affine, ...
 * Flags are named so that false is the default (no_affine,
 * no_running_stats). Each struct has a getter, tg_<thing>_defaults(),
 * that returns the defaults written out.
 * A number whose default is not 0 (eps, momentum, a learning rate) takes
 * TG_EXACT_ZERO to mean a literal 0: {.momentum = TG_EXACT_ZERO} keeps
 * BatchNorm's running statistics where they are. TG_EXACT_ZERO is -0.0,
 * which compares equal to 0 and differs from it only in its sign bit.
 */
#define TG_EXACT_ZERO (-0.0)

/* ------------------------------------------------------ requires_grad */

/* Marks a leaf tensor as needing a gradient (x->requires_grad), as
 * Tensor.requires_grad_(). Only float tensors can; a tensor made by a
 * recorded op (a non-leaf) cannot be changed. Returns 0 or -1; x borrowed. */
int tg_set_requires_grad(tg_tensor *x, bool requires_grad);
/* Whether x is a leaf: made by the user, not by a recorded op. x borrowed. */
bool tg_is_leaf(const tg_tensor *x);
/* Asks backward to store the gradient of a non-leaf tensor in x->grad too,
 * as Tensor.retain_grad(). x must require grad. Returns 0 or -1; x
 * borrowed. */
int tg_retain_grad(tg_tensor *x);
/* Fills x->grad with zeros when there is one (the next backward then adds
 * into it); does nothing otherwise. NULL-safe; x borrowed. */
void tg_zero_grad(tg_tensor *x);
/* Releases x->grad and sets it to NULL (the next backward allocates it).
 * x borrowed. */
void tg_clear_grad(tg_tensor *x);

/* A new tensor sharing x's storage that needs no gradient and has no
 * history, as Tensor.detach(). New reference; x borrowed. */
tg_tensor *tg_detach(const tg_tensor *x);

/* ----------------------------------------------------------- backward */

/* Backpropagates from a one-element tensor (the loss): every leaf it
 * depends on gets d(root)/d(leaf) added to leaf->grad. Releases what the
 * walked nodes saved (a second backward through them is then an error).
 * Cannot be called from inside a backward. Returns 0 or -1; root borrowed.
 * A backward that fails half way (out of memory, anomaly mode) may have
 * added to some leaves' grads already: zero them (tg_zero_grad) before
 * trying again, or those leaves get their gradient twice. */
int tg_backward(tg_tensor *root);

typedef struct tg_backward_options {
    /* d(something)/d(root), root's shape; NULL means 1 (root must then have
     * one element). Borrowed. */
    const tg_tensor *grad;
    /* Keep the walked nodes for another backward (PyTorch's
     * retain_graph=True). */
    bool keep_tape;
    /* When given, only these leaves receive gradients (in ->grad) and no
     * retained non-leaf grad is written, as torch.autograd.grad(root,
     * inputs); tg_gradcheck uses it. Borrowed. */
    tg_tensor *const *inputs;
    int ninputs;
} tg_backward_options;
/* tg_backward with options; opts NULL means the defaults. Arguments
 * borrowed. */
int tg_backward_ex(tg_tensor *root, const tg_backward_options *opts);

/* --------------------------------------------------------------- no_grad */

/* Between begin and end nothing is recorded and results do not require
 * grad, as `with torch.no_grad():`. Scopes nest; they are per thread. An
 * end without its begin is reported as an error (and changes nothing). */
void tg_no_grad_begin(void);
void tg_no_grad_end(void);
bool tg_is_grad_enabled(void);

/* -------------------------------------------------------- anomaly mode */
/*
 * As torch.autograd.detect_anomaly, checking forwards too: while it is on,
 * every op recorded on the tape checks its float output, and tg_backward
 * checks every gradient each backward gives. The first NaN or infinity
 * fails: the op returns NULL (nothing recorded) or tg_backward returns -1,
 * with an error naming the op (its grad_fn name), the shapes, the first
 * bad element and its place on the tape, and saying whether the inputs
 * (or the incoming gradient) were already not finite. Later ops pass the
 * NULL on silently, so a training loop stops at the first anomaly.
 *
 * Ops that are not recorded (under no_grad, or with no input that needs a
 * gradient) are not checked. Checking reads every element of every
 * recorded output and gradient once: worth it while hunting a NaN, not for
 * every run. Off, it costs one test per op.
 */

/* The environment variable that turns detection on for every thread that
 * has not set it itself: TG_DETECT_ANOMALY=1. Read once, at the first use
 * of anomaly detection in the process. */
#define TG_DETECT_ANOMALY "TG_DETECT_ANOMALY"

/* Turns anomaly detection on or off for this thread (each thread has its
 * own setting, as grad mode). Returns the previous setting. */
bool tg_set_detect_anomaly(bool on);
/* Whether anomaly detection is on for this thread. */
bool tg_is_anomaly_enabled(void);

/* -------------------------------------------------------------- the tape */

/* One entry of the tape: an op that ran, its inputs, what backward needs. */
typedef struct tg_node tg_node;

/* Nodes alive on this thread's tape. A node lives while its output tensor
 * does or a later node links to it (a backward empties the nodes it walked,
 * but they stay while their outputs live), so this is 0 once every tensor
 * made by a recorded op is released. */
int64_t tg_tape_size(void);
/* The op name of x's node ("MulBackward0"), or NULL for a leaf: borrowed,
 * valid while x lives. x borrowed. */
const char *tg_grad_fn_name(const tg_tensor *x);

/* Writes the graph that produced the given roots as Graphviz DOT: one box
 * per op (name, output shape, what it saved), one ellipse per leaf (shape,
 * requires_grad, whether it has a .grad), edges in the direction data
 * flows. title (may be NULL) is shown on top with the grad mode. Render
 * with `dot -Tpng graph.dot -o graph.png` (Debian: apt-get install
 * graphviz). Returns 0 or -1; arguments borrowed. */
int tg_tape_write_dot(FILE *f, tg_tensor *const *roots, int nroots,
                      const char *title);

/* ----------------------------------------------------- custom functions */
/*
 * A differentiable function of your own, as torch.autograd.Function:
 *
 *   forward(ctx, inputs, ninputs, args) computes the output (a NEW
 *   reference) from the inputs with any tapegrad ops. It runs with
 *   gradients disabled. It may keep tensors for backward with
 *   tg_ctx_save(ctx, t) and small values in tg_ctx_data(ctx) (data_size
 *   bytes, zeroed; at most PTRDIFF_MAX). args is the pointer given to
 *   tg_function_apply.
 *
 *   backward(ctx, grad_out, grad_inputs) receives dL/d(output) (borrowed,
 *   the output's shape) and stores in grad_inputs[i] a NEW reference to
 *   dL/d(inputs[i]), with inputs[i]'s shape, for each i where
 *   tg_ctx_needs_grad(ctx, i); leave NULL for a zero gradient, and write no
 *   slot i >= ninputs (tg_backward fails on one, naming the function). It
 *   runs with gradients disabled. Returns 0, or -1 after reporting an
 *   error.
 *
 * tg_function_apply records the call on the tape when an input needs a
 * gradient; tg_backward and tg_gradcheck then treat it like any built-in op.
 */
typedef tg_node tg_ctx;
typedef struct tg_function {
    const char *name; // shown in prints and graphs, e.g. "RMSNormBackward"
    tg_tensor *(*forward)(tg_ctx *ctx, const tg_tensor *const *inputs,
                          int ninputs, const void *args);
    int (*backward)(tg_ctx *ctx, const tg_tensor *grad_out,
                    tg_tensor **grad_inputs);
    size_t data_size; // bytes of tg_ctx_data(ctx)
} tg_function;

#define TG_MAX_INPUTS 8 // inputs of one node
#define TG_MAX_SAVED 8  // saved tensors of one node

/* Calls f on the inputs, recording it on the tape when one of them needs a
 * gradient. New reference, or NULL on error; arguments borrowed. */
tg_tensor *tg_function_apply(const tg_function *f,
                             const tg_tensor *const *inputs, int ninputs,
                             const void *args);

/* Keeps t for backward (t's data, not its history: a modified t is caught
 * at backward); the node takes a reference of its own, so ctx and t are
 * borrowed. Returns its index for tg_ctx_saved, or -1. */
int tg_ctx_save(tg_ctx *ctx, const tg_tensor *t);
/* The i-th saved tensor (borrowed, valid while ctx keeps it: until its
 * backward has run). ctx borrowed. */
const tg_tensor *tg_ctx_saved(const tg_ctx *ctx, int i);
/* Whether backward must produce a gradient for input i. ctx borrowed. */
bool tg_ctx_needs_grad(const tg_ctx *ctx, int i);
/* data_size bytes for the function's own values, zero at first (NULL when
 * data_size is 0). Borrowed: valid while ctx lives; ctx borrowed. */
void *tg_ctx_data(tg_ctx *ctx);

/* ------------------------------------------------------------- gradcheck */
/*
 * Compares the gradients computed by backward with finite differences, as
 * torch.autograd.gradcheck: for every input x that requires grad, every
 * element x[k] and every output element y[j],
 *   numerical  J[j,k] = (f(x + eps e_k) - f(x - eps e_k))[j] / (2 eps)
 *   analytical J[j,k] = (grad of x from a backward of the one-hot e_j)[k]
 * and passes iff |a - n| <= atol + rtol |n| everywhere. It also checks that
 * a zero output gradient gives zero input gradients and that backward gives
 * the same numbers twice.
 *
 * Use float64 inputs: the defaults (eps 1e-6, atol 1e-5, rtol 1e-3) are
 * meant for them. With float32 a warning is printed; eps 1e-3, atol 1e-2,
 * rtol 1e-2 is a workable float32 setting. Keep inputs away from kinks
 * (relu at 0, ties in max) where the two sides differ.
 *
 * f computes the output from the inputs (NEW reference) with tapegrad ops;
 * it must be deterministic (no dropout draws, no running-stat updates).
 * f's inputs have the type tg_function_apply takes, so f can hand them on.
 * user is tg_gradcheck's pointer of the same name, handed to f untouched
 * (the data f needs beyond its inputs; NULL when there is none).
 * Inputs are perturbed in place and restored.
 */
typedef tg_tensor *(*tg_gradcheck_fn)(const tg_tensor *const *inputs,
                                      int ninputs, void *user);

/* A field left 0 means its default (see "option structs" above). */
typedef struct tg_gradcheck_options {
    double eps;  // 0: 1e-6
    double atol; // 0: 1e-5 (TG_EXACT_ZERO for none)
    double rtol; // 0: 1e-3 (TG_EXACT_ZERO for none)
    /* Compare v^T J u for random unit vectors u, v (one numerical
     * directional derivative, one backward) instead of the full Jacobian. */
    bool fast_mode;
    uint64_t seed;  // for fast_mode's u and v; 0 is a seed like any other
    bool quiet;     // no float32 warning, no report on failure
    FILE *report;   // where the failure report and warnings go; NULL: stderr
} tg_gradcheck_options;

/* eps 1e-6, atol 1e-5, rtol 1e-3, full Jacobian: what a zero-initialised
 * struct and NULL mean. */
tg_gradcheck_options tg_gradcheck_defaults(void);

/* What went wrong, filled when a check fails. */
typedef struct tg_gradcheck_result {
    bool passed;
    /* For a Jacobian mismatch: which input, which of its elements (flat, C
     * order) and which output element; the two values and |a - n|. */
    int input;
    int64_t input_index;
    int64_t output_index;
    double analytical, numerical, error;
    /* How close the whole Jacobian came, filled whether the check passes
     * or not (0 in fast mode and when f fails): the number of entries
     * compared (checked input elements x output elements), the largest
     * |a - n|, and the largest |a - n| / (atol + rtol |n|), which is <= 1
     * when every entry is within tolerance. */
    int64_t entries;
    double max_error;
    double max_error_ratio;
    char message[1024]; // the whole report, as printed
} tg_gradcheck_result;

/* Returns 1 when every check passes, 0 when one fails (result and the
 * report say which), -1 when f or backward fails with an error or f's
 * output is not finite at the inputs given (result->passed is then
 * false). opts and result may be NULL. Arguments borrowed. */
int tg_gradcheck(tg_gradcheck_fn f, void *user, tg_tensor *const *inputs,
                 int ninputs, const tg_gradcheck_options *opts,
                 tg_gradcheck_result *result);

/* ------------------------------------------- comparing hand gradients */

/* makemore part 4's cmp(name, dt, t): compares dt, a gradient worked out
 * by hand, with t->grad, the one tg_backward stored (call tg_retain_grad
 * on a non-leaf t first), and prints the lecture's line
 *   logits          | exact: True  | approximate: True  | maxdiff: 0.0
 * exact: every element equal (torch.all(dt == t.grad)); approximate:
 * torch.allclose(dt, t.grad) with its defaults, |dt - g| <= 1e-8 + 1e-5
 * |g| everywhere, NaN close to nothing; maxdiff: max |dt - g| computed in
 * the dtype, printed as Python prints a float. Unlike PyTorch, which
 * broadcasts (a (32,) dt against a (32, 1) grad is compared as a (32, 32)
 * grid), different shapes are an error, and so are different dtypes.
 * Returns 1 when approximately equal, 0 when not, -1 on error (nothing
 * printed). Arguments borrowed. */
int tg_cmp(const char *name, const tg_tensor *dt, const tg_tensor *t);
/* tg_cmp writing the line (no newline) into buf of size bytes, truncated
 * to fit, instead of printing it; buf holds "" after an error. Returns 1,
 * 0 or -1 as tg_cmp. Arguments borrowed. */
int tg_cmp_format(const char *name, const tg_tensor *dt, const tg_tensor *t,
                  char *buf, size_t size);

#ifdef __cplusplus
}
#endif

#endif
