/*
 * autograd/ops/activation.c - the activation functions: tanh, sigmoid,
 * relu and gelu (exact and tanh-approximated).
 *
 * Forward only so far; each op is one loop per compute dtype run through
 * tg_unary_apply. Not here: softmax and log_softmax (softmax.c, they
 * reduce over a dim) and the plain maths functions (unary.c).
 *
 * Dtypes: relu keeps int64; tanh, sigmoid and gelu turn int64 into float32
 * first, as torch.tanh does (PyTorch has no int64 gelu at all).
 *
 * The formulas are arranged so that no input, however large, gives NaN
 * where the true value is finite: see sigmoid and the gelu tails below.
 */
#include "../../tensor/internal.h"
#include "../ops.h"

#include <math.h>

static const double SQRT1_2 = 0.70710678118654752440;       // 1 / sqrt(2)
static const double SQRT_2_OVER_PI = 0.79788456080286535588; // sqrt(2 / pi)

/* --------------------------------------------------------------- tanh */
/* out = tanh(x) = (e^x - e^-x) / (e^x + e^-x), saturating to +-1. */
TG_UNARY_LOOP(tanh_f32, float, float, tanhf(a))
TG_UNARY_LOOP(tanh_f64, double, double, tanh(a))
static const tg_elementwise_kernel tanh_kernel = {tanh_f32, tanh_f64, NULL,
                                                  false};

tg_tensor *tg_tanh(const tg_tensor *x)
{
    return tg_unary_apply("tg_tanh", &tanh_kernel, x, NULL);
}

/* ------------------------------------------------------------ sigmoid */
/* out = 1 / (1 + e^-x).
 * The textbook form is fine for x >= 0, where e^-x <= 1. For x < 0, e^-x
 * overflows (to inf at x = -89 in float32) and the result leans on 1/inf;
 * the equal form e^x / (1 + e^x) keeps every quantity in [0, 1] and gives
 * the tiny true value (e^-100 ~ 3.7e-44, a float32 subnormal) instead of
 * 0. NaN takes the second branch and stays NaN. */
static float sigmoid_f(float x)
{
    if (x >= 0)
        return 1.0f / (1.0f + expf(-x));
    float e = expf(x);
    return e / (1.0f + e);
}

static double sigmoid_d(double x)
{
    if (x >= 0)
        return 1.0 / (1.0 + exp(-x));
    double e = exp(x);
    return e / (1.0 + e);
}

TG_UNARY_LOOP(sigmoid_f32, float, float, sigmoid_f(a))
TG_UNARY_LOOP(sigmoid_f64, double, double, sigmoid_d(a))
static const tg_elementwise_kernel sigmoid_kernel = {sigmoid_f32, sigmoid_f64,
                                                     NULL, false};

tg_tensor *tg_sigmoid(const tg_tensor *x)
{
    return tg_unary_apply("tg_sigmoid", &sigmoid_kernel, x, NULL);
}

/* --------------------------------------------------------------- relu */
/* out = max(x, 0). Written as x < 0 ? 0 : x so that NaN stays NaN and -0
 * stays -0, as torch.relu. */
TG_UNARY_LOOP(relu_f32, float, float, a < 0 ? 0.0f : a)
TG_UNARY_LOOP(relu_f64, double, double, a < 0 ? 0.0 : a)
TG_UNARY_LOOP(relu_i64, int64_t, int64_t, a < 0 ? 0 : a)
static const tg_elementwise_kernel relu_kernel = {relu_f32, relu_f64,
                                                  relu_i64, false};

tg_tensor *tg_relu(const tg_tensor *x)
{
    return tg_unary_apply("tg_relu", &relu_kernel, x, NULL);
}

/* --------------------------------------------------------------- gelu */
/* Exact:  out = x * Phi(x) = 0.5 * x * (1 + erf(x / sqrt(2)))
 * Tanh:   out = 0.5 * x * (1 + tanh(u)),  u = sqrt(2/pi) * (x + 0.044715 x^3)
 *
 * Both forms cancel catastrophically for negative x: 1 + erf(-3.5) is
 * 1 - 0.9999993, and in float32 that leaves one or two correct digits
 * (PyTorch's float32 gelu(-5) is off by 4%). The same quantities without
 * the subtraction:
 *     1 + erf(z)  = erfc(-z)
 *     1 + tanh(u) = 2 / (1 + e^(-2u)),  so the tanh form is x / (1 + e^(-2u))
 * For very negative x, e^(-2u) overflows to inf and x / inf gives -0, the
 * correctly rounded limit.
 * float32 inputs are evaluated in double and rounded once: in the tails
 * the result's relative error is about (argument's relative error) * z^2,
 * and a float32 argument would cost several ulp. */
static double gelu_exact(double x)
{
    return 0.5 * x * erfc(-x * SQRT1_2);
}

static double gelu_tanh(double x)
{
    double u = SQRT_2_OVER_PI * (x + 0.044715 * x * x * x);
    return x / (1.0 + exp(-2.0 * u));
}

TG_UNARY_LOOP(gelu_exact_f32, float, float, gelu_exact((double)a))
TG_UNARY_LOOP(gelu_exact_f64, double, double, gelu_exact(a))
TG_UNARY_LOOP(gelu_tanh_f32, float, float, gelu_tanh((double)a))
TG_UNARY_LOOP(gelu_tanh_f64, double, double, gelu_tanh(a))
static const tg_elementwise_kernel gelu_exact_kernel = {
    gelu_exact_f32, gelu_exact_f64, NULL, false};
static const tg_elementwise_kernel gelu_tanh_kernel = {
    gelu_tanh_f32, gelu_tanh_f64, NULL, false};

tg_tensor *tg_gelu(const tg_tensor *x, tg_gelu_approx approx)
{
    if (!x)
        return NULL;
    switch (approx) {
    case TG_GELU_EXACT:
        return tg_unary_apply("tg_gelu", &gelu_exact_kernel, x, NULL);
    case TG_GELU_TANH:
        return tg_unary_apply("tg_gelu", &gelu_tanh_kernel, x, NULL);
    }
    tg_error("tg_gelu",
             "unknown approximation %d\n"
             "  rule: approx must be TG_GELU_EXACT (%d) or TG_GELU_TANH (%d)",
             (int)approx, (int)TG_GELU_EXACT, (int)TG_GELU_TANH);
    return NULL;
}
