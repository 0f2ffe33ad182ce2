/*
 * autograd/kernels/exp_log_fast.h - exp and log in double, written for the
 * vectoriser, for the fast kernels whose float32 results round them once:
 * tanh (activation_fast.c) and softmax, log_softmax (softmax_fast.c). Not
 * installed.
 *
 * C's exp and log are a call per element, which the compiler cannot
 * vectorise. These are branch-free: each value is one IEEE double
 * operation or a bit operation, and the build forbids fused multiply-adds
 * (-ffp-contract=off), so the clones for each CPU width (TG_VECTOR_CLONES)
 * give the same bits. Choices are selections by bit masks, not
 * conditional expressions: GCC does not turn a conditional into a vector
 * blend when one side holds floating-point operations that could trap
 * (its default -ftrapping-math), and with AVX2 it then leaves the loop
 * scalar.
 *
 * Both are within a few double ulps (~1e-16 relative) of the true value:
 * a float32 result computed from them rounds as from C's exp and log
 * except when the double value falls within that distance of the midpoint
 * between two floats. tests/autograd/test_fast_exp_log.c holds them to
 * C's functions over sweeps of their ranges.
 */
#ifndef TG_AUTOGRAD_KERNELS_EXP_LOG_FAST_H
#define TG_AUTOGRAD_KERNELS_EXP_LOG_FAST_H

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

static inline uint64_t tg_bits_of(double d)
{
    uint64_t u;
    memcpy(&u, &d, sizeof u);
    return u;
}

static inline double tg_double_of(uint64_t u)
{
    double d;
    memcpy(&d, &u, sizeof d);
    return d;
}

/* a where c, else b, by masks of bits: no branch for the compiler to make */
static inline double tg_select_double(bool c, double a, double b)
{
    uint64_t m = -(uint64_t)c;
    return tg_double_of((tg_bits_of(a) & m) | (tg_bits_of(b) & ~m));
}

/* exp(y) for y in [-708, 709] (NaN gives NaN), as 2^n exp(r):
 *  - n = round(y / ln 2), found by adding 1.5 * 2^52 to y log2(e): the sum
 *    is rounded to an integer, which then sits in its low bits;
 *  - r = y - n ln 2 with ln 2 in two parts (Cody and Waite): n times the
 *    high part, whose last 11 bits are zero, is exact, so |r| <= ln 2 / 2
 *    is found to within an ulp or so;
 *  - exp(r) by its Taylor series to r^13 / 13! (the rest is below 6e-18
 *    relative for |r| <= ln 2 / 2), in Horner's form;
 *  - 2^n written straight into a double's exponent bits (n + 1023, which
 *    y in [-708, 709] keeps in [1, 2046]: no subnormal and no infinite
 *    results).
 * exp(0) is exactly 1. */
static inline double tg_exp_in_range(double y)
{
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
    /* 2^n: n + 1023 in the exponent field */
    const double two_n =
        tg_double_of((tg_bits_of(kd) - tg_bits_of(SHIFT) + 1023) << 52);
    return p * two_n;
}

/* log(s) for a positive normal s (NaN gives NaN), as k ln 2 + log m:
 *  - s = 2^k m with m in [sqrt(1/2), sqrt(2)), k and m read from s's bits
 *    (m's exponent field set to 1023, then halved when m >= sqrt(2));
 *  - log m = 2 atanh f = 2 (f + f^3 / 3 + f^5 / 5 + ...), f = (m - 1) /
 *    (m + 1), |f| <= 0.1716: m - 1 is exact (Sterbenz), m + 1 is rounded
 *    and its rounding error, found exactly, corrects the quotient, and the
 *    series to f^23 / 23 leaves below 3e-19 of log m;
 *  - k ln 2 with ln 2 in the same two parts as above: k times the high
 *    part is exact, and the low part joins log m before the two are
 *    added. */
static inline double tg_log_positive(double s)
{
    const uint64_t b = tg_bits_of(s);
    /* the exponent field as a double: OR-ed into the mantissa of 2^52
     * (an int64-to-double conversion would keep AVX2 and AVX-512F loops
     * scalar: they have no vector instruction for it) */
    double k = tg_double_of(((b >> 52) & 0x7ff) | 0x4330000000000000ULL) -
               0x1p52 - 1023.0;
    double m = tg_double_of((b & 0x000fffffffffffffULL) |
                            0x3ff0000000000000ULL); // [1, 2)
    const bool high = m >= 0x1.6a09e667f3bcdp0;       // sqrt(2)
    m = tg_select_double(high, m * 0.5, m);
    k = tg_select_double(high, k + 1.0, k);
    /* f = u / (2 + u), u = m - 1 exact; 2 + u is rounded, and its
     * rounding error d (exact: |u| < 2) corrects f to first order */
    const double u = m - 1.0, den = 2.0 + u;
    const double d = u - (den - 2.0);
    double f = u / den;
    f = f - f * (d / den);
    const double f2 = f * f;
    double q = 1.0 / 23.0;
    q = q * f2 + 1.0 / 21.0;
    q = q * f2 + 1.0 / 19.0;
    q = q * f2 + 1.0 / 17.0;
    q = q * f2 + 1.0 / 15.0;
    q = q * f2 + 1.0 / 13.0;
    q = q * f2 + 1.0 / 11.0;
    q = q * f2 + 1.0 / 9.0;
    q = q * f2 + 1.0 / 7.0;
    q = q * f2 + 1.0 / 5.0;
    q = q * f2 + 1.0 / 3.0;
    const double log_m = 2.0 * f + 2.0 * f * (f2 * q);
    const double result =
        k * 0x1.62e42fefa3800p-1 + (k * 0x1.ef35793c7673p-45 + log_m);
    return tg_select_double(s != s, s, result); // NaN stays NaN
}

#endif
