/*
 * tests/autograd/grad_cases_conv.c - gradcheck cases for tg_conv2d,
 * tg_max_pool2d and tg_avg_pool2d (autograd/ops/conv.c, pool.c).
 *
 * Convolution is linear in x and in the weight, so finite differences are
 * exact up to rounding and every entry of the Jacobian is checked for x,
 * weight and bias: with and without bias, stride, padding, dilation,
 * groups > 1, a depthwise case, transposed and strided inputs, and an
 * input that needs no gradient. Max pooling has a kink where two values of
 * a window are equal: the random inputs here are distinct by far more than
 * the finite-difference step, so no maximum changes place while gradcheck
 * perturbs x.
 */
#include "grad_cases.h"

#define CONT TG_CONTIGUOUS
#define TRAN TG_TRANSPOSED
#define STRD TG_STRIDED

/* name(x) = conv2d(x[0], x[1], bias, opts) */
#define CONV_FN(name, bias, ...)                                            \
    static tg_tensor *name(const tg_tensor *const *x, int n, void *ctx)     \
    {                                                                       \
        (void)n, (void)ctx;                                                 \
        return tg_conv2d(x[0], x[1], bias,                                  \
                         &(tg_conv2d_options){__VA_ARGS__});                \
    }

CONV_FN(conv_plain_b, x[2], 0)
CONV_FN(conv_pad_b, x[2], .padding = {1, 1})
CONV_FN(conv_stride_dil, NULL, .stride = {2, 1}, .dilation = {2, 2},
        .padding = {1, 2})
CONV_FN(conv_groups_b, x[2], .groups = 2, .padding = {1, 0})
CONV_FN(conv_depthwise, NULL, .groups = 3, .stride = {2, 2},
        .padding = {1, 1})

/* name(x) = pool(x[0], kernel, stride, padding) */
#define POOL_FN(name, op, k0, k1, s0, s1, p0, p1)                           \
    static tg_tensor *name(const tg_tensor *const *x, int n, void *ctx)     \
    {                                                                       \
        (void)n, (void)ctx;                                                 \
        return op(x[0], (int64_t[]){k0, k1}, (int64_t[]){s0, s1},          \
                  (int64_t[]){p0, p1});                                     \
    }

POOL_FN(max_k2, tg_max_pool2d, 2, 2, 2, 2, 0, 0)
POOL_FN(max_k3s2p1, tg_max_pool2d, 3, 3, 2, 2, 1, 1)
POOL_FN(max_k2x3s1, tg_max_pool2d, 2, 3, 1, 1, 1, 0)
POOL_FN(avg_k2, tg_avg_pool2d, 2, 2, 2, 2, 0, 0)
POOL_FN(avg_k3s2p1, tg_avg_pool2d, 3, 3, 2, 2, 1, 1)
POOL_FN(avg_k2x3s1, tg_avg_pool2d, 2, 3, 1, 2, 1, 1)

/* A small network: max_pool(conv(x)) and avg_pool(conv(x)). */
static tg_tensor *conv_then_max(const tg_tensor *const *x, int n, void *ctx)
{
    (void)n, (void)ctx;
    tg_tensor *c = tg_conv2d(x[0], x[1], x[2],
                             &(tg_conv2d_options){.padding = {1, 1}});
    tg_tensor *p = tg_max_pool2d(c, (int64_t[]){2, 2}, NULL, NULL);
    tg_release(c);
    return p;
}

const tg_grad_case tg_grad_cases_conv[] = {
    {"conv2d (2,2,5,4) * (3,2,3,2) + b", conv_plain_b, 3,
     {{4, {2, 2, 5, 4}, CONT}, {4, {3, 2, 3, 2}, CONT}, {1, {3}, CONT}}},
    {"conv2d padding 1, x transposed, w strided", conv_pad_b, 3,
     {{4, {1, 2, 4, 5}, TRAN}, {4, {2, 2, 3, 3}, STRD}, {1, {2}, CONT}}},
    {"conv2d stride (2,1) dilation 2 padding (1,2), no bias",
     conv_stride_dil, 2,
     {{4, {2, 2, 6, 5}, CONT}, {4, {2, 2, 2, 3}, CONT}}},
    {"conv2d groups 2, padding (1,0)", conv_groups_b, 3,
     {{4, {1, 4, 4, 4}, CONT}, {4, {4, 2, 2, 2}, CONT}, {1, {4}, CONT}}},
    {"conv2d depthwise, stride 2", conv_depthwise, 2,
     {{4, {1, 3, 5, 5}, STRD}, {4, {3, 1, 3, 3}, CONT}}},
    {"conv2d, x needs no grad", conv_plain_b, 3,
     {{4, {1, 2, 4, 4}, CONT, .no_grad = true}, {4, {2, 2, 3, 3}, CONT},
      {1, {2}, CONT}}},
    {"conv2d (C,H,W) image, w needs no grad", conv_pad_b, 3,
     {{3, {2, 4, 3}, CONT}, {4, {3, 2, 3, 3}, CONT, .no_grad = true},
      {1, {3}, CONT}}},
    {"max_pool2d k2", max_k2, 1, {{4, {2, 2, 4, 6}, CONT}}},
    {"max_pool2d k3 s2 p1, transposed", max_k3s2p1, 1,
     {{4, {1, 2, 5, 6}, TRAN}}},
    {"max_pool2d k(2,3) s1 p(1,0), (C,H,W)", max_k2x3s1, 1,
     {{3, {2, 3, 4}, STRD}}},
    {"avg_pool2d k2", avg_k2, 1, {{4, {2, 2, 4, 6}, CONT}}},
    {"avg_pool2d k3 s2 p1, transposed", avg_k3s2p1, 1,
     {{4, {1, 2, 5, 6}, TRAN}}},
    {"avg_pool2d k(2,3) s(1,2) p1", avg_k2x3s1, 1,
     {{4, {2, 1, 4, 5}, STRD}}},
    {"max_pool2d(conv2d(x)) + b", conv_then_max, 3,
     {{4, {1, 2, 4, 4}, CONT}, {4, {3, 2, 3, 3}, CONT}, {1, {3}, CONT}}},
};
const size_t tg_grad_cases_conv_count =
    sizeof tg_grad_cases_conv / sizeof *tg_grad_cases_conv;
