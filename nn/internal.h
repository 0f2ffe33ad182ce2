/*
 * nn/internal.h - what the files of nn/ share and users do not see: how
 * a module that cannot be adopted is let go, and the Python spellings used
 * when a module prints its arguments as PyTorch does.
 */
#ifndef TG_NN_INTERNAL_H
#define TG_NN_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>

typedef struct tg_module tg_module;

/* Frees m unless it is a child of another module (whose parent frees
 * it): what a function that takes a module does with one it cannot
 * adopt. NULL-safe. */
void tg_module_drop(tg_module *m);

/* "True" / "False". */
const char *tg_py_bool(bool b);
/* Writes v as Python's repr(float) does: the fewest digits that read back
 * as v, positional for exponents -4..15 with at least one decimal ("1.0",
 * "0.1"), scientific otherwise ("1e-05", "1.5e+16"). Returns buf (32
 * bytes). */
const char *tg_py_float(double v, char buf[32]);

/* Writes every tensor of items[0 .. n) as <dir>/<name>.npy, atomically
 * (all of them or, on failure, none: the previous content of dir stays),
 * as tg_module_save does; errors name fn. Returns 0 or -1; arguments
 * borrowed. */
typedef struct tg_named_tensor tg_named_tensor;
int tg_checkpoint_write(const char *fn, const char *dir,
                        const tg_named_tensor *items, int n);

/* config with every field left 0 replaced by its default (a literal 0,
 * TG_EXACT_ZERO, becomes 0.0); NULL: the defaults (nn/norm.c). */
tg_batch_norm_config
tg_batch_norm_config_resolve(const tg_batch_norm_config *config);

/* Registers a new tensor of shape, full of value (tg_full), as a
 * parameter of m when parameter is true, else as a buffer: 0, or -1 with
 * the error set. The module keeps its own reference. */
/* A normalisation layer's tensors, as PyTorch makes them: with affine,
 * parameters "weight" (ones) and "bias" (zeros) of shape (num_features,);
 * with running_stats, buffers "running_mean" (zeros), "running_var" (ones)
 * and "num_batches_tracked" (int64 0-d, 0). float32. 0 or -1. m borrowed. */
int tg_module_add_norm_tensors(tg_module *m, int64_t num_features,
                               bool affine, bool running_stats);
int tg_module_add_filled(tg_module *m, const char *name, bool parameter,
                         const int64_t *shape, int ndim, double value,
                         tg_dtype dtype);
/* Registers a new float32 tensor of shape drawn from U(-bound, bound) with
 * the default generator (tg_uniform_, PyTorch's CPU draw) as a parameter of
 * m: 0, or -1 with the error set. */
int tg_module_add_uniform(tg_module *m, const char *name,
                          const int64_t *shape, int ndim, double bound);

#endif
