/*
 * tests/nn/test_conv_modules.c - the Conv2d, MaxPool2d and AvgPool2d
 * modules: initial weights bit for bit equal to PyTorch 1.13's after the
 * same seed (tests/reference/torch-conv-vectors.txt, written by
 * scripts/reference/torch_conv_vectors.py), PyTorch's reprs, forwards equal
 * to the ops they wrap, and a small CNN trained one step end to end.
 */
#include "../common.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

static tg_tensor *check(tg_tensor *t)
{
    cr_assert_not_null(t, "%s", tg_last_error());
    return t;
}

static tg_module *check_module(tg_module *m)
{
    cr_assert_not_null(m, "%s", tg_last_error());
    return m;
}

/* True when t (float32, contiguous) holds exactly PyTorch's bits; the
 * first difference in report otherwise. */
static bool same_bits(const tg_tensor *t, const char *title, char *report,
                      size_t size)
{
    static uint32_t bits[4096];
    int64_t n =
        tg_test_torch_bits("torch-conv-vectors.txt", title, bits, 4096);
    cr_assert_eq(t->dtype, TG_FLOAT32);
    cr_assert(tg_is_contiguous(t));
    if (t->numel != n) {
        snprintf(report, size, "%lld elements, PyTorch has %lld",
                 (long long)t->numel, (long long)n);
        return false;
    }
    const float *v = tg_data_f32(t);
    for (int64_t i = 0; i < n; i++) {
        uint32_t b;
        memcpy(&b, &v[i], sizeof b);
        if (b != bits[i]) {
            snprintf(report, size, "[%lld] is %.9g (0x%08x), PyTorch has "
                     "0x%08x", (long long)i, (double)v[i], b, bits[i]);
            return false;
        }
    }
    return true;
}

#define expect_torch(t, title)                                              \
    do {                                                                    \
        char report_[256];                                                  \
        cr_assert(same_bits((t), (title), report_, sizeof report_),        \
                  "%s: %s", (title), report_);                              \
    } while (0)

/* ------------------------------------------------------------------ init */

TG_TEST(conv2d, init_matches_pytorch)
{
    tg_manual_seed(0);
    tg_module *m = check_module(
        tg_conv2d_new(1, 8, 3, 3, &(tg_conv2d_options){.padding = {1, 1}},
                      true));
    tg_tensor *w = tg_module_parameter(m, "weight");
    cr_assert(w->ndim == 4 && w->shape[0] == 8 && w->shape[1] == 1 &&
              w->shape[2] == 3 && w->shape[3] == 3 && w->requires_grad);
    expect_torch(w, "manual_seed(0); nn.Conv2d(1, 8, 3, padding=1).weight");
    expect_torch(tg_module_parameter(m, "bias"),
                 "manual_seed(0); nn.Conv2d(1, 8, 3, padding=1).bias");
    tg_module_free(m);

    /* groups: fan_in is in_channels / groups * kh * kw = 2 * 3 * 2 */
    tg_manual_seed(42);
    m = check_module(
        tg_conv2d_new(4, 6, 3, 2, &(tg_conv2d_options){.groups = 2}, true));
    cr_assert_eq(tg_module_parameter(m, "weight")->shape[1], 2);
    expect_torch(tg_module_parameter(m, "weight"),
                 "manual_seed(42); nn.Conv2d(4, 6, (3, 2), groups=2).weight");
    expect_torch(tg_module_parameter(m, "bias"),
                 "manual_seed(42); nn.Conv2d(4, 6, (3, 2), groups=2).bias");
    tg_module_free(m);

    /* no bias: the generator moves on by the weight alone */
    tg_manual_seed(7);
    m = check_module(tg_conv2d_new(
        16, 16, 3, 3, &(tg_conv2d_options){.padding = {1, 1}}, false));
    expect_torch(tg_module_parameter(m, "weight"),
                 "manual_seed(7); nn.Conv2d(16, 16, 3, padding=1, "
                 "bias=False).weight");
    tg_tensor *next = check(tg_rand(TG_SHAPE(3), TG_FLOAT32));
    expect_torch(next, "... then rand(3)");
    tg_release(next);
    tg_module_free(m);
}

