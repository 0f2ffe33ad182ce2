/*
 * nn/nn.h - layers with parameters and state, as torch.nn: the module
 * object (parameters, buffers, children, train/eval mode) and the
 * normalisation layers LayerNorm, BatchNorm1d and BatchNorm2d.
 *
 * A module is an object, not a tensor: it is not reference-counted. The
 * code that makes one frees it with tg_module_free(), which releases its
 * parameters, buffers and children. Tensors it returns are NEW references
 * (tg_module_forward) or BORROWED from the module (tg_module_parameter,
 * tg_module_buffer, the named lists): retain one to keep it longer than the
 * module.
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

/* A new module in training mode with no tensors. NULL on error. */
tg_module *tg_module_new(const tg_module_type *type);
/* Frees m, its children, and its references to its tensors. NULL-safe. */
void tg_module_free(tg_module *m);
/* The type's data_size bytes, zeroed at first (NULL when 0). */
void *tg_module_data(tg_module *m);
const void *tg_module_data_const(const tg_module *m);
const tg_module_type *tg_module_get_type(const tg_module *m);

/* Registers t (retained) under name. A parameter is made to require grad;
 * it must be a float leaf. A buffer must not require grad. Names are
 * unique within a module and contain no '.'. Returns 0 or -1. */
int tg_module_add_parameter(tg_module *m, const char *name, tg_tensor *t);
int tg_module_add_buffer(tg_module *m, const char *name, tg_tensor *t);
/* Makes child part of m under name (m frees it from now on, also when
 * this fails). A module has one parent: a child that already has one (or
 * m itself) is refused and stays with its owner; layers share weights by
 * registering the same parameter tensor instead. Returns 0 or -1. */
int tg_module_add_child(tg_module *m, const char *name, tg_module *child);

/* The module applied to x, as module(x) in PyTorch. New reference. */
tg_tensor *tg_module_forward(tg_module *m, const tg_tensor *x);

/* Training (true) or eval (false) mode, for m and all its children:
 * module.train(mode) / module.eval(). */
void tg_module_train(tg_module *m, bool training);
bool tg_module_is_training(const tg_module *m);

/* A parameter or buffer by its dotted name ("weight", "0.running_var"),
 * borrowed; NULL with an error listing the names there are. */
tg_tensor *tg_module_parameter(const tg_module *m, const char *name);
tg_tensor *tg_module_buffer(const tg_module *m, const char *name);
/* A child by name (borrowed), or NULL with an error. */
tg_module *tg_module_child(const tg_module *m, const char *name);

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
 * error. */
int tg_module_named_parameters(const tg_module *m, tg_named_tensor *out,
                               int max);
int tg_module_named_buffers(const tg_module *m, tg_named_tensor *out,
                            int max);
/* Total number of parameter elements (a tied tensor counted once). */
int64_t tg_module_num_elements(const tg_module *m);

/* tg_zero_grad on every parameter. */
void tg_module_zero_grad(tg_module *m);
/* Converts every float parameter and buffer to dtype (module.double() /
 * .float()); int64 buffers stay. requires_grad is kept, a .grad is
 * converted along, and tied tensors stay tied. Tensors previously borrowed
 * from m are no longer m's. Returns 0, or -1 leaving m unchanged. */
int tg_module_to_dtype(tg_module *m, tg_dtype dtype);

/* The module as PyTorch prints it: "BatchNorm1d(3, eps=1e-05, momentum=
 * 0.1, affine=True, track_running_stats=True)", children indented below
 * their parent. Returns a malloc'd string the caller frees, or NULL. */
char *tg_module_format(const tg_module *m);
int tg_module_print(const tg_module *m); // to stdout, with a newline

/* ---------------------------------------------------------- normalisation */

/* nn.LayerNorm(normalized_shape, eps, elementwise_affine): normalises
 * over the trailing dims given by normalized_shape (1..8 dims) with
 * tg_layer_norm. With elementwise_affine, parameters "weight" (ones) and
 * "bias" (zeros) of shape normalized_shape. float32; tg_module_to_dtype
 * converts. Same in train and eval mode. */
tg_module *tg_layer_norm_new(const int64_t *normalized_shape, int ndim,
                             double eps, bool elementwise_affine);

typedef struct tg_batch_norm_config {
    double eps;      // 1e-5
    double momentum; // 0.1; ignored when cumulative
    /* PyTorch's momentum=None: the running statistics are the plain
     * average of every batch seen, momentum = 1 / num_batches_tracked (the
     * first batch replaces the initial values). */
    bool cumulative;
    bool affine;              // "weight" (ones) and "bias" (zeros), (C,)
    /* Buffers "running_mean" (zeros), "running_var" (ones) and
     * "num_batches_tracked" (int64 0-d); without them batch statistics are
     * used in eval too. */
    bool track_running_stats;
    /* 0: PyTorch's biased training variance; 1: makemore's unbiased one
     * (see tg_batch_norm_options). */
    int64_t correction;
} tg_batch_norm_config;
/* eps 1e-5, momentum 0.1, not cumulative, affine, tracking, correction 0:
 * PyTorch's defaults. */
tg_batch_norm_config tg_batch_norm_config_default(void);

/* nn.BatchNorm1d(num_features): input (N, C) or (N, C, L).
 * nn.BatchNorm2d(num_features): input (N, C, H, W).
 * config NULL means the defaults. float32; tg_module_to_dtype converts. */
tg_module *tg_batch_norm1d_new(int64_t num_features,
                               const tg_batch_norm_config *config);
tg_module *tg_batch_norm2d_new(int64_t num_features,
                               const tg_batch_norm_config *config);

#ifdef __cplusplus
}
#endif

#endif
