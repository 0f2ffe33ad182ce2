/*
 * nn/group_norm.c - the layers GroupNorm, InstanceNorm1d and
 * InstanceNorm2d, as torch.nn. They own their parameters and buffers and
 * call the ops tg_group_norm and tg_instance_norm
 * (autograd/ops/group_norm.c), which hold the math; here is only the
 * layer state: the affine parameters, the running statistics, train and
 * eval mode, and inputs without a batch dim.
 */
#include "nn.h"

#include "../autograd/internal.h"
#include "internal.h"

#include <stdio.h>

/* ------------------------------------------------------------- GroupNorm */

typedef struct group_norm_data {
    int64_t num_groups, num_channels;
    double eps;
    bool affine;
} group_norm_data;

static tg_tensor *group_norm_forward(tg_module *m, const tg_tensor *x)
{
    const group_norm_data *d = tg_module_data(m);
    tg_tensor *w = d->affine ? tg_module_parameter(m, "weight") : NULL;
    tg_tensor *b = d->affine ? tg_module_parameter(m, "bias") : NULL;
    if (d->affine && (!w || !b))
        return NULL;
    return tg_group_norm(x, d->num_groups, w, b, d->eps);
}

static void group_norm_describe(const tg_module *m, char *buf, size_t size)
{
    const group_norm_data *d = tg_module_data_const(m);
    char eps[32];
    snprintf(buf, size, "%lld, %lld, eps=%s, affine=%s",
             (long long)d->num_groups, (long long)d->num_channels,
             tg_py_float(d->eps, eps), tg_py_bool(d->affine));
}

static const tg_module_type group_norm_type = {
    "GroupNorm", group_norm_forward, group_norm_describe,
    sizeof(group_norm_data)};

tg_module *tg_group_norm_new(int64_t num_groups, int64_t num_channels,
                             double eps, bool affine)
{
    const char *fn = "tg_group_norm_new";
    if (num_channels < 1 || num_groups < 1 ||
        num_channels % num_groups != 0) {
        tg_error(fn,
                 "cannot split %lld channels into %lld groups\n"
                 "  rule: num_channels >= 1 and num_groups >= 1 divides it "
                 "(num_channels must be divisible by num_groups)\n"
                 "  hint: tg_group_norm_new(4, 16, 1e-5, true) makes 4 "
                 "groups of 4 channels",
                 (long long)num_channels, (long long)num_groups);
        return NULL;
    }
    if (tg_norm_eps_check(fn, eps) < 0)
        return NULL;
    tg_module *m = tg_module_new(&group_norm_type);
    if (!m)
        return NULL;
    group_norm_data *d = tg_module_data(m);
    d->num_groups = num_groups;
    d->num_channels = num_channels;
    d->eps = eps;
    d->affine = affine;
    const int64_t C = num_channels;
    if (affine &&
        (tg_module_add_filled(m, "weight", true, &C, 1, 1.0, TG_FLOAT32) < 0 ||
         tg_module_add_filled(m, "bias", true, &C, 1, 0.0, TG_FLOAT32) < 0)) {
        tg_module_free(m);
        return NULL;
    }
    return m;
}

/* ---------------------------------------------------------- InstanceNorm */

typedef struct instance_norm_data {
    int64_t num_features;
    double eps, momentum;
    bool affine, track_running_stats;
    int spatial; // 1: InstanceNorm1d, 2: InstanceNorm2d
} instance_norm_data;

/* As nn.InstanceNorm's forward: the input's statistics in training (or
 * always, without running statistics), which then move the running ones;
 * the running statistics in eval. An input without the batch dim
 * ((C, L), (C, H, W)) is normalised as a batch of one. As in PyTorch,
 * num_batches_tracked is kept (for checkpoints) but not counted. */
