/*
 * nn/nn.h - what training a model takes, as torch.nn and torch.optim: the
 * module object (parameters, buffers, children, train/eval mode); the
 * layers Linear, ReLU, Tanh, GELU, Dropout, Sequential, LayerNorm,
 * BatchNorm1d, BatchNorm2d, Embedding and Flatten; optimisers (SGD, Adam,
 * AdamW) and learning-rate schedules; checkpoints; seeded toy datasets
 * and shuffled mini-batches; Python's random module and the makemore word
 * lists. The losses are ops (autograd/ops.h: tg_cross_entropy, ...).
 *
 * A module is an object, not a tensor: it is not reference-counted. The
 * code that makes one frees it with tg_module_free(), which releases its
 * parameters, buffers and children. Tensors it returns are NEW references
 * (tg_module_forward) or BORROWED from the module (tg_module_parameter,
 * tg_module_buffer, the named lists): retain one to keep it longer than the
 * module. Arguments are BORROWED, except where a function says it takes
 * ownership (tg_module_add_child, tg_sequential_new, ...).
 *
 * Parameters are leaf tensors that require grad; an optimiser updates them
 * in place inside tg_no_grad_begin/end. Buffers are state that is not
 * trained (BatchNorm's running statistics): no gradient, updated by the
 * forward itself in training mode.
 */
#ifndef TG_NN_H
#define TG_NN_H

#include "../autograd/autograd.h"
#include "../autograd/ops.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---------------------------------------------------------------- modules */

typedef struct tg_module tg_module;

/* What all modules of one kind share: a layer of your own is a type and a
 * constructor that calls tg_module_new and registers its tensors. */
typedef struct tg_module_type {
    const char *name; // printed: "BatchNorm1d"
    /* The layer applied to x: a NEW reference, or NULL after an error. */
    tg_tensor *(*forward)(tg_module *m, const tg_tensor *x);
    /* Writes the arguments shown inside the parentheses when the module is
     * printed ("64, eps=1e-05"); NULL prints none. */
    void (*describe)(const tg_module *m, char *buf, size_t size);
    size_t data_size; // bytes of tg_module_data(m), for the layer's settings
} tg_module_type;

/* Room for a dotted name ("0.1.running_mean") with its '\0'; one name is
 * under TG_NAME_MAX / 4 characters, and names nested deeper than fits are
 * cut. */
#define TG_NAME_MAX 128

/* A new module of the given type in training mode, with no tensors, or
 * NULL on error. The caller frees it with tg_module_free() (unless a parent
 * takes it). type is borrowed and must outlive the module (make it
 * static). */
tg_module *tg_module_new(const tg_module_type *type);
/* Takes ownership of m and frees it, its children, and its references to
 * its tensors. NULL-safe. */
void tg_module_free(tg_module *m);
/* The type's data_size bytes, zeroed at first (NULL when 0): borrowed,
 * valid while m lives. m borrowed. */
void *tg_module_data(tg_module *m);
const void *tg_module_data_const(const tg_module *m);
/* The type m was made with (borrowed, as given to tg_module_new). m
 * borrowed. */
const tg_module_type *tg_module_get_type(const tg_module *m);

/* Registers t under name; m takes a reference of its own, so the arguments
 * stay borrowed. A parameter is made to require grad; it must be a float
 * leaf. A buffer must not require grad. Names are unique within a module
 * and contain no '.'. Returns 0 or -1. */
int tg_module_add_parameter(tg_module *m, const char *name, tg_tensor *t);
int tg_module_add_buffer(tg_module *m, const char *name, tg_tensor *t);
/* Takes ownership of child: it becomes part of m under name, and m frees
 * it from now on, also when this fails. A module has one parent: a child
 * that already has one (or m itself, or a module that contains m) is
 * refused and stays with its owner; layers share weights by registering
 * the same parameter tensor instead. Returns 0 or -1; m and name are
 * borrowed. */
int tg_module_add_child(tg_module *m, const char *name, tg_module *child);

/* The module applied to x, as module(x) in PyTorch. New reference;
 * arguments borrowed. */
tg_tensor *tg_module_forward(tg_module *m, const tg_tensor *x);

/* Training (true) or eval (false) mode, for m and all its children:
 * module.train(mode) / module.eval(). m borrowed. */
void tg_module_train(tg_module *m, bool training);
bool tg_module_is_training(const tg_module *m);

/* A parameter or buffer by its dotted name ("weight", "0.running_var"),
 * borrowed: valid while m lives (and until tg_module_to_dtype replaces it);
 * NULL with an error listing the names there are. Arguments borrowed. */
tg_tensor *tg_module_parameter(const tg_module *m, const char *name);
tg_tensor *tg_module_buffer(const tg_module *m, const char *name);
/* A child by name (borrowed, valid while m lives), or NULL with an error.
 * Arguments borrowed. */