/* The bit comparison must fail for weights drawn with another seed, and
 * for kaiming_uniform_'s default a = 0 (bound sqrt(6 / fan_in)) in place
 * of a = sqrt(5). (With a = sqrt(5) the bound is 1/sqrt(fan_in) up to the
 * last bit of a double, which rounds to the same float32.) */
TG_TEST(conv2d, init_check_catches_wrong_weights)
{
    char report[256];
    tg_manual_seed(1);
    tg_module *m = check_module(
        tg_conv2d_new(1, 8, 3, 3, &(tg_conv2d_options){.padding = {1, 1}},
                      true));
    cr_assert(!same_bits(tg_module_parameter(m, "weight"),
                         "manual_seed(0); nn.Conv2d(1, 8, 3, padding=1)."
                         "weight",
                         report, sizeof report));
    tg_module_free(m);
    tg_manual_seed(0);
    tg_tensor *w = check(tg_empty(TG_SHAPE(8, 1, 3, 3), TG_FLOAT32));
    cr_assert_eq(tg_uniform_(w, -sqrt(6.0 / 9.0), sqrt(6.0 / 9.0), NULL),
                 0);
    cr_assert(!same_bits(w, "manual_seed(0); nn.Conv2d(1, 8, 3, padding=1)."
                            "weight",
                         report, sizeof report));
    tg_release(w);
}

/* ----------------------------------------------------------------- print */

TG_TEST(conv2d, prints_as_pytorch)
{
    tg_test_expect_print(tg_conv2d_new(1, 8, 3, 3,
                               &(tg_conv2d_options){.padding = {1, 1}},
                               true),
                         "Conv2d(1, 8, kernel_size=(3, 3), stride=(1, 1), "
                         "padding=(1, 1))");
    tg_test_expect_print(tg_conv2d_new(4, 6, 3, 2, NULL, true),
                         "Conv2d(4, 6, kernel_size=(3, 2), stride=(1, 1))");
    tg_test_expect_print(tg_conv2d_new(4, 6, 3, 3,
                               &(tg_conv2d_options){.stride = {2, 1},
                                                    .dilation = {2, 2},
                                                    .groups = 2},
                               false),
                         "Conv2d(4, 6, kernel_size=(3, 3), stride=(2, 1), "
                         "dilation=(2, 2), groups=2, bias=False)");
    tg_test_expect_print(tg_max_pool2d_new(2, 0, 0),
                         "MaxPool2d(kernel_size=2, stride=2, padding=0, dilation=1, "
                         "ceil_mode=False)");
    tg_test_expect_print(tg_max_pool2d_new(3, 1, 1),
                         "MaxPool2d(kernel_size=3, stride=1, padding=1, dilation=1, "
                         "ceil_mode=False)");
    tg_test_expect_print(tg_avg_pool2d_new(2, 0, 0),
                         "AvgPool2d(kernel_size=2, stride=2, padding=0)");
}

/* --------------------------------------------------------------- forward */