static tg_tensor *instance_norm_forward(tg_module *m, const tg_tensor *x)
{
    const instance_norm_data *d = tg_module_data(m);
    const char *name = tg_module_get_type(m)->name;
    int batched = d->spatial + 2; // dims of a batched input
    if (x->ndim != batched && x->ndim != batched - 1) {
        char s[TG_SHAPE_STR_MAX];
        tg_error("tg_module_forward",
                 "%s takes %dD or %dD input, got shape %s (%d dim%s)\n"
                 "  rule: %s\n"
                 "  hint: %s",
                 name, batched - 1, batched, tg_shape_str(x, s), x->ndim,
                 x->ndim == 1 ? "" : "s",
                 d->spatial == 1
                     ? "InstanceNorm1d takes (N, C, L), or (C, L) for one "
                       "sample"
                     : "InstanceNorm2d takes (N, C, H, W), or (C, H, W) for "
                       "one sample",
                 d->spatial == 1
                     ? "images (N, C, H, W) go to InstanceNorm2d"
                     : "sequences (N, C, L) go to InstanceNorm1d");
        return NULL;
    }
    tg_tensor *w = d->affine ? tg_module_parameter(m, "weight") : NULL;
    tg_tensor *b = d->affine ? tg_module_parameter(m, "bias") : NULL;
    tg_tensor *rm = NULL, *rv = NULL;
    if (d->track_running_stats) {
        rm = tg_module_buffer(m, "running_mean");
        rv = tg_module_buffer(m, "running_var");
        if (!rm || !rv)
            return NULL;
    }
    if (d->affine && (!w || !b))
        return NULL;
    bool use_input_stats =
        tg_module_is_training(m) || !d->track_running_stats;
    if (x->ndim == batched)
        return tg_instance_norm(x, rm, rv, w, b, use_input_stats,
                                d->momentum, d->eps);
    tg_tensor *x1 = tg_unsqueeze(x, 0); // one sample: (1, C, ...)
    tg_tensor *y1 = tg_instance_norm(x1, rm, rv, w, b, use_input_stats,
                                     d->momentum, d->eps);
    tg_tensor *y = tg_squeeze(y1, 0);
    tg_release(y1);
    tg_release(x1);
    return y;
}

static void instance_norm_describe(const tg_module *m, char *buf,
                                   size_t size)
{
    const instance_norm_data *d = tg_module_data_const(m);
    char eps[32], momentum[32];
    snprintf(buf, size,
             "%lld, eps=%s, momentum=%s, affine=%s, track_running_stats=%s",
             (long long)d->num_features, tg_py_float(d->eps, eps),
             tg_py_float(d->momentum, momentum), tg_py_bool(d->affine),
             tg_py_bool(d->track_running_stats));
}

static const tg_module_type instance_norm1d_type = {
    "InstanceNorm1d", instance_norm_forward, instance_norm_describe,
    sizeof(instance_norm_data)};
static const tg_module_type instance_norm2d_type = {
    "InstanceNorm2d", instance_norm_forward, instance_norm_describe,
    sizeof(instance_norm_data)};

static tg_module *instance_norm_new(const char *fn,
                                    const tg_module_type *type, int spatial,
                                    int64_t num_features, double eps,
                                    double momentum, bool affine,
                                    bool track_running_stats)
{
    if (num_features < 1) {
        tg_error(fn,
                 "num_features is %lld\n"
                 "  rule: num_features is the channel count C >= 1 (dim 1 "
                 "of the input)\n"
                 "  hint: pass x.shape[1], e.g. %s(64, 1e-5, 0.1, false, "
                 "false) for inputs (N, 64, ...)",
                 (long long)num_features, fn);
        return NULL;
    }
    if (tg_norm_eps_check(fn, eps) < 0)
        return NULL;
    if (!(momentum >= 0.0 && momentum <= 1.0)) {
        tg_error(fn,
                 "momentum is %g\n"
                 "  rule: momentum is in [0, 1]: running = (1 - momentum) "
                 "* running + momentum * batch\n"
                 "  hint: PyTorch's default is 0.1",
                 momentum);
        return NULL;
    }
    tg_module *m = tg_module_new(type);
    if (!m)
        return NULL;
    instance_norm_data *d = tg_module_data(m);
    d->num_features = num_features;
    d->eps = eps;
    d->momentum = momentum;
    d->affine = affine;
    d->track_running_stats = track_running_stats;
    d->spatial = spatial;
    if (tg_module_add_norm_tensors(m, num_features, affine,
                                   track_running_stats) < 0) {
        tg_module_free(m);
        return NULL;
    }
    return m;
}

tg_module *tg_instance_norm1d_new(int64_t num_features, double eps,
                                  double momentum, bool affine,
                                  bool track_running_stats)
{
    return instance_norm_new("tg_instance_norm1d_new", &instance_norm1d_type,
                             1, num_features, eps, momentum, affine,
                             track_running_stats);
}

tg_module *tg_instance_norm2d_new(int64_t num_features, double eps,
                                  double momentum, bool affine,
                                  bool track_running_stats)
{
    return instance_norm_new("tg_instance_norm2d_new", &instance_norm2d_type,
                             2, num_features, eps, momentum, affine,
                             track_running_stats);
}
