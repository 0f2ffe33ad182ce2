/*
 * autograd/kernels/activation_fast.c - tanh on float32 written for the
 * vectoriser: the kernel autograd/ops/activation.c runs unless
 * TG_KERNELS=reference, where it calls C's tanhf.
 *
 * Not the place to learn tanh: activation.c has the op and its backward.
 * This file exists because C's tanhf is a call per element, and a tanh
 * layer of makemore part 3's MLP made more than half of its training
 * step's time; with the loop below, which the compiler vectorises, the
 * step went from 0.154 to 0.068 ms (bench/makemore_part3.py, the Zen 5 of
 * docs/performance.md). It is also more accurate than glibc's tanhf.
 *
 * The math, for a float32 x, all in double and rounded once to float32:
 *
 *   tanh x = sign(x) (1 - e) / (1 + e),   e = exp(-2 |x|) in (0, 1],
 *
 * which cannot overflow. e = exp(y), y = -2 |x| clamped to [-64, 0]
 * (below -64, e < 2^-92 and 1 -+ e is 1 in double), is exp_log_fast.h's
 * branch-free exp (Cody-Waite reduction, Taylor series to r^13 / 13!,
 * 2^n written into the exponent bits), so e carries a relative error of
 * a few double ulps (~1e-16). For |x| >= 2^-10, 1 - e >= about 2^-9, so
 * its relative error stays below ~5e-14, and the quotient's below ~6e-14:
 * a million times smaller than float32's half ulp (3e-8). Below 2^-10, 1 - e would cancel, and
 *   tanh x = x - x^3 / 3 + 2 x^5 / 15 - ...
 * is used instead (the next term is below 6e-20 of x). The result is thus
 * the float32 nearest tanh(x) except when the double value falls within
 * ~6e-14 of the midpoint between two floats. Measured against C's double
 * tanh rounded to float32, over all 2^32 float32 inputs: 2 off by one
 * ulp, none more (glibc's tanhf: 118,674,314 off, by up to 2 ulps).
 * tests/autograd/test_fast_tanh.c checks a sweep of the whole range, the
 * edges of both branches and the special values, and with
 * TG_TANH_EXHAUSTIVE=1 every input, counting both.
 *
 * Special values: -0 stays -0 (the series branch, then the sign), +-inf
 * give +-1 (y is clamped), NaN gives NaN (every step passes it on), and
 * subnormal inputs come back unchanged (x - x^3 / 3 rounds to x).
 *
 * Written for the vectoriser as exp_log_fast.h says: the two choices
 * (the clamp, the branch for small |x|) are selections by bit masks, so
 * the clones for each CPU width (TG_VECTOR_CLONES) give the same bits.
 */
#include "activation_fast.h"

#include "exp_log_fast.h"

#include <math.h>

static inline float tanh_one(float xf)
{
    const double x = xf, ax = fabs(x);
    /* e = exp(y), y = -2|x| clamped to [-64, 0]; NaN stays NaN */
    double y = -2.0 * ax;
    y = tg_select_double(y < -64.0, -64.0, y);
    const double e = tg_exp_in_range(y);
    const double big = (1.0 - e) / (1.0 + e);
    /* |x| < 2^-10: the series, where 1 - e would cancel */
    const double x2 = ax * ax;
    const double small = ax + ax * x2 * (-1.0 / 3.0 + x2 * (2.0 / 15.0));
    const double t = tg_select_double(ax < 0x1p-10, small, big);
    return (float)copysign(t, x);
}

float tg_tanh_f32_fast_one(float x)
{
    return tanh_one(x);
}

TG_UNARY_LOOP_CLONES(tanh_f32_loop, float, float, tanh_one(a))

void tg_tanh_f32_fast(char **data, const int64_t *st, int64_t n, void *ctx)
{
    tanh_f32_loop(data, st, n, ctx);
}