TG_TEST(conv2d, forwards_are_the_ops)
{
    tg_manual_seed(3);
    tg_conv2d_options o = {.stride = {2, 2}, .padding = {1, 1}};
    tg_module *m = check_module(tg_conv2d_new(3, 4, 3, 3, &o, true));
    tg_tensor *x = check(tg_randn(TG_SHAPE(2, 3, 8, 8), TG_FLOAT32));
    tg_tensor *y = check(tg_module_forward(m, x));
    tg_tensor *want = check(tg_conv2d(x, tg_module_parameter(m, "weight"),
                                      tg_module_parameter(m, "bias"), &o));
    tg_assert_close(y, want, 0, 0);
    cr_assert(y->shape[1] == 4 && y->shape[2] == 4 && y->shape[3] == 4);
    tg_module *mp = check_module(tg_max_pool2d_new(2, 0, 0));
    tg_module *ap = check_module(tg_avg_pool2d_new(3, 2, 1));
    tg_tensor *a = check(tg_module_forward(mp, x));
    tg_tensor *b = check(tg_max_pool2d(x, (int64_t[]){2, 2}, NULL, NULL));
    tg_assert_close(a, b, 0, 0);
    tg_tensor *c = check(tg_module_forward(ap, x));
    tg_tensor *d = check(tg_avg_pool2d(x, (int64_t[]){3, 3},
                                       (int64_t[]){2, 2}, (int64_t[]){1, 1}));
    tg_assert_close(c, d, 0, 0);
    /* a wrong channel count is tg_conv2d's error */
    tg_tensor *x2 = check(tg_randn(TG_SHAPE(2, 2, 8, 8), TG_FLOAT32));
    cr_assert_null(tg_module_forward(m, x2));
    cr_assert(strstr(tg_last_error(), "tg_conv2d: cannot convolve") != NULL,
              "%s", tg_last_error());
    tg_release(x2);
    tg_release(a);
    tg_release(b);
    tg_release(c);
    tg_release(d);
    tg_release(want);
    tg_release(y);
    tg_release(x);
    tg_module_free(mp);
    tg_module_free(ap);
    tg_module_free(m);
}

/* Conv -> ReLU -> MaxPool -> Flatten -> Linear, one SGD step, in float64
 * after tg_module_to_dtype: every parameter gets a gradient and the loss
 * goes down. */
TG_TEST(conv2d, small_cnn_trains)
{
    tg_manual_seed(11);
    tg_module *conv = check_module(
        tg_conv2d_new(1, 4, 3, 3, &(tg_conv2d_options){.padding = {1, 1}},
                      true));
    tg_module *relu = check_module(tg_relu_new());
    tg_module *pool = check_module(tg_max_pool2d_new(2, 0, 0));
    tg_module *flat = check_module(tg_flatten_new(1, -1));
    tg_module *lin = check_module(tg_linear_new(4 * 3 * 3, 3, true));
    tg_module *net = check_module(
        tg_sequential_new((tg_module *const[]){conv, relu, pool, flat, lin},
                          5));
    cr_assert_eq(tg_module_to_dtype(net, TG_FLOAT64), 0);
    tg_tensor *x = check(tg_randn(TG_SHAPE(5, 1, 6, 6), TG_FLOAT64));
    tg_tensor *y = check(tg_from_array((int64_t[]){0, 1, 2, 1, 0},
                                       TG_SHAPE(5), TG_INT64));
    tg_optimizer *opt = NULL;
    double first = 0, last = 0;
    for (int step = 0; step < 5; step++) {
        tg_tensor *logits = check(tg_module_forward(net, x));
        tg_tensor *loss = check(tg_cross_entropy(logits, y, TG_REDUCTION_MEAN));
        if (!opt) {
            opt = tg_sgd_new(net, &(tg_sgd_config){.lr = 0.1});
            cr_assert_not_null(opt, "%s", tg_last_error());
        }
        tg_optimizer_zero_grad(opt);
        cr_assert_eq(tg_backward(loss), 0, "%s", tg_last_error());
        if (step == 0) {
            first = tg_item(loss);
            const char *names[] = {"0.weight", "0.bias", "4.weight",
                                   "4.bias"};
            for (int i = 0; i < 4; i++)
                cr_assert_not_null(tg_module_parameter(net, names[i])->grad,
                                   "%s has no gradient", names[i]);
        }
        last = tg_item(loss);
        cr_assert_eq(tg_optimizer_step(opt), 0, "%s", tg_last_error());
        tg_release(loss);
        tg_release(logits);
    }
    cr_assert_lt(last, first);
    tg_optimizer_free(opt);
    tg_release(x);
    tg_release(y);
    tg_module_free(net);
}