tg_module *tg_module_child(const tg_module *m, const char *name);
/* How many direct children m has, and the i-th in registration order
 * (borrowed, valid while m lives; NULL with an error when i is out of
 * range). m borrowed. */
int tg_module_num_children(const tg_module *m);
tg_module *tg_module_child_at(const tg_module *m, int i);

/* One entry of a named list: the dotted name and the tensor (borrowed). */
typedef struct tg_named_tensor {
    char name[TG_NAME_MAX];
    tg_tensor *tensor;
} tg_named_tensor;
/* Fills out[0 .. max) with m's parameters (or buffers), its own first,
 * then each child's, in registration order, as named_parameters() in
 * PyTorch, and returns how many there are in all (which may exceed max;
 * out may be NULL to count). A tensor registered twice (tied weights) is
 * listed once, under its first name, so an optimiser steps it once. -1 on
 * error. The tensors written in out are borrowed from m; arguments
 * borrowed. */
int tg_module_named_parameters(const tg_module *m, tg_named_tensor *out,
                               int max);
int tg_module_named_buffers(const tg_module *m, tg_named_tensor *out,
                            int max);
/* Total number of parameter elements (a tied tensor counted once). m
 * borrowed. */
int64_t tg_module_num_elements(const tg_module *m);

/* tg_zero_grad on every parameter. m borrowed. */
void tg_module_zero_grad(tg_module *m);
/* Converts every float parameter and buffer to dtype (module.double() /
 * .float()); int64 buffers stay. requires_grad is kept, a .grad is
 * converted along, and tied tensors stay tied. Tensors previously borrowed
 * from m are no longer m's. Returns 0, or -1 leaving m unchanged. m
 * borrowed. */
int tg_module_to_dtype(tg_module *m, tg_dtype dtype);

/* The module as PyTorch prints it: "BatchNorm1d(3, eps=1e-05, momentum=
 * 0.1, affine=True, track_running_stats=True)", children indented below
 * their parent. Returns a malloc'd string the caller frees, or NULL; m
 * borrowed. */
char *tg_module_format(const tg_module *m);
/* The same, printed; 0 or -1. m borrowed. */
int tg_module_print(const tg_module *m); // to stdout, with a newline

/* ---------------------------------------------------------- normalisation */

/* nn.LayerNorm(normalized_shape, eps, elementwise_affine): normalises
 * over the trailing dims given by normalized_shape (1..8 dims) with
 * tg_layer_norm. With elementwise_affine, parameters "weight" (ones) and
 * "bias" (zeros) of shape normalized_shape. float32; tg_module_to_dtype
 * converts. Same in train and eval mode. The caller frees the module with
 * tg_module_free() (unless a parent takes it); normalized_shape borrowed. */
tg_module *tg_layer_norm_new(const int64_t *normalized_shape, int ndim,
                             double eps, bool elementwise_affine);

/* A field left 0 means its default (autograd.h, "option structs"), so
 * {.cumulative = true} is PyTorch's BatchNorm1d(C, momentum=None) with
 * every other setting as PyTorch's. */
typedef struct tg_batch_norm_config {
    double eps;      // 0: 1e-5 (TG_EXACT_ZERO: none)
    double momentum; // 0: 0.1 (TG_EXACT_ZERO: the buffers stay); ignored
                     // when cumulative
    /* PyTorch's momentum=None: the running statistics are the plain
     * average of every batch seen, momentum = 1 / num_batches_tracked (the
     * first batch replaces the initial values). */
    bool cumulative;
    /* affine=False: no "weight" (ones) and "bias" (zeros), (C,). */
    bool no_affine;
    /* track_running_stats=False: no buffers "running_mean" (zeros),
     * "running_var" (ones) and "num_batches_tracked" (int64 0-d); batch
     * statistics are then used in eval too. */
    bool no_running_stats;
    /* 0: PyTorch's biased training variance; 1: makemore's unbiased one
     * (see tg_batch_norm_options). */
    int64_t correction;
} tg_batch_norm_config;
/* eps 1e-5, momentum 0.1, not cumulative, affine, tracking, correction 0:
 * PyTorch's defaults, and what a zero-initialised struct and NULL mean. */
tg_batch_norm_config tg_batch_norm_config_defaults(void);

/* nn.BatchNorm1d(num_features): input (N, C) or (N, C, L).
 * nn.BatchNorm2d(num_features): input (N, C, H, W).
 * config NULL means the defaults. float32; tg_module_to_dtype converts.
 * The caller frees the module with tg_module_free() (unless a parent takes
 * it); config borrowed. */
tg_module *tg_batch_norm1d_new(int64_t num_features,
                               const tg_batch_norm_config *config);
tg_module *tg_batch_norm2d_new(int64_t num_features,
                               const tg_batch_norm_config *config);

/* ----------------------------------------------------------------- layers */

