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
 * which cannot overflow. exp(y), y = -2 |x| clamped to [-64, 0] (below
 * -64, e < 2^-92 and 1 -+ e is 1 in double), is taken as 2^n exp(r):
 *  - n = round(y / ln 2), found by adding 1.5 * 2^52 to y log2(e): the sum
 *    is rounded to an integer, which then sits in its low bits;
 *  - r = y - n ln 2 with ln 2 in two parts (Cody and Waite): n times the
 *    high part, whose last 11 bits are zero, is exact, so |r| <= ln 2 / 2
 *    is found to within an ulp or so;
 *  - exp(r) by its Taylor series to r^13 / 13! (the rest is below 6e-18
 *    relative for |r| <= ln 2 / 2), in Horner's form;
 *  - 2^n written straight into a double's exponent bits (n + 1023).
 * So e carries a relative error of a few double ulps (~1e-16). For |x| >=
 * 2^-10, 1 - e >= about 2^-9, so its relative error stays below ~5e-14,
 * and the quotient's below ~6e-14: a million times smaller than float32's
 * half ulp (3e-8). Below 2^-10, 1 - e would cancel, and
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
 * Written for the vectoriser: the two choices (the clamp, the branch for
 * small |x|) are selections by bit masks, not conditional expressions.
 * GCC does not turn a conditional into a vector blend when one side holds
 * floating-point operations that could trap (its default
 * -ftrapping-math), and with AVX2 it then left the loop scalar. Every
 * value is one IEEE double operation or a bit operation, and the build
 * forbids fused multiply-adds (-ffp-contract=off), so the clones for each
 * CPU width (TG_VECTOR_CLONES) give the same bits.
 */
#include "activation_fast.h"

#include <math.h>
#include <string.h>

static inline uint64_t bits_of(double d)
{
    uint64_t u;
    memcpy(&u, &d, sizeof u);
    return u;
}

static inline double double_of(uint64_t u)
{
    double d;
    memcpy(&d, &u, sizeof d);
    return d;
}

/* a where c, else b, by masks of bits: no branch for the compiler to make
 * (see above) */
static inline double select_double(bool c, double a, double b)
{
    uint64_t m = -(uint64_t)c;
    return double_of((bits_of(a) & m) | (bits_of(b) & ~m));
}

static inline float tanh_one(float xf)
{
    const double x = xf, ax = fabs(x);
    /* e = exp(y), y = -2|x| clamped to [-64, 0]; NaN stays NaN */
    double y = -2.0 * ax;
    y = select_double(y < -64.0, -64.0, y);
    /* y = n ln2 + r: n = round(y log2(e)) in the low bits of kd */
    const double SHIFT = 0x1.8p52;
    const double kd = y * 0x1.71547652b82fep0 + SHIFT;
    const double n = kd - SHIFT;
    double r = y - n * 0x1.62e42fefa3800p-1; // ln 2, high part: exact
    r = r - n * 0x1.ef35793c7673p-45;        // ln 2, low part
    /* exp(r) = 1 + r + r^2 / 2! + ... + r^13 / 13! */
    double p = 1.0 / 6227020800.0;
    p = p * r + 1.0 / 479001600.0;
    p = p * r + 1.0 / 39916800.0;
    p = p * r + 1.0 / 3628800.0;
    p = p * r + 1.0 / 362880.0;
    p = p * r + 1.0 / 40320.0;
    p = p * r + 1.0 / 5040.0;
    p = p * r + 1.0 / 720.0;
    p = p * r + 1.0 / 120.0;
    p = p * r + 1.0 / 24.0;
    p = p * r + 1.0 / 6.0;
    p = p * r + 0.5;
    p = p * r + 1.0;
    p = p * r + 1.0;
    /* 2^n: n + 1023 in the exponent field (n in [-93, 0]) */
    const double two_n =
        double_of((bits_of(kd) - bits_of(SHIFT) + 1023) << 52);
    const double e = p * two_n;
    const double big = (1.0 - e) / (1.0 + e);
    /* |x| < 2^-10: the series, where 1 - e would cancel */
    const double x2 = ax * ax;
    const double small = ax + ax * x2 * (-1.0 / 3.0 + x2 * (2.0 / 15.0));
    const double t = select_double(ax < 0x1p-10, small, big);
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
