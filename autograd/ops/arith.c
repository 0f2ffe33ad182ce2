/*
 * autograd/ops/arith.c - add, sub, mul, div, pow, maximum, minimum and
 * their scalar forms, forward and backward.
 *
 * Each op broadcasts its operands (NumPy rules) and promotes types as
 * PyTorch through tg_binary_apply. The loops below are the whole kernel;
 * TG_BINARY_LOOP gives them a contiguous branch that the compiler
 * vectorises. Every backward gets dL/dout with out's (broadcast) shape and
 * sums it back to each operand's shape with tg_sum_to_shape.
 */
#include "../internal.h"

#include <math.h>

/* ---------------------------------------------------------------- add */
/* out = a + b */
TG_BINARY_LOOP(add_f32, float, float, a + b)
TG_BINARY_LOOP(add_f64, double, double, a + b)
TG_BINARY_LOOP(add_i64, int64_t, int64_t, (int64_t)((uint64_t)a + (uint64_t)b))
static const tg_elementwise_kernel add_kernel = {add_f32, add_f64, add_i64,
                                                 false};

/* Gradient g of out, reduced to input i's shape. */
static tg_tensor *to_input(const tg_node *node, const tg_tensor *g, int i)
{
    int ndim;
    const int64_t *shape = tg_node_input_shape(node, i, &ndim);
    return tg_sum_to_shape(g, shape, ndim);
}

/* forward: out = a + b, so da = g, db = g (summed over broadcast dims) */
static int add_backward(tg_node *node, const tg_tensor *g, tg_tensor **grads)
{
    for (int i = 0; i < 2; i++)
        if (tg_node_needs_grad(node, i) && !(grads[i] = to_input(node, g, i)))
            return -1;
    return 0;
}
static const tg_op add_op = {"AddBackward0", add_backward, 0};

tg_tensor *tg_add(const tg_tensor *a, const tg_tensor *b)
{
    tg_tensor *out = tg_binary_apply("tg_add", &add_kernel, a, b, NULL);
    tg_record(&add_op, &out, TG_INPUTS(a, b));
    return out;
}

tg_tensor *tg_add_scalar(const tg_tensor *a, double s)
{
    return tg_scalar_apply(tg_add, a, s, false);
}

/* ---------------------------------------------------------------- sub */
/* out = a - b */
TG_BINARY_LOOP(sub_f32, float, float, a - b)
TG_BINARY_LOOP(sub_f64, double, double, a - b)
TG_BINARY_LOOP(sub_i64, int64_t, int64_t, (int64_t)((uint64_t)a - (uint64_t)b))
static const tg_elementwise_kernel sub_kernel = {sub_f32, sub_f64, sub_i64,
                                                 false};

tg_tensor *tg_sub(const tg_tensor *a, const tg_tensor *b)
{
    return tg_binary_apply("tg_sub", &sub_kernel, a, b, NULL);
}

tg_tensor *tg_sub_scalar(const tg_tensor *a, double s)
{
    return tg_scalar_apply(tg_sub, a, s, false);
}

tg_tensor *tg_rsub_scalar(const tg_tensor *a, double s)
{
    return tg_scalar_apply(tg_sub, a, s, true);
}

/* ---------------------------------------------------------------- mul */
/* out = a * b */
TG_BINARY_LOOP(mul_f32, float, float, a * b)
TG_BINARY_LOOP(mul_f64, double, double, a * b)
TG_BINARY_LOOP(mul_i64, int64_t, int64_t, (int64_t)((uint64_t)a * (uint64_t)b))
static const tg_elementwise_kernel mul_kernel = {mul_f32, mul_f64, mul_i64,
                                                 false};

/* forward: out = a * b, so da = g * b, db = g * a (each summed over its
 * broadcast dims). saved: a, b */
static int mul_backward(tg_node *node, const tg_tensor *g, tg_tensor **grads)
{
    for (int i = 0; i < 2; i++) {
        if (!tg_node_needs_grad(node, i))
            continue;
        tg_tensor *full = tg_mul(g, tg_node_saved(node, 1 - i));
        grads[i] = to_input(node, full, i);
        tg_release(full);
        if (!grads[i])
            return -1;
    }
    return 0;
}
static const tg_op mul_op = {"MulBackward0", mul_backward, 0};

tg_tensor *tg_mul(const tg_tensor *a, const tg_tensor *b)
{
    tg_tensor *out = tg_binary_apply("tg_mul", &mul_kernel, a, b, NULL);
    tg_node *node = tg_record(&mul_op, &out, TG_INPUTS(a, b));
    if (node) {
        tg_node_save(node, a);
        tg_node_save(node, b);
    }
    return out;
}

tg_tensor *tg_mul_scalar(const tg_tensor *a, double s)
{
    return tg_scalar_apply(tg_mul, a, s, false);
}