/* nn.Linear(in_features, out_features, bias): y = x W^T + b for x of shape
 * (..., in_features). Parameters "weight" (out, in) and "bias" (out,),
 * float32, initialised as PyTorch does and from the default generator in
 * PyTorch's order (weight row by row, then bias), each U(-k, k) with
 * k = 1 / sqrt(in_features): after tg_manual_seed(s) the weights equal
 * those of torch.manual_seed(s); nn.Linear(in, out). The caller frees the
 * module with tg_module_free() (unless a parent takes it). */
tg_module *tg_linear_new(int64_t in_features, int64_t out_features,
                         bool bias);

/* Activations without parameters: nn.ReLU(), nn.Tanh(), nn.GELU(approximate).
 * The caller frees the module with tg_module_free() (unless a parent takes
 * it). */
tg_module *tg_relu_new(void);
tg_module *tg_tanh_new(void);
tg_module *tg_gelu_new(tg_gelu_approx approx);
/* nn.Dropout(p): in training mode each element is zeroed with probability
 * p (drawn from the default generator) and the others are scaled by
 * 1 / (1 - p), so the expected value is unchanged; in eval mode the input
 * passes through. p in [0, 1]. The masks are not PyTorch's for the same
 * seed (PyTorch draws them with bernoulli_). The caller frees the module
 * with tg_module_free() (unless a parent takes it). */
tg_module *tg_dropout_new(double p);

/* nn.Sequential: applies its children in order; they are named "0", "1",
 * ... Takes ownership of every module in mods (n of them; the array itself
 * is the caller's), also when it fails: a NULL
 * among them (a constructor that failed) frees the others and returns
 * NULL, so a whole model can be built in one expression:
 *   tg_module *mlp = TG_SEQUENTIAL(tg_linear_new(2, 64, true), tg_relu_new(),
 *                                  tg_linear_new(64, 3, true));
 * C leaves the order in which an initialiser's elements are evaluated
 * unspecified (GCC and Clang go left to right), so for weights equal to
 * PyTorch's after the same seed, make the layers in separate statements,
 * or use tg_sequential_append or tg_mlp_new. The caller frees the new
 * module with tg_module_free() (unless a parent takes it). */
tg_module *tg_sequential_new(tg_module *const *mods, int n);
#define TG_SEQUENTIAL(...) \
    tg_sequential_new((tg_module *const[]){__VA_ARGS__}, \
                      (int)(sizeof((tg_module *const[]){__VA_ARGS__}) / \
                            sizeof(tg_module *)))
/* Appends child as the next layer of seq. Takes ownership of child, also
 * on failure, unless it belongs to another module, where it stays. Returns
 * 0 or -1; seq borrowed. */
int tg_sequential_append(tg_module *seq, tg_module *child);

/* The normalisation and activation an MLP block uses. */
typedef enum tg_norm_kind {
    TG_NORM_NONE = 0,
    TG_NORM_BATCH = 1, // BatchNorm1d over the features of a (N, width) batch
    TG_NORM_LAYER = 2, // LayerNorm over each row's width features
} tg_norm_kind;
typedef enum tg_activation {
    TG_ACT_RELU = 0,
    TG_ACT_TANH = 1,
    TG_ACT_GELU = 2,
} tg_activation;
/* A multi-layer perceptron as torchvision.ops.MLP: for each of the
 * nhidden widths, Linear -> norm (if any) -> activation; then a Linear
 * to out_features. A Sequential whose children are those layers in that
 * order ("0", "1", ...), drawn from the default generator layer by layer
 * as PyTorch would. NULL on error. The caller frees the module with
 * tg_module_free() (unless a parent takes it); hidden borrowed. */
tg_module *tg_mlp_new(int64_t in_features, const int64_t *hidden, int nhidden,
                      int64_t out_features, tg_norm_kind norm,
                      tg_activation activation);

/* nn.Embedding(num_embeddings, embedding_dim): a table "weight"
 * (num_embeddings, embedding_dim), float32, drawn N(0, 1) from the default
 * generator row by row as PyTorch's init.normal_ does: after
 * tg_manual_seed(s) it equals nn.Embedding's after torch.manual_seed(s).
 * The input is an int64 tensor of indices of any shape, each in
 * [0, num_embeddings) (negative ones are refused, as in PyTorch); the
 * output is its shape followed by (embedding_dim,), the looked-up rows
 * (tg_index, whose backward sums the gradients of a repeated row). Prints
 * as "Embedding(27, 10)". No padding_idx or max_norm. The caller frees the
 * module with tg_module_free() (unless a parent takes it). */
tg_module *tg_embedding_new(int64_t num_embeddings, int64_t embedding_dim);
/* nn.Flatten(start_dim, end_dim): dims start_dim..end_dim of the input
 * (negative ones counted from its end) merged into one, as torch.flatten;
 * PyTorch's defaults are start_dim 1 and end_dim -1, which keep the batch
 * dim: an (N, 3, 10) batch of embeddings becomes (N, 30). A view when the
 * strides allow it (tg_reshape). The dims are checked against each input.
 * Prints as "Flatten(start_dim=1, end_dim=-1)". The caller frees the
 * module with tg_module_free() (unless a parent takes it). */
