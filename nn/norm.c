/*
 * nn/norm.c - the normalisation layers: LayerNorm, BatchNorm1d and
 * BatchNorm2d, as torch.nn. They own their parameters and buffers and call
 * the fused ops tg_layer_norm and tg_batch_norm_ex (autograd/ops/), which
 * hold the math; here is only the layer state: affine parameters, running
 * statistics, num_batches_tracked, momentum None, train and eval mode.
 */
#include "nn.h"

#include "../autograd/internal.h"
#include "internal.h"

#include <assert.h>
#include <math.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------- LayerNorm */

typedef struct layer_norm_data {
    int ndim;
    int64_t shape[TG_MAX_DIMS]; // normalized_shape
    double eps;
    bool affine;
} layer_norm_data;

static tg_tensor *layer_norm_forward(tg_module *m, const tg_tensor *x)
{
    const layer_norm_data *d = tg_module_data(m);
    tg_tensor *w = d->affine ? tg_module_parameter(m, "weight") : NULL;
    tg_tensor *b = d->affine ? tg_module_parameter(m, "bias") : NULL;
    if (d->affine && (!w || !b))
        return NULL;
    return tg_layer_norm(x, d->shape, d->ndim, w, b, d->eps);
}

static void layer_norm_describe(const tg_module *m, char *buf, size_t size)
{
    const layer_norm_data *d = tg_module_data_const(m);
    char shape[TG_SHAPE_STR_MAX];
    size_t len = 0;
    shape[len++] = '(';
    for (int i = 0; i < d->ndim; i++)
        len += (size_t)snprintf(shape + len, sizeof shape - len, "%s%lld",
                                i ? ", " : "", (long long)d->shape[i]);
    snprintf(shape + len, sizeof shape - len, "%s)", d->ndim == 1 ? "," : "");
    char eps[32];
    snprintf(buf, size, "%s, eps=%s, elementwise_affine=%s", shape,
             tg_py_float(d->eps, eps), tg_py_bool(d->affine));
}

static const tg_module_type layer_norm_type = {
    "LayerNorm", layer_norm_forward, layer_norm_describe,
    sizeof(layer_norm_data)};

tg_module *tg_layer_norm_new(const int64_t *normalized_shape, int ndim,
                             double eps, bool elementwise_affine)
{
    const char *fn = "tg_layer_norm_new";
    if (ndim < 1 || ndim > TG_MAX_DIMS) {
        tg_error(fn,
                 "normalized_shape has %d dims\n"
                 "  rule: LayerNorm normalises over 1..%d trailing dims\n"
                 "  hint: tg_layer_norm_new(TG_SHAPE(768), 1e-5, true) "
                 "normalises rows of 768",
                 ndim, TG_MAX_DIMS);
        return NULL;
    }
    if (!normalized_shape) {
        tg_error(fn,
                 "normalized_shape is NULL but has %d dim%s\n"
                 "  rule: normalized_shape is an array of ndim sizes\n"
                 "  hint: tg_layer_norm_new(TG_SHAPE(768), 1e-5, true) "
                 "normalises rows of 768",
                 ndim, ndim == 1 ? "" : "s");
        return NULL;
    }
    if (tg_shape_check(fn, normalized_shape, ndim) < 0)
        return NULL;
    if (tg_norm_eps_check(fn, eps) < 0)
        return NULL;
    tg_module *m = tg_module_new(&layer_norm_type);
    if (!m)
        return NULL;
    layer_norm_data *d = tg_module_data(m);
    d->ndim = ndim;
    memcpy(d->shape, normalized_shape, (size_t)ndim * sizeof *d->shape);
    d->eps = eps;
    d->affine = elementwise_affine;
    if (elementwise_affine &&
        (tg_module_add_filled(m, "weight", true, d->shape, ndim, 1.0,
                              TG_FLOAT32) < 0 ||
         tg_module_add_filled(m, "bias", true, d->shape, ndim, 0.0,
                              TG_FLOAT32) < 0)) {
        tg_module_free(m);
        return NULL;
    }
    return m;
}

/* ------------------------------------------------------------- BatchNorm */

typedef struct batch_norm_data {
    int64_t num_features;
    tg_batch_norm_config config;
    int spatial; // 1: BatchNorm1d, 2: BatchNorm2d
} batch_norm_data;