/* ---------------------------------------------------------------- div */
/* out = a / b, true division: int64 operands are divided in float32, as
 * PyTorch's torch.div without rounding_mode. */
TG_BINARY_LOOP(div_f32, float, float, a / b)
TG_BINARY_LOOP(div_f64, double, double, a / b)
static const tg_elementwise_kernel div_kernel = {div_f32, div_f64, NULL,
                                                 false};

tg_tensor *tg_div(const tg_tensor *a, const tg_tensor *b)
{
    return tg_binary_apply("tg_div", &div_kernel, a, b, NULL);
}

tg_tensor *tg_div_scalar(const tg_tensor *a, double s)
{
    return tg_scalar_apply(tg_div, a, s, false);
}

/* ---------------------------------------------------------------- pow */
/* out = a ** b. For int64, exponentiation by squaring; negative exponents
 * are rejected before the kernel runs. */
static int64_t ipow(int64_t base, int64_t e)
{
    uint64_t result = 1, b = (uint64_t)base;
    while (e > 0) {
        if (e & 1)
            result *= b;
        b *= b;
        e >>= 1;
    }
    return (int64_t)result;
}

TG_BINARY_LOOP(pow_f32, float, float, powf(a, b))
TG_BINARY_LOOP(pow_f64, double, double, pow(a, b))
TG_BINARY_LOOP(pow_i64, int64_t, int64_t, ipow(a, b))
static const tg_elementwise_kernel pow_kernel = {pow_f32, pow_f64, pow_i64,
                                                 false};

/* The flat index of the first negative element of an int64 tensor, or -1. */
static int64_t first_negative_int(const tg_tensor *t)
{
    if (t->dtype != TG_INT64)
        return -1;
    for (int64_t i = 0; i < t->numel; i++)
        if (tg_read_flat(t, i) < 0)
            return i;
    return -1;
}

tg_tensor *tg_pow(const tg_tensor *a, const tg_tensor *b)
{
    if (!a || !b)
        return NULL;
    /* Shapes first, so a shape mistake is reported as one. */
    int64_t shape[TG_MAX_DIMS];
    int ndim;
    if (tg_broadcast_shape("tg_pow", a->shape, a->ndim, b->shape, b->ndim,
                           shape, &ndim) < 0)
        return NULL;
    int64_t at = a->dtype == TG_INT64 ? first_negative_int(b) : -1;
    if (at >= 0) {
        tg_error("tg_pow",
                 "cannot raise an int64 tensor to the negative int64 "
                 "power %.0f (element %lld of b, in C order)\n"
                 "  rule: integers to negative powers are not integers "
                 "(as in PyTorch)\n"
                 "  hint: convert the base first: "
                 "tg_pow(tg_to_dtype(a, TG_FLOAT32), b)",
                 tg_read_flat(b, at), (long long)at);
        return NULL;
    }
    return tg_binary_apply("tg_pow", &pow_kernel, a, b, NULL);
}

tg_tensor *tg_pow_scalar(const tg_tensor *a, double exponent)
{
    return tg_scalar_apply(tg_pow, a, exponent, false);
}

/* ------------------------------------------------------ maximum, minimum */
/* out = max(a, b) / min(a, b) elementwise; a NaN in either operand gives NaN,
 * as torch.maximum. */
#define TG_MAX_NAN(a, b) ((a) != (a) || (a) > (b) ? (a) : (b))
#define TG_MIN_NAN(a, b) ((a) != (a) || (a) < (b) ? (a) : (b))
TG_BINARY_LOOP(maximum_f32, float, float, b != b ? b : TG_MAX_NAN(a, b))
TG_BINARY_LOOP(maximum_f64, double, double, b != b ? b : TG_MAX_NAN(a, b))
TG_BINARY_LOOP(maximum_i64, int64_t, int64_t, a > b ? a : b)
TG_BINARY_LOOP(minimum_f32, float, float, b != b ? b : TG_MIN_NAN(a, b))
TG_BINARY_LOOP(minimum_f64, double, double, b != b ? b : TG_MIN_NAN(a, b))
TG_BINARY_LOOP(minimum_i64, int64_t, int64_t, a < b ? a : b)
static const tg_elementwise_kernel maximum_kernel = {
    maximum_f32, maximum_f64, maximum_i64, false};
static const tg_elementwise_kernel minimum_kernel = {
    minimum_f32, minimum_f64, minimum_i64, false};

tg_tensor *tg_maximum(const tg_tensor *a, const tg_tensor *b)
{
    return tg_binary_apply("tg_maximum", &maximum_kernel, a, b, NULL);
}

tg_tensor *tg_minimum(const tg_tensor *a, const tg_tensor *b)
{
    return tg_binary_apply("tg_minimum", &minimum_kernel, a, b, NULL);
}