tg_module *tg_flatten_new(int start_dim, int end_dim);

/* ------------------------------------------------------------- optimisers */

/* An optimiser holds (retained) references to the parameters it updates
 * and their state (momentum buffers, Adam's moments). tg_optimizer_step
 * applies PyTorch's update rule to every parameter that has a .grad (the
 * others are skipped, as PyTorch does), in place and without recording
 * on the tape. */
typedef struct tg_optimizer tg_optimizer;

/* torch.optim.SGD: g = grad + weight_decay * p; with momentum,
 * buf = g at the first step, then buf = momentum * buf + (1 - dampening) * g,
 * and g = g + momentum * buf (nesterov) or g = buf; then p -= lr * g. */
/* A field left 0 means its default (autograd.h, "option structs"):
 * {.lr = 0.1, .momentum = 0.9} is SGD(lr=0.1, momentum=0.9). */
typedef struct tg_sgd_config {
    double lr;           // 0: 1e-3 (TG_EXACT_ZERO: a rate of 0)
    double momentum;     // 0
    double dampening;    // 0
    double weight_decay; // 0
    bool nesterov;       // needs momentum > 0 and dampening 0
} tg_sgd_config;
/* lr 1e-3, momentum 0, dampening 0, weight decay 0, not nesterov: what a
 * zero-initialised struct and NULL mean. */
tg_sgd_config tg_sgd_config_defaults(void);

/* torch.optim.Adam and AdamW: m = beta1 m + (1 - beta1) g,
 * v = beta2 v + (1 - beta2) g^2, p -= lr / (1 - beta1^t) * m /
 * (sqrt(v) / sqrt(1 - beta2^t) + eps). Adam adds weight_decay * p to g;
 * AdamW instead multiplies p by (1 - lr * weight_decay) first. */
/* A field left 0 means its default (autograd.h, "option structs"); a
 * literal 0 is TG_EXACT_ZERO: {.beta1 = TG_EXACT_ZERO} for no first-moment
 * average, {.weight_decay = TG_EXACT_ZERO} for AdamW without decay. */
typedef struct tg_adam_config {
    double lr;           // 0: 1e-3
    double beta1;        // 0: 0.9
    double beta2;        // 0: 0.999
    double eps;          // 0: 1e-8
    double weight_decay; // 0: 0 for Adam, 1e-2 for AdamW
} tg_adam_config;
/* What a zero-initialised struct and NULL mean: lr 1e-3, betas 0.9 and
 * 0.999, eps 1e-8, and weight decay 0 (Adam) or 1e-2 (AdamW). */
tg_adam_config tg_adam_config_defaults(void);
tg_adam_config tg_adamw_config_defaults(void);

/* A new optimiser for every parameter of m (m may be NULL: add tensors
 * with tg_optimizer_add_parameter). It keeps the tensors m has now: make
 * it after tg_module_to_dtype, which replaces them. config NULL means the
 * defaults with lr 1e-3. NULL on error (bad hyper-parameters are named).
 * The caller frees it with tg_optimizer_free(). It takes references of its
 * own to the parameters, so m and config are borrowed. */
tg_optimizer *tg_sgd_new(const tg_module *m, const tg_sgd_config *config);
tg_optimizer *tg_adam_new(const tg_module *m, const tg_adam_config *config);
tg_optimizer *tg_adamw_new(const tg_module *m, const tg_adam_config *config);
/* Adds p, a float leaf tensor that requires grad; opt takes a reference of
 * its own, so the arguments stay borrowed. A tensor already there is not
 * added twice. Returns 0 or -1. */
int tg_optimizer_add_parameter(tg_optimizer *opt, tg_tensor *p);
/* One update of every parameter with a .grad. Returns 0, or -1 with an
 * error (then no parameter has changed). opt borrowed. */
int tg_optimizer_step(tg_optimizer *opt);
/* tg_zero_grad on every parameter (optimizer.zero_grad(set_to_none=False)).
 * opt borrowed. */
void tg_optimizer_zero_grad(tg_optimizer *opt);
/* The learning rate used by the next step (NaN for a NULL opt), and
 * changing it, which is what a schedule does between steps (0, or -1 for
 * a negative or NaN rate, leaving it unchanged). opt borrowed. */
double tg_optimizer_lr(const tg_optimizer *opt);
int tg_optimizer_set_lr(tg_optimizer *opt, double lr);
/* How many steps have been taken (-1 for a NULL opt). opt borrowed. */
int64_t tg_optimizer_steps(const tg_optimizer *opt);
/* Takes ownership of opt and frees it and its state; the parameters stay
 * (with their other references). NULL-safe. */
void tg_optimizer_free(tg_optimizer *opt);

