/*
 * dist/sync_batch_norm_module.c - SyncBatchNorm as a layer (PyTorch's
 * nn.SyncBatchNorm) and the convert function that swaps it in for every
 * BatchNorm1d and BatchNorm2d of a model (PyTorch's
 * nn.SyncBatchNorm.convert_sync_batchnorm).
 *
 * What it is: a module around tg_sync_batch_norm with BatchNorm's
 * parameters, buffers and settings, so that a model written with local
 * BatchNorm trains data-parallel with the statistics of the whole batch.
 * What it is not: new arithmetic (sync_batch_norm.c and
 * autograd/ops/sync_batch_norm_math.c have it). In eval mode it reads the
 * running statistics and sends nothing, as PyTorch's does.
 */
#include "internal.h"

#include "../autograd/internal.h"
#include "../nn/internal.h"
#include "../tensor/internal.h"

#include <stdio.h>

typedef struct sync_bn_data {
    int64_t num_features;
    tg_batch_norm_config config;
    tg_process_group *pg; // borrowed: must outlive the module
} sync_bn_data;

/* As nn.SyncBatchNorm's forward: in training (or always, without running
 * statistics) the statistics of every rank's rows, exchanged; in eval the
 * running statistics, with no communication. num_batches_tracked counts
 * the training batches, and momentum None (cumulative) is
 * 1 / num_batches_tracked, as in BatchNorm. */
static tg_tensor *sync_bn_forward(tg_module *m, const tg_tensor *x)
{
    const sync_bn_data *d = tg_module_data(m);
    const tg_batch_norm_config *c = &d->config;
    // x of fewer than 2 dims is refused by tg_sync_batch_norm
    bool training = tg_module_is_training(m) || !!c->no_running_stats;
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
    bool count = tg_module_is_training(m) && !c->no_running_stats;
    int64_t batches = count ? *(const int64_t *)tg_base_ptr(nbt) + 1 : 0;
    double momentum =
        count && c->cumulative ? 1.0 / (double)batches : c->momentum;
    tg_tensor *y = tg_sync_batch_norm(d->pg, x, rm, rv, w, b, training,
                                      momentum, c->eps);
    if (y && count) {
        *(int64_t *)tg_base_ptr(nbt) = batches;
        nbt->storage->version++;
    }
    return y;
}

/* PyTorch's repr: SyncBatchNorm(3, eps=1e-05, momentum=0.1, affine=True,
 * track_running_stats=True). */
static void sync_bn_describe(const tg_module *m, char *buf, size_t size)
{
    const sync_bn_data *d = tg_module_data_const(m);
    const tg_batch_norm_config *c = &d->config;
    char momentum[32] = "None", eps[32];
    if (!c->cumulative)
        tg_py_float(c->momentum, momentum);
    snprintf(buf, size,
             "%lld, eps=%s, momentum=%s, affine=%s, track_running_stats=%s",
             (long long)d->num_features, tg_py_float(c->eps, eps), momentum,
             tg_py_bool(!c->no_affine), tg_py_bool(!c->no_running_stats));
}

static const tg_module_type sync_bn_type = {
    "SyncBatchNorm", sync_bn_forward, sync_bn_describe, sizeof(sync_bn_data)};

/* A SyncBatchNorm with the given settings and no tensors yet, or NULL
 * after an error under fn. */
