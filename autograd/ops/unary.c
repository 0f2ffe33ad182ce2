/*
 * autograd/ops/unary.c - neg, exp, log, sqrt, rsqrt and abs: the
 * elementwise functions of one tensor that are plain maths.
 *
 * Forward only so far. Each op is one loop per compute dtype run through
 * tg_unary_apply, which handles any layout (views, broadcast strides) and
 * gives a new contiguous result of x's shape. The squashing functions used
 * as activations (tanh, sigmoid, relu, gelu) are in activation.c.
 *
 * Dtypes, as PyTorch: neg and abs keep int64 (they are exact on integers);
 * exp, log, sqrt and rsqrt have no int64 loop, so an int64 input is
 * converted to float32 first and the result is float32.
 */
#include "../../tensor/internal.h"
#include "../ops.h"

#include <math.h>

/* ---------------------------------------------------------------- neg */
/* out = -x. In int64, -INT64_MIN wraps to INT64_MIN (two's complement, as
 * PyTorch); the negation is done in unsigned arithmetic, where wrapping is
 * defined. */
TG_UNARY_LOOP(neg_f32, float, float, -a)
TG_UNARY_LOOP(neg_f64, double, double, -a)
TG_UNARY_LOOP(neg_i64, int64_t, int64_t, (int64_t)(UINT64_C(0) - (uint64_t)a))
static const tg_elementwise_kernel neg_kernel = {neg_f32, neg_f64, neg_i64,
                                                 false};

tg_tensor *tg_neg(const tg_tensor *x)
{
    return tg_unary_apply("tg_neg", &neg_kernel, x, NULL);
}

/* ---------------------------------------------------------------- exp */
/* out = e^x. Overflows to inf above ~88.7 (float32) or ~709.8 (float64),
 * goes to 0 below about -103 / -745, through subnormals. */
TG_UNARY_LOOP(exp_f32, float, float, expf(a))
TG_UNARY_LOOP(exp_f64, double, double, exp(a))
static const tg_elementwise_kernel exp_kernel = {exp_f32, exp_f64, NULL,
                                                 false};

tg_tensor *tg_exp(const tg_tensor *x)
{
    return tg_unary_apply("tg_exp", &exp_kernel, x, NULL);
}

/* ---------------------------------------------------------------- log */
/* out = ln(x): -inf at 0, NaN for x < 0 (no error: as PyTorch, a domain
 * error is a value, not a failure). */
TG_UNARY_LOOP(log_f32, float, float, logf(a))
TG_UNARY_LOOP(log_f64, double, double, log(a))
static const tg_elementwise_kernel log_kernel = {log_f32, log_f64, NULL,
                                                 false};

tg_tensor *tg_log(const tg_tensor *x)
{
    return tg_unary_apply("tg_log", &log_kernel, x, NULL);
}

/* --------------------------------------------------------------- sqrt */
/* out = sqrt(x), correctly rounded (IEEE 754 requires it); NaN for x < 0,
 * and sqrt(-0) = -0. */
TG_UNARY_LOOP(sqrt_f32, float, float, sqrtf(a))
TG_UNARY_LOOP(sqrt_f64, double, double, sqrt(a))
static const tg_elementwise_kernel sqrt_kernel = {sqrt_f32, sqrt_f64, NULL,
                                                  false};

tg_tensor *tg_sqrt(const tg_tensor *x)
{
    return tg_unary_apply("tg_sqrt", &sqrt_kernel, x, NULL);
}

/* -------------------------------------------------------------- rsqrt */
/* out = 1 / sqrt(x): inf at +0, -inf at -0, 0 at inf, NaN for x < 0. Two
 * roundings, so within an ulp or so of the exact value. */
TG_UNARY_LOOP(rsqrt_f32, float, float, 1.0f / sqrtf(a))
TG_UNARY_LOOP(rsqrt_f64, double, double, 1.0 / sqrt(a))
static const tg_elementwise_kernel rsqrt_kernel = {rsqrt_f32, rsqrt_f64, NULL,
                                                   false};

tg_tensor *tg_rsqrt(const tg_tensor *x)
{
    return tg_unary_apply("tg_rsqrt", &rsqrt_kernel, x, NULL);
}

/* ---------------------------------------------------------------- abs */
/* out = |x|. |-0| = +0 and |NaN| is NaN; in int64, |INT64_MIN| wraps to
 * INT64_MIN as in PyTorch (computed unsigned, where wrapping is defined). */
TG_UNARY_LOOP(abs_f32, float, float, fabsf(a))
TG_UNARY_LOOP(abs_f64, double, double, fabs(a))
TG_UNARY_LOOP(abs_i64, int64_t, int64_t,
              a < 0 ? (int64_t)(UINT64_C(0) - (uint64_t)a) : a)
static const tg_elementwise_kernel abs_kernel = {abs_f32, abs_f64, abs_i64,
                                                 false};

tg_tensor *tg_abs(const tg_tensor *x)
{
    return tg_unary_apply("tg_abs", &abs_kernel, x, NULL);
}