/* Learning-rate schedules as closed forms of the epoch (or step) t:
 * StepLR: base_lr * gamma^floor(t / step_size);
 * CosineAnnealingLR: eta_min + (base_lr - eta_min) (1 + cos(pi t / t_max)) / 2
 * for t in [0, t_max] (eta_min beyond). */
double tg_lr_step(double base_lr, int64_t t, int64_t step_size, double gamma);
double tg_lr_cosine(double base_lr, int64_t t, int64_t t_max, double eta_min);

/* ------------------------------------------------------------ diagnostics */

/* What makemore part 3 prints for each weight after a backward:
 *   weight (27, 10) | mean +0.000000 | std 1.019e-02 | grad:data ratio ...
 * i.e. p.grad.mean(), p.grad.std() and p.grad.std() / p.std(), the stds
 * unbiased as torch.std (n - 1). Computed in the parameter's dtype, as
 * PyTorch does, and given as doubles. */
typedef struct tg_grad_summary {
    char name[TG_NAME_MAX]; // the dotted name ("" for a bare tensor)
    int ndim;               // the lecture shows the 2-D ones (weights)
    int64_t shape[TG_MAX_DIMS];
    bool has_grad;          // false: no .grad yet; the numbers are NaN
    double grad_mean;       // mean(p.grad)
    double grad_std;        // std(p.grad), unbiased
    double data_std;        // std(p), unbiased
    double grad_data;       // grad_std / data_std
} tg_grad_summary;

/* The summary of one parameter p (any float tensor; a p without .grad
 * gives has_grad false and NaN numbers). A tensor of one element has NaN
 * stds, as torch.std. Returns 0, or -1 on error. Arguments borrowed (out
 * is written). */
int tg_param_grad_summary(const tg_tensor *p, tg_grad_summary *out);
/* The summaries of every parameter of m, in tg_module_named_parameters'
 * order, with their names: fills out[0 .. max) and returns how many
 * parameters there are (out may be NULL to count), or -1. Arguments
 * borrowed (out is written). */
int tg_module_grad_summaries(const tg_module *m, tg_grad_summary *out,
                             int max);

/* ------------------------------------------------------------ checkpoints */

/* Saves every parameter and buffer of m as <dir>/<dotted name>.npy
 * ("0.weight.npy", "1.running_mean.npy"), creating dir if needed; the
 * files open in NumPy with np.load. A tied tensor is saved once, under
 * its first name (PyTorch's state_dict keeps every name). Returns 0 or
 * -1; arguments borrowed. */
int tg_module_save(const tg_module *m, const char *dir);
/* Saves opt's state (each parameter's step count and its momentum buffer
 * or Adam's two moments, the optimiser's step count and learning rate)
 * into the folder dir, as torch.save(optimizer.state_dict()), atomically
 * as tg_module_save: the folder holds the whole previous state or the
 * whole new one. The other hyper-parameters are not saved: make the
 * optimiser with the same config. Returns 0 or -1; arguments borrowed. */
int tg_optimizer_save(const tg_optimizer *opt, const char *dir);
/* Loads a state tg_optimizer_save wrote into opt, which must be of the
 * same kind (SGD, Adam, AdamW) over parameters of the same count, shapes
 * and dtypes, in the same order; otherwise nothing changes and the error
 * says what differs. Training on after a load gives the same numbers, bit
 * for bit, as training on without the save. Returns 0 or -1; arguments
 * borrowed. */
int tg_optimizer_load(tg_optimizer *opt, const char *dir);
/* Loads what tg_module_save wrote into m's own tensors (in place, so
 * optimisers keep working). Every file must exist with exactly the
 * tensor's shape and dtype; otherwise nothing is changed and the error
 * names the tensor, both shapes and the file. Returns 0 or -1; arguments
 * borrowed. */
int tg_module_load(tg_module *m, const char *dir);

/* ------------------------------------------------------------------- data */

/* A labelled dataset: inputs x (N, D) float32 (or int64 contexts, for
 * the word lists below) and int64 labels y (N,). Both are owned by the
 * struct: tg_dataset_free releases them. */
typedef struct tg_dataset {
    tg_tensor *x; // (N, D) float32, or (N, block_size) int64
    tg_tensor *y; // (N,) int64
} tg_dataset;
/* Takes ownership of d's tensors and releases them; the struct itself is
 * the caller's (often on the stack). NULL-safe. */
void tg_dataset_free(tg_dataset *d); // releases x and y, sets them NULL

/* Seeded 2-D toy problems (g NULL: the default generator), n_per_class
 * points per class, classes in order (labels 0, 0, ..., 1, 1, ...):
 * - spirals: classes arms winding around the origin (radius 0 to 1, one
 *   and a half turns at noise 0), points jittered by N(0, noise^2);
 * - moons: scikit-learn's two interleaving half circles, with N(0, noise^2);
 * - blobs: classes Gaussian clusters of std spread around centres spaced
 *   evenly on the circle of radius 2.
 * out receives new references (release them with tg_dataset_free); g
 * borrowed. Return 0 or -1. */