tg_batch_norm_config tg_batch_norm_config_defaults(void)
{
    return (tg_batch_norm_config){.eps = 1e-5, .momentum = 0.1,
                                  .cumulative = false, .no_affine = false,
                                  .no_running_stats = false,
                                  .correction = 0};
}

/* config with every field left 0 replaced by its default (and a literal
 * 0 by 0.0); NULL: the defaults. */
tg_batch_norm_config tg_batch_norm_config_resolve(const tg_batch_norm_config *config)
{
    tg_batch_norm_config d = tg_batch_norm_config_defaults();
    if (!config)
        return d;
    tg_batch_norm_config c = *config;
    c.eps = tg_option_or(c.eps, d.eps);
    c.momentum = tg_option_or(c.momentum, d.momentum);
    return c;
}

/* The count num_batches_tracked will hold after this batch, in *next. A
 * count that is negative or cannot grow (a checkpoint written by hand, or
 * damaged) is refused here, before anything moves. 0 or -1. */
static int batch_count_next(const char *layer, const tg_tensor *nbt,
                            int64_t *next)
{
    assert(nbt->dtype == TG_INT64 && nbt->numel == 1); // as made
    int64_t n = *(const int64_t *)tg_base_ptr(nbt);
    if (n < 0 || n == INT64_MAX) {
        tg_error("tg_module_forward",
                 "%s's num_batches_tracked is %lld and cannot count this "
                 "batch\n"
                 "  rule: num_batches_tracked counts the training batches, "
                 "in [0, %lld) so that one more fits in int64\n"
                 "  hint: was the checkpoint written by another program? "
                 "setting the buffer \"num_batches_tracked\" to 0 starts "
                 "the count again",
                 layer, (long long)n, (long long)INT64_MAX);
        return -1;
    }
    *next = n + 1;
    return 0;
}

/* As nn.BatchNorm's forward: batch statistics in training (or always,
 * without running statistics), running ones in eval; in training the
 * running statistics move by momentum, or by 1 / num_batches_tracked when
 * cumulative, and num_batches_tracked counts the batches. */
static tg_tensor *batch_norm_forward(tg_module *m, const tg_tensor *x)
{
    const batch_norm_data *d = tg_module_data(m);
    const tg_batch_norm_config *c = &d->config;
    const char *name = tg_module_get_type(m)->name;
    bool ok_dims = d->spatial == 1 ? x->ndim == 2 || x->ndim == 3
                                   : x->ndim == 4;
    if (!ok_dims) {
        char s[TG_SHAPE_STR_MAX];
        tg_error("tg_module_forward",
                 "%s expected %s input, got shape %s (%d dim%s)\n"
                 "  rule: %s\n"
                 "  hint: %s",
                 name, d->spatial == 1 ? "2D or 3D" : "4D", tg_shape_str(x, s),
                 x->ndim, x->ndim == 1 ? "" : "s",
                 d->spatial == 1
                     ? "BatchNorm1d takes (N, C) or (N, C, L)"
                     : "BatchNorm2d takes (N, C, H, W)",
                 d->spatial == 1
                     ? "images (N, C, H, W) go to BatchNorm2d; one sample "
                       "of C features is tg_unsqueeze(x, 0) (but training "
                       "needs more than one value per channel)"
                     : "features (N, C) or sequences (N, C, L) go to "
                       "BatchNorm1d");
        return NULL;
    }
    bool training = tg_module_is_training(m);
    tg_tensor *w = !c->no_affine ? tg_module_parameter(m, "weight") : NULL;
    tg_tensor *b = !c->no_affine ? tg_module_parameter(m, "bias") : NULL;
    tg_tensor *rm = NULL, *rv = NULL, *nbt = NULL;
    if (!c->no_running_stats) {
        rm = tg_module_buffer(m, "running_mean");
        rv = tg_module_buffer(m, "running_var");
        nbt = tg_module_buffer(m, "num_batches_tracked");
        if (!rm || !rv || !nbt)
            return NULL;
    }
    if (!c->no_affine && (!w || !b))
        return NULL;
    /* c holds the values themselves (a 0 is a literal 0) */
    tg_batch_norm_options o = {
        .eval = !training && !c->no_running_stats,
        .momentum = tg_option_literal(c->momentum),
        .eps = tg_option_literal(c->eps), .correction = c->correction};
    bool count = training && !c->no_running_stats;
    int64_t batches = 0; // this one included
    if (count && batch_count_next(name, nbt, &batches) < 0)
        return NULL; // checked before the running statistics move
    if (count && c->cumulative)
        o.momentum = 1.0 / (double)batches;
    /* The running statistics are updated only in training; in eval they
     * are read (and without tracking there are none). */
    tg_tensor *y = tg_batch_norm_ex(x, rm, rv, w, b, &o, NULL, NULL);
    if (y && count) { // exact, as int64 (a double stops counting at 2^53)
        *(int64_t *)tg_base_ptr(nbt) = batches;
        nbt->storage->version++;
    }
    return y;
}

