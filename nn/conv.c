/*
 * nn/conv.c - the image layers of torch.nn: Conv2d, MaxPool2d and
 * AvgPool2d, modules around tg_conv2d, tg_max_pool2d and tg_avg_pool2d
 * (autograd/ops/conv.c, pool.c), which have the math and the backward.
 *
 * Conv2d draws its initial weights from the default generator exactly as
 * PyTorch 1.13's reset_parameters does, so a network built after
 * tg_manual_seed(s) starts where torch.manual_seed(s) would. Nothing here
 * has a backward of its own.
 */
#include "nn.h"

#include "../autograd/internal.h"
#include "internal.h"

#include <math.h>
#include <stdio.h>

/* ----------------------------------------------------------------- Conv2d */

typedef struct conv_data {
    int64_t in_channels, out_channels, kernel[2];
    tg_conv2d_options opts; // zeros already replaced by the defaults
    bool bias;
} conv_data;

/* PyTorch's extra_repr: the sizes, then padding, dilation and groups only
 * when they differ from the default, and bias=False when there is none. */
static void conv_describe(const tg_module *m, char *buf, size_t size)
{
    const conv_data *d = tg_module_data_const(m);
    const tg_conv2d_options *o = &d->opts;
    int n = snprintf(buf, size,
                     "%lld, %lld, kernel_size=(%lld, %lld), stride=(%lld, "
                     "%lld)",
                     (long long)d->in_channels, (long long)d->out_channels,
                     (long long)d->kernel[0], (long long)d->kernel[1],
                     (long long)o->stride[0], (long long)o->stride[1]);
    if (n >= 0 && (size_t)n < size && (o->padding[0] || o->padding[1]))
        n += snprintf(buf + n, size - (size_t)n, ", padding=(%lld, %lld)",
                      (long long)o->padding[0], (long long)o->padding[1]);
    if (n >= 0 && (size_t)n < size &&
        (o->dilation[0] != 1 || o->dilation[1] != 1))
        n += snprintf(buf + n, size - (size_t)n, ", dilation=(%lld, %lld)",
                      (long long)o->dilation[0], (long long)o->dilation[1]);
    if (n >= 0 && (size_t)n < size && o->groups != 1)
        n += snprintf(buf + n, size - (size_t)n, ", groups=%lld",
                      (long long)o->groups);
    if (n >= 0 && (size_t)n < size && !d->bias)
        snprintf(buf + n, size - (size_t)n, ", bias=False");
}

/* y = conv2d(x, weight, bias) with the layer's settings; tg_conv2d checks
 * x against the weight. */
static tg_tensor *conv_forward(tg_module *m, const tg_tensor *x)
{
    const conv_data *d = tg_module_data(m);
    tg_tensor *w = tg_module_parameter(m, "weight");
    tg_tensor *b = d->bias ? tg_module_parameter(m, "bias") : NULL;
    if (!w || (d->bias && !b))
        return NULL;
    return tg_conv2d(x, w, b, &d->opts);
}

static const tg_module_type conv_type = {"Conv2d", conv_forward,
                                         conv_describe, sizeof(conv_data)};

/* PyTorch's _ConvNd.reset_parameters: kaiming_uniform_(weight, a=sqrt(5)),
 * i.e. U(-bound, bound) with
 *   gain = sqrt(2 / (1 + a^2)),  bound = sqrt(3) * gain / sqrt(fan_in)
 * and fan_in = in_channels / groups * kernel_h * kernel_w (weight.shape[1:]
 * multiplied); then bias ~ U(-1/sqrt(fan_in), 1/sqrt(fan_in)). The bounds
 * are computed in double as Python does, step by step, and tg_uniform_
 * rounds them to float32 and draws as PyTorch's CPU kernel does. */