int tg_make_spirals(int64_t n_per_class, int classes, double noise,
                    tg_generator *g, tg_dataset *out);
int tg_make_moons(int64_t n_per_class, double noise, tg_generator *g,
                  tg_dataset *out);
int tg_make_blobs(int64_t n_per_class, int classes, double spread,
                  tg_generator *g, tg_dataset *out);
/* Shuffles d (g NULL: default generator) and splits it: the last
 * round(val_fraction * N) rows go to val, the rest to train. train and val
 * receive new references; d is unchanged. Returns 0 or -1; d and g are
 * borrowed. */
int tg_dataset_split(const tg_dataset *d, double val_fraction,
                     tg_generator *g, tg_dataset *train, tg_dataset *val);

/* Mini-batches over a dataset, as a DataLoader: each epoch visits every
 * row once, in a fresh random order when shuffle is set. */
typedef struct tg_batches tg_batches;
/* A new iterator, which the caller frees with tg_batches_free(). d and g
 * are borrowed: the iterator keeps references of its own to d's tensors,
 * and g (NULL: the default generator) must outlive it. */
tg_batches *tg_batches_new(const tg_dataset *d, int64_t batch_size,
                           bool shuffle, bool drop_last, tg_generator *g);
/* The next batch of the epoch: *x (B, D) and *y (B,) receive new
 * references, and it returns true; false (and NULLs) once the epoch is
 * over, and the next call starts a new epoch. it is borrowed. */
bool tg_batches_next(tg_batches *it, tg_tensor **x, tg_tensor **y);
/* How many batches one epoch has (it is borrowed). */
int64_t tg_batches_per_epoch(const tg_batches *it);
/* Takes ownership of the iterator it and frees it. NULL-safe. */
void tg_batches_free(tg_batches *it);

/* The share of rows of logits (N, C) whose argmax equals the int64 label,
 * in [0, 1]; NaN with an error on bad input. Arguments borrowed. */
double tg_accuracy(const tg_tensor *logits, const tg_tensor *labels);

/* -------------------------------------------------- Python's random module */
/* random.Random of Python 3, bit for bit: the same seed gives the same
 * numbers, the same shuffles and so the same data splits as a Python
 * script (nn/pyrandom.c says how). Arguments borrowed. */

/* A generator apart from the PyTorch-compatible tg_generator, as Python's
 * random is apart from torch's. */
typedef struct tg_pyrandom tg_pyrandom;
/* random.Random(seed): a new generator, which the caller frees with
 * tg_pyrandom_free(). (A negative Python seed n seeds as -n.) */
tg_pyrandom *tg_pyrandom_new(uint64_t seed);
/* r.seed(seed): restarts r as tg_pyrandom_new(seed) starts. r borrowed;
 * NULL does nothing. */
void tg_pyrandom_seed(tg_pyrandom *r, uint64_t seed);
/* Takes ownership of r and frees it. NULL-safe. */
void tg_pyrandom_free(tg_pyrandom *r);
/* r.random(): a double in [0, 1) with 53 random bits (NaN for a NULL r).
 * r borrowed. */
double tg_pyrandom_random(tg_pyrandom *r);
/* r.getrandbits(k) for 0 <= k <= 64, into *out. Returns 0, or -1 with an
 * error (then *out is 0). r borrowed. */
int tg_pyrandom_getrandbits(tg_pyrandom *r, int k, uint64_t *out);
/* r.getrandbits(k) for any k >= 0, as (k + 31) / 32 words of 32 bits in
 * words, the least significant first. Returns 0 or -1; r borrowed. */
int tg_pyrandom_getrandbits_words(tg_pyrandom *r, int k, uint32_t *words);
/* r._randbelow(n): an integer in [0, n), n >= 1, into *out. Returns 0 or
 * -1 (then *out is 0); r borrowed. */
int tg_pyrandom_randbelow(tg_pyrandom *r, uint64_t n, uint64_t *out);
/* r.randrange(start, stop), start < stop, and r.randint(a, b), a <= b
 * (both ends included), into *out. Return 0 or -1 (then *out is 0); r
 * borrowed. */
int tg_pyrandom_randrange(tg_pyrandom *r, int64_t start, int64_t stop,
                          int64_t *out);
int tg_pyrandom_randint(tg_pyrandom *r, int64_t a, int64_t b, int64_t *out);
/* r.shuffle(x) on the array base of n elements of size bytes each, in
 * place (the arguments of qsort). Returns 0 or -1; r borrowed. */
int tg_pyrandom_shuffle(tg_pyrandom *r, void *base, size_t n, size_t size);

/* ------------------------------------------------- words: makemore's data */
/* A list of words from a text file (one word per line, e.g. the names of
 * data/names.txt) and its vocabulary, and the character data sets of the
 * makemore lectures made from it (nn/words.c gives the lectures' Python
 * and the file format). Arguments borrowed. */