static void batch_norm_describe(const tg_module *m, char *buf, size_t size)
{
    const batch_norm_data *d = tg_module_data_const(m);
    const tg_batch_norm_config *c = &d->config;
    char momentum[32] = "None", eps[32];
    if (!c->cumulative)
        tg_py_float(c->momentum, momentum);
    int len = snprintf(buf, size,
                       "%lld, eps=%s, momentum=%s, affine=%s, "
                       "track_running_stats=%s",
                       (long long)d->num_features, tg_py_float(c->eps, eps),
                       momentum,
                       tg_py_bool(!c->no_affine),
                       tg_py_bool(!c->no_running_stats));
    if (c->correction && len > 0 && (size_t)len < size)
        snprintf(buf + len, size - (size_t)len, ", correction=%lld",
                 (long long)c->correction);
}

static const tg_module_type batch_norm1d_type = {
    "BatchNorm1d", batch_norm_forward, batch_norm_describe,
    sizeof(batch_norm_data)};
static const tg_module_type batch_norm2d_type = {
    "BatchNorm2d", batch_norm_forward, batch_norm_describe,
    sizeof(batch_norm_data)};

static tg_module *batch_norm_new(const char *fn, const tg_module_type *type,
                                 int spatial, int64_t num_features,
                                 const tg_batch_norm_config *config)
{
    tg_batch_norm_config c = tg_batch_norm_config_resolve(config);
    if (num_features < 1) {
        tg_error(fn,
                 "num_features is %lld\n"
                 "  rule: num_features is the channel count C >= 1 (dim 1 "
                 "of the input)\n"
                 "  hint: pass x.shape[1], e.g. %s(64, NULL) for inputs "
                 "(N, 64, ...)",
                 (long long)num_features, fn);
        return NULL;
    }
    /* The same checks as the op, made now rather than at the first batch. */
    tg_batch_norm_options o = {.momentum = tg_option_literal(c.momentum),
                               .eps = tg_option_literal(c.eps),
                               .correction = c.correction};
    if (c.cumulative)
        o.momentum = TG_EXACT_ZERO;
    if (tg_batch_norm_options_check(fn, &o) < 0)
        return NULL;
    tg_module *m = tg_module_new(type);
    if (!m)
        return NULL;
    batch_norm_data *d = tg_module_data(m);
    d->num_features = num_features;
    d->config = c;
    d->spatial = spatial;
    if (tg_module_add_norm_tensors(m, num_features, !c.no_affine,
                                   !c.no_running_stats) < 0) {
        tg_module_free(m);
        return NULL;
    }
    return m;
}

tg_module *tg_batch_norm1d_new(int64_t num_features,
                               const tg_batch_norm_config *config)
{
    return batch_norm_new("tg_batch_norm1d_new", &batch_norm1d_type, 1,
                          num_features, config);
}

tg_module *tg_batch_norm2d_new(int64_t num_features,
                               const tg_batch_norm_config *config)
{
    return batch_norm_new("tg_batch_norm2d_new", &batch_norm2d_type, 2,
                          num_features, config);
}

/* ------------------------------------------ BatchNorm seen from outside */

bool tg_batch_norm_module_info(const tg_module *m,
                               tg_batch_norm_module_desc *out)
{
    if (!m || (tg_module_get_type(m) != &batch_norm1d_type &&
               tg_module_get_type(m) != &batch_norm2d_type))
        return false;
    const batch_norm_data *d = tg_module_data_const(m);
    if (out)
    {
        // a literal 0 stays one when the config is passed back
        tg_batch_norm_config c = d->config;
        c.eps = tg_option_literal(c.eps);
        c.momentum = tg_option_literal(c.momentum);
        *out = (tg_batch_norm_module_desc){d->num_features, d->spatial, c};
    }
    return true;
}