static tg_module *sync_bn_make(const char *fn, tg_process_group *pg,
                               int64_t num_features,
                               const tg_batch_norm_config *config)
{
    // fields left 0 become their defaults, once, here
    tg_batch_norm_config rc = tg_batch_norm_config_resolve(config);
    const tg_batch_norm_config *c = &rc;
    if (num_features < 1) {
        tg_error(fn,
                 "num_features is %lld\n"
                 "  rule: num_features is the channel count C >= 1 (dim 1 "
                 "of the input)\n"
                 "  hint: pass x.shape[1], e.g. tg_sync_batch_norm_new(pg, "
                 "64, NULL) for inputs (N, 64, ...)",
                 (long long)num_features);
        return NULL;
    }
    if (c->correction != 0) {
        tg_error(fn,
                 "correction is %lld\n"
                 "  rule: SyncBatchNorm normalises with the biased variance "
                 "(correction 0), as PyTorch's does\n"
                 "  hint: leave correction at 0 "
                 "(tg_batch_norm_config_defaults())",
                 (long long)c->correction);
        return NULL;
    }
    tg_batch_norm_options o = {
        .momentum = c->cumulative ? TG_EXACT_ZERO : tg_option_literal(c->momentum),
        .eps = tg_option_literal(c->eps)};
    if (tg_batch_norm_options_check(fn, &o) < 0)
        return NULL;
    tg_module *m = tg_module_new(&sync_bn_type);
    if (!m)
        return NULL;
    sync_bn_data *d = tg_module_data(m);
    *d = (sync_bn_data){num_features, *c, pg};
    return m;
}

tg_module *tg_sync_batch_norm_new(tg_process_group *pg, int64_t num_features,
                                  const tg_batch_norm_config *config)
{
    if (!pg)
        return NULL;
    tg_module *m = sync_bn_make("tg_sync_batch_norm_new", pg, num_features,
                                config);
    if (!m)
        return NULL;
    const tg_batch_norm_config c =
        ((const sync_bn_data *)tg_module_data_const(m))->config;
    if (tg_module_add_norm_tensors(m, num_features, !c.no_affine,
                                   !c.no_running_stats) < 0) {
        tg_module_free(m);
        return NULL;
    }
    return m;
}

/* ------------------------------------------------------------ converting */

/* A SyncBatchNorm holding bn's own tensors (the same parameter and buffer
 * tensors, not copies: an optimiser that holds them keeps working), its
 * settings and its mode. */
static tg_module *sync_bn_from(const tg_module *bn, tg_process_group *pg)
{
    static const char *fn = "tg_sync_batch_norm_convert";
    tg_batch_norm_module_desc desc;
    (void)tg_batch_norm_module_info(bn, &desc);
    tg_module *m = sync_bn_make(fn, pg, desc.num_features, &desc.config);
    if (!m)
        return NULL;
    static const char *const params[] = {"weight", "bias"};
    static const char *const buffers[] = {"running_mean", "running_var",
                                          "num_batches_tracked"};
    int rc = 0;
    for (int k = 0; k < 2 && !desc.config.no_affine; k++)
        rc |= tg_module_add_parameter(m, params[k],
                                      tg_module_parameter(bn, params[k]));
    for (int k = 0; k < 3 && !desc.config.no_running_stats; k++)
        rc |= tg_module_add_buffer(m, buffers[k],
                                   tg_module_buffer(bn, buffers[k]));
    if (rc) {
        tg_module_free(m);
        return NULL;
    }
    tg_module_train(m, tg_module_is_training(bn));
    return m;
}

/* Replaces the BatchNorm children below m; the number replaced, or -1. */
static int convert_children(tg_module *m, tg_process_group *pg)
{
    int done = 0;
    for (int i = 0; i < tg_module_num_children(m); i++) {
        tg_module *c = tg_module_child_at(m, i);
        if (!tg_batch_norm_module_info(c, NULL)) {
            int n = convert_children(c, pg);
            if (n < 0)
                return -1;
            done += n;
            continue;
        }
        tg_module *s = sync_bn_from(c, pg);
        tg_module *old = s ? tg_module_replace_child_at(m, i, s) : NULL;
        if (!old)
            return -1;
        tg_module_free(old);
        done++;
    }
    return done;
}

int tg_sync_batch_norm_convert(tg_module **m, tg_process_group *pg)
{
    if (!m || !*m || !pg)
        return -1;
    if (!tg_batch_norm_module_info(*m, NULL))
        return convert_children(*m, pg);
    tg_module *s = sync_bn_from(*m, pg);
    if (!s)
        return -1;
    tg_module_free(*m);
    *m = s;
    return 1;
}