/* A word list: its words in their current order and its vocabulary. */
typedef struct tg_words tg_words;
/* The longest word tg_words_load accepts, in characters. */
#define TG_WORD_MAX 256
/* Reads the regular file path: a new word list, which the caller frees
 * with tg_words_free(), or NULL with an error naming the line and column
 * of the first problem (an empty line, a byte that is not printable
 * ASCII, a '.', a word longer than TG_WORD_MAX). A directory, FIFO or
 * device is refused without being read. The vocabulary is '.' (index 0)
 * and then the characters of all the words in sorted order: the lectures'
 * stoi and itos. */
tg_words *tg_words_load(const char *path);
/* Takes ownership of w and frees it. NULL-safe. */
void tg_words_free(tg_words *w);
/* The number of words (-1 for a NULL w). */
int64_t tg_words_count(const tg_words *w);
/* Word i (0 <= i < count) in the current order, borrowed: valid while w
 * lives. NULL with an error for an i out of range. */
const char *tg_words_get(const tg_words *w, int64_t i);
/* The vocabulary as a string, itos[i] = tg_words_vocab(w)[i]: ".abc...z"
 * for names.txt; its length is the vocabulary size. Borrowed: valid while
 * w lives. */
const char *tg_words_vocab(const tg_words *w);
/* stoi[c]: the index of the character c in the vocabulary ('.' is 0), or
 * -1 with an error for a character that is not in it. */
int tg_words_stoi(const tg_words *w, int c);
/* random.shuffle(words) with r: changes the order of w's words (not its
 * vocabulary). Returns 0 or -1; r borrowed. */
int tg_words_shuffle(tg_words *w, tg_pyrandom *r);
/* The lectures' build_dataset(words[begin:end]) in out: x (N, block_size)
 * int64 contexts, starting as block_size '.' and sliding one character at
 * a time, and y (N,) int64, the character that follows each context (then
 * '.'): N = the characters of the words plus one per word. out receives
 * new references (release them with tg_dataset_free). Returns 0 or -1. */
int tg_words_dataset(const tg_words *w, int64_t begin, int64_t end,
                     int block_size, tg_dataset *out);
/* The lectures' split: random.seed(seed); random.shuffle(words) on a copy
 * of w's order (w is unchanged); n1 = int(0.8 * n), n2 = int(0.9 * n);
 * then train, dev and test are build_dataset of words[:n1], words[n1:n2]
 * and words[n2:]. train, dev and test receive new references (release
 * them with tg_dataset_free). Returns 0 or -1. */
int tg_words_split(const tg_words *w, int block_size, uint64_t seed,
                   tg_dataset *train, tg_dataset *dev, tg_dataset *test);

/* --------------------------------------- rewriting a tree of modules */
/* What convert functions (tg_sync_batch_norm_convert in dist/) need to
 * swap one kind of layer for another in a model that is already built. */

/* Puts child in place of m's i-th child (registration order), under the
 * same name, and gives the old child back: the caller frees it with
 * tg_module_free() (its tensors stay alive while anything else holds
 * them). Takes ownership of child, which m frees from now on;
 * on failure (i out of range: child is freed; child already has a parent
 * or contains m: it stays with its owner) returns NULL with an error. A
 * NULL m or child returns NULL silently. m borrowed. */
tg_module *tg_module_replace_child_at(tg_module *m, int i, tg_module *child);

/* A BatchNorm1d or BatchNorm2d module's settings. */
typedef struct tg_batch_norm_module_desc {
    int64_t num_features;
    int spatial; // 1: BatchNorm1d, 2: BatchNorm2d
    tg_batch_norm_config config;
} tg_batch_norm_module_desc;
/* True when m was made by tg_batch_norm1d_new or tg_batch_norm2d_new; then
 * *out (when not NULL) receives its settings. False for any other module
 * and for NULL. Arguments borrowed. */
bool tg_batch_norm_module_info(const tg_module *m,
                               tg_batch_norm_module_desc *out);

/* ------------------------------------------- digits: 8x8 handwritten digits */
/* The 8x8 handwritten digits of data/digits.csv.gz (nn/digits.c gives the
 * format; data/README.md the origin): TG_DIGITS_COUNT images of
 * TG_DIGITS_PIXELS pixels, each pixel 0..16, labelled 0..9. Arguments
 * borrowed. */
#define TG_DIGITS_COUNT 1797
#define TG_DIGITS_PIXELS 64
/* Reads the digits file at path (gzip, or plain text) into out: x
 * (1797, 1, 8, 8) float32 with the pixel values of the file, 0 to 16 (not
 * scaled), y (1797,) int64, the labels 0 to 9, in the order of the file.
 * out receives new references (release them with tg_dataset_free).
 * Returns 0, or -1 with an error naming the line and field of a bad
 * line. */