tg_module *tg_conv2d_new(int64_t in_channels, int64_t out_channels,
                         int64_t kernel_h, int64_t kernel_w,
                         const tg_conv2d_options *opts, bool bias)
{
    const char *fn = "tg_conv2d_new";
    tg_conv2d_options o = opts ? *opts : tg_conv2d_defaults();
    if (in_channels < 1 || out_channels < 1 || kernel_h < 1 ||
        kernel_w < 1) {
        tg_error(fn,
                 "cannot make a Conv2d layer from %lld to %lld channels "
                 "with a (%lld, %lld) kernel\n"
                 "  rule: the channel counts and kernel sizes are >= 1\n"
                 "  hint: a 3x3 convolution from 1 to 8 channels is "
                 "tg_conv2d_new(1, 8, 3, 3, NULL, true)",
                 (long long)in_channels, (long long)out_channels,
                 (long long)kernel_h, (long long)kernel_w);
        return NULL;
    }
    bool negative = o.groups < 0;
    for (int k = 0; k < 2; k++) {
        negative = negative || o.stride[k] < 0 || o.padding[k] < 0 ||
                   o.dilation[k] < 0;
        o.stride[k] = o.stride[k] ? o.stride[k] : 1;
        o.dilation[k] = o.dilation[k] ? o.dilation[k] : 1;
    }
    o.groups = o.groups ? o.groups : 1;
    if (negative) {
        tg_error(fn,
                 "negative option: stride (%lld, %lld), padding (%lld, "
                 "%lld), dilation (%lld, %lld), groups %lld\n"
                 "  rule: stride, dilation and groups are >= 1 (0 means the "
                 "default, 1) and padding >= 0\n"
                 "  hint: (tg_conv2d_options){.padding = {1, 1}} keeps a "
                 "3x3 convolution's output the size of its input",
                 (long long)opts->stride[0], (long long)opts->stride[1],
                 (long long)opts->padding[0], (long long)opts->padding[1],
                 (long long)opts->dilation[0], (long long)opts->dilation[1],
                 (long long)opts->groups);
        return NULL;
    }
    if (in_channels % o.groups != 0 || out_channels % o.groups != 0) {
        tg_error(fn,
                 "groups %lld does not divide in_channels %lld and "
                 "out_channels %lld\n"
                 "  rule: in_channels and out_channels are both multiples "
                 "of groups\n"
                 "  hint: groups 1 connects every input channel to every "
                 "output channel",
                 (long long)o.groups, (long long)in_channels,
                 (long long)out_channels);
        return NULL;
    }
    const int64_t wshape[4] = {out_channels, in_channels / o.groups,
                               kernel_h, kernel_w};
    if (tg_shape_check(fn, wshape, 4) < 0)
        return NULL;
    tg_module *m = tg_module_new(&conv_type);
    if (!m)
        return NULL;
    conv_data *d = tg_module_data(m);
    *d = (conv_data){.in_channels = in_channels,
                     .out_channels = out_channels,
                     .kernel = {kernel_h, kernel_w}, .opts = o,
                     .bias = bias};
    double fan_in = (double)(wshape[1] * kernel_h * kernel_w);
    double a = sqrt(5.0);
    double gain = sqrt(2.0 / (1.0 + a * a));
    double std = gain / sqrt(fan_in);
    double wbound = sqrt(3.0) * std;
    double bbound = 1.0 / sqrt(fan_in);
    if (tg_module_add_uniform(m, "weight", wshape, 4, wbound) < 0 ||
        (bias && tg_module_add_uniform(m, "bias", &out_channels, 1,
                                       bbound) < 0)) {
        tg_module_free(m);
        return NULL;
    }
    return m;
}

/* --------------------------------------------------------------- pooling */

typedef struct pool_data {
    int64_t kernel, stride, padding;
} pool_data;

static tg_tensor *max_pool_forward(tg_module *m, const tg_tensor *x)
{
    const pool_data *d = tg_module_data(m);
    const int64_t k[2] = {d->kernel, d->kernel};
    const int64_t s[2] = {d->stride, d->stride};
    const int64_t p[2] = {d->padding, d->padding};
    return tg_max_pool2d(x, k, s, p);
}

static tg_tensor *avg_pool_forward(tg_module *m, const tg_tensor *x)
{
    const pool_data *d = tg_module_data(m);
    const int64_t k[2] = {d->kernel, d->kernel};
    const int64_t s[2] = {d->stride, d->stride};
    const int64_t p[2] = {d->padding, d->padding};
    return tg_avg_pool2d(x, k, s, p);
}

static void max_pool_describe(const tg_module *m, char *buf, size_t size)
{
    const pool_data *d = tg_module_data_const(m);
    snprintf(buf, size,
             "kernel_size=%lld, stride=%lld, padding=%lld, dilation=1, "
             "ceil_mode=False",
             (long long)d->kernel, (long long)d->stride,
             (long long)d->padding);
}

static void avg_pool_describe(const tg_module *m, char *buf, size_t size)
{
    const pool_data *d = tg_module_data_const(m);
    snprintf(buf, size, "kernel_size=%lld, stride=%lld, padding=%lld",
             (long long)d->kernel, (long long)d->stride,
             (long long)d->padding);
}

static const tg_module_type max_pool_type = {
    "MaxPool2d", max_pool_forward, max_pool_describe, sizeof(pool_data)};
static const tg_module_type avg_pool_type = {
    "AvgPool2d", avg_pool_forward, avg_pool_describe, sizeof(pool_data)};

/* Either pooling layer, its window checked. */
static tg_module *pool_new(const char *fn, const tg_module_type *type,
                           int64_t kernel_size, int64_t stride,
                           int64_t padding)
{
    if (kernel_size < 1 || stride < 0 || padding < 0 ||
        2 * padding > kernel_size) {
        tg_error(fn,
                 "invalid window: kernel_size %lld, stride %lld, padding "
                 "%lld\n"
                 "  rule: kernel_size >= 1, stride >= 0 (0 means "
                 "kernel_size), 0 <= padding <= kernel_size / 2\n"
                 "  hint: 2x2 windows that halve the image: (2, 0, 0)",
                 (long long)kernel_size, (long long)stride,
                 (long long)padding);
        return NULL;
    }
    tg_module *m = tg_module_new(type);
    if (!m)
        return NULL;
    pool_data *d = tg_module_data(m);
    *d = (pool_data){.kernel = kernel_size,
                     .stride = stride ? stride : kernel_size,
                     .padding = padding};
    return m;
}

tg_module *tg_max_pool2d_new(int64_t kernel_size, int64_t stride,
                             int64_t padding)
{
    return pool_new("tg_max_pool2d_new", &max_pool_type, kernel_size, stride,
                    padding);
}

tg_module *tg_avg_pool2d_new(int64_t kernel_size, int64_t stride,
                             int64_t padding)
{
    return pool_new("tg_avg_pool2d_new", &avg_pool_type, kernel_size, stride,
                    padding);
}
