/*
 * Filling a module's parameters and buffers: the starting values that the
 * layers (Linear, Conv2d) and the normalisation modules share.
 */
#include "nn.h"

#include "internal.h"

int tg_module_add_filled(tg_module *m, const char *name, bool parameter,
                         const int64_t *shape, int ndim, double value,
                         tg_dtype dtype)
{
    tg_tensor *t = tg_full(shape, ndim, value, dtype);
    int rc = !t ? -1
             : parameter ? tg_module_add_parameter(m, name, t)
                         : tg_module_add_buffer(m, name, t);
    tg_release(t);
    return rc;
}

int tg_module_add_uniform(tg_module *m, const char *name,
                          const int64_t *shape, int ndim, double bound)
{
    tg_tensor *t = tg_empty(shape, ndim, TG_FLOAT32);
    int rc = !t || tg_uniform_(t, -bound, bound, NULL) < 0
                 ? -1
                 : tg_module_add_parameter(m, name, t);
    tg_release(t);
    return rc;
}

int tg_module_add_norm_tensors(tg_module *m, int64_t num_features,
                               bool affine, bool running_stats)
{
    const int64_t C = num_features;
    int rc = 0;
    if (affine) {
        rc |= tg_module_add_filled(m, "weight", true, &C, 1, 1.0, TG_FLOAT32);
        rc |= tg_module_add_filled(m, "bias", true, &C, 1, 0.0, TG_FLOAT32);
    }
    if (running_stats) {
        rc |= tg_module_add_filled(m, "running_mean", false, &C, 1, 0.0,
                                   TG_FLOAT32);
        rc |= tg_module_add_filled(m, "running_var", false, &C, 1, 1.0,
                                   TG_FLOAT32);
        rc |= tg_module_add_filled(m, "num_batches_tracked", false, NULL, 0,
                                   0.0, TG_INT64);
    }
    return rc ? -1 : 0;
}