int tg_digits_load(const char *path, tg_dataset *out);
/* tg_digits_load, then tg_dataset_split(all, val_fraction, g, train, val)
 * with g = tg_generator_new(seed): the last round(val_fraction * 1797)
 * images of a seeded permutation go to val, the rest to train; the same
 * seed gives the same split. val_fraction in (0, 1). train and val
 * receive new references (release them with tg_dataset_free). Returns 0
 * or -1. */
int tg_digits_split(const char *path, double val_fraction, uint64_t seed,
                    tg_dataset *train, tg_dataset *val);

/* ------------------------------------------------------------ image layers */

/* nn.Conv2d(in_channels, out_channels, (kernel_h, kernel_w), stride,
 * padding, dilation, groups, bias): tg_conv2d with the layer's weight and
 * bias on (N, in_channels, H, W) inputs (or one (in_channels, H, W)
 * image). opts as tg_conv2d's (NULL or zeroed: the defaults); groups must
 * divide both channel counts. Parameters "weight" (out_channels,
 * in_channels / groups, kernel_h, kernel_w) and, when bias, "bias"
 * (out_channels,), float32, initialised as PyTorch 1.13 does and in its
 * order: weight U(-b, b) with b = sqrt(3) * sqrt(2 / (1 + 5)) / sqrt(fan_in)
 * (kaiming_uniform_ with a = sqrt(5)), then bias U(-1/sqrt(fan_in),
 * 1/sqrt(fan_in)), fan_in = in_channels / groups * kernel_h * kernel_w:
 * after tg_manual_seed(s) they equal those of torch.manual_seed(s);
 * nn.Conv2d(...). Prints as PyTorch does, "Conv2d(1, 8, kernel_size=(3, 3),
 * stride=(1, 1), padding=(1, 1))". The caller frees the module with
 * tg_module_free() (unless a parent takes it); opts borrowed. */
tg_module *tg_conv2d_new(int64_t in_channels, int64_t out_channels,
                         int64_t kernel_h, int64_t kernel_w,
                         const tg_conv2d_options *opts, bool bias);
/* nn.MaxPool2d(kernel_size, stride, padding) and nn.AvgPool2d(kernel_size,
 * stride, padding): tg_max_pool2d and tg_avg_pool2d with square windows;
 * stride 0 means kernel_size (PyTorch's stride=None), 0 <= padding <=
 * kernel_size / 2. No parameters. Print as "MaxPool2d(kernel_size=2,
 * stride=2, padding=0, dilation=1, ceil_mode=False)" and
 * "AvgPool2d(kernel_size=2, stride=2, padding=0)". The caller frees the
 * module with tg_module_free() (unless a parent takes it). */
tg_module *tg_max_pool2d_new(int64_t kernel_size, int64_t stride,
                             int64_t padding);
tg_module *tg_avg_pool2d_new(int64_t kernel_size, int64_t stride,
                             int64_t padding);

/* ------------------------------------------- GroupNorm and InstanceNorm */
/* nn/group_norm.c; the ops are tg_group_norm and tg_instance_norm. */

/* nn.GroupNorm(num_groups, num_channels, eps, affine): splits the C =
 * num_channels channels of an (N, C, *) input into num_groups groups and
 * normalises each group of each sample (tg_group_norm). num_channels must
 * be divisible by num_groups. With affine, parameters "weight" (ones) and
 * "bias" (zeros) of shape (C,). PyTorch's defaults: eps 1e-5, affine true.
 * Same in train and eval. float32; tg_module_to_dtype converts. Prints as
 * "GroupNorm(4, 16, eps=1e-05, affine=True)". New module: the caller frees
 * it with tg_module_free() (unless a parent takes it). */
tg_module *tg_group_norm_new(int64_t num_groups, int64_t num_channels,
                             double eps, bool affine);
/* nn.InstanceNorm1d(num_features, eps, momentum, affine,
 * track_running_stats): input (N, C, L), or (C, L) for one sample.
 * nn.InstanceNorm2d: input (N, C, H, W), or (C, H, W). Each channel of
 * each sample is normalised over its own values (tg_instance_norm). With
 * affine, parameters "weight" (ones) and "bias" (zeros) of shape (C,);
 * with track_running_stats, buffers "running_mean" (zeros), "running_var"
 * (ones) and "num_batches_tracked" (int64 0, kept for checkpoints and, as
 * in PyTorch, never counted): training updates the running statistics by
 * momentum, and eval normalises with them. PyTorch's defaults: eps 1e-5,
 * momentum 0.1, affine false, track_running_stats false. Prints as
 * "InstanceNorm2d(16, eps=1e-05, momentum=0.1, affine=False,
 * track_running_stats=False)". New module: the caller frees it with
 * tg_module_free() (unless a parent takes it). */
tg_module *tg_instance_norm1d_new(int64_t num_features, double eps,
                                  double momentum, bool affine,
                                  bool track_running_stats);
tg_module *tg_instance_norm2d_new(int64_t num_features, double eps,
                                  double momentum, bool affine,
                                  bool track_running_stats);

#ifdef __cplusplus
}
#endif

#endif
