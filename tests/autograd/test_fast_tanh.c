/*
 * tests/autograd/test_fast_tanh.c - the fast float32 tanh
 * (autograd/kernels/activation_fast.c) against the float64 answer, and
 * tg_tanh's use of it.
 *
 * What it checks:
 *  - over a sweep of every 1021st float32 bit pattern (about 4.2 million
 *    inputs, both signs, from subnormals to infinity) and dense stretches
 *    around the places where the kernel changes method (|x| = 2^-10,
 *    where the series gives way to exp; |x| = 32, where the argument of
 *    exp is clamped; |x| near 9.01, where tanh reaches 1 in float32;
 *    near 0 and the subnormals), the result is within 1 ulp of C's
 *    double tanh rounded to float32. Measured over all 2^32 inputs
 *    (TG_TANH_EXHAUSTIVE=1): 2 off by one ulp (see activation_fast.c);
 *    the sweep logs how many it met;
 *  - the special values: -0 stays -0, +-inf give +-1, NaN gives NaN,
 *    subnormals come back unchanged;
 *  - the ulp comparison rejects an answer 2 ulps off;
 *  - tg_tanh runs this kernel with the fast kernels and C's tanhf with
 *    TG_KERNELS=reference, bit for bit, on contiguous and strided input,
 *    small and large; its backward is g (1 - out^2) in both,
 *    bit for bit (one loop with the fast kernels, three ops with the
 *    reference ones).
 */
#include "../common.h"

#include "autograd/kernels/activation_fast.h"

#include <float.h>
#include <stdlib.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

static float float_of_bits(uint32_t u)
{
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

/* How far the fast tanh of x is from the float64 answer rounded to
 * float32, in ulps (x not NaN). */
static int64_t ulps_off(float x, float got)
{
    float want = (float)tanh((double)x);
    return llabs(tg_test_ulp_position(got) - tg_test_ulp_position(want));
}

typedef struct sweep {
    int64_t inputs, off, worst;
    float worst_x;
} sweep;

static void check_one(sweep *s, float x)
{
    if (isnan(x))
        return;
    int64_t d = ulps_off(x, tg_tanh_f32_fast_one(x));
    s->inputs++;
    s->off += d > 0;
    if (d > s->worst) {
        s->worst = d;
        s->worst_x = x;
    }
}

/* count floats on each side of x, both signs */
static void check_around(sweep *s, float x, int count)
{
    float up = x, down = x;
    for (int i = 0; i < count; i++) {
        check_one(s, up);
        check_one(s, -up);
        check_one(s, down);
        check_one(s, -down);
        up = nextafterf(up, INFINITY);
        down = nextafterf(down, 0.0f);
    }
}

TG_TEST(fast_tanh, within_one_ulp_of_float64_over_the_float32_range)
{
    /* TG_TANH_EXHAUSTIVE=1: every float32 (a minute and a half), and tanhf
     * counted the same way, for the figures in activation_fast.c */
    const char *all = getenv("TG_TANH_EXHAUSTIVE");
    const uint64_t step = all && strcmp(all, "1") == 0 ? 1 : 1021;
    sweep s = {0}, libm = {0};
    for (uint64_t u = 0; u <= UINT32_MAX; u += step) {
        float x = float_of_bits((uint32_t)u);
        check_one(&s, x);
        if (step == 1 && !isnan(x)) {
            int64_t d = ulps_off(x, tanhf(x));
            libm.off += d > 0;
            libm.worst = d > libm.worst ? d : libm.worst;
        }
    }
    if (step == 1)
        cr_log_info("C's tanhf: %lld off, worst %lld ulps",
                    (long long)libm.off, (long long)libm.worst);
    check_around(&s, 0x1p-10f, 20000);  // series / exp
    check_around(&s, 32.0f, 2000);      // the clamp of exp's argument
    check_around(&s, 9.0109f, 2000);    // tanh reaches 1 in float32
    check_around(&s, 0.5f, 20000);
    check_around(&s, FLT_MIN, 2000);    // the smallest normal
    check_around(&s, 0x1p-149f, 2000);  // the subnormals from below
    cr_log_info("fast tanh: %lld inputs, %lld off, worst %lld ulps "
                "(at %a)",
                (long long)s.inputs, (long long)s.off, (long long)s.worst,
                (double)s.worst_x);
    cr_assert_leq(s.worst, 1, "tanh(%a) is %lld ulps from the float64 answer",
                  (double)s.worst_x, (long long)s.worst);
    cr_assert_gt(s.inputs, 4000000);
}

TG_TEST(fast_tanh, special_values)
{
    float z = tg_tanh_f32_fast_one(-0.0f);
    cr_assert(z == 0.0f && signbit(z), "tanh(-0) is %a", (double)z);
    z = tg_tanh_f32_fast_one(0.0f);
    cr_assert(z == 0.0f && !signbit(z), "tanh(+0) is %a", (double)z);
    cr_assert_eq(tg_tanh_f32_fast_one(INFINITY), 1.0f);
    cr_assert_eq(tg_tanh_f32_fast_one(-INFINITY), -1.0f);
    cr_assert_eq(tg_tanh_f32_fast_one(FLT_MAX), 1.0f);
    cr_assert_eq(tg_tanh_f32_fast_one(-FLT_MAX), -1.0f);
    cr_assert(isnan(tg_tanh_f32_fast_one(NAN)));
    cr_assert(isnan(tg_tanh_f32_fast_one(-NAN)));
    const float subnormals[] = {0x1p-149f, -0x1p-149f, 0x1.8p-140f,
                                -0x1.fffffcp-127f};
    for (int i = 0; i < 4; i++)
        cr_assert_eq(tg_tanh_f32_fast_one(subnormals[i]), subnormals[i],
                     "tanh(%a)", (double)subnormals[i]);
}

/* The comparison above is not vacuous: a result 2 ulps from the answer
 * counts as 2, one 1 ulp away as 1. */
TG_TEST(fast_tanh, the_ulp_check_rejects_a_wrong_answer)
{
    const float x = 0.7f;
    float want = (float)tanh((double)x);
    float two_off = nextafterf(nextafterf(want, 2.0f), 2.0f);
    cr_assert_eq(ulps_off(x, two_off), 2);
    cr_assert_eq(ulps_off(x, nextafterf(want, 0.0f)), 1);
    cr_assert_eq(ulps_off(x, want), 0);
    cr_assert_eq(ulps_off(-x, -want), 0);
}

/* x: n values spread over [-12, 12], a few special ones among them */
static tg_tensor *spread(int64_t n)
{
    tg_tensor *x = tg_empty(TG_SHAPE(n), TG_FLOAT32);
    float *v = tg_data_f32(x);
    for (int64_t i = 0; i < n; i++)
        v[i] = -12.0f + 24.0f * (float)i / (float)(n - 1);
    v[0] = -0.0f;
    v[n / 2] = 3e-4f;
    v[n - 1] = INFINITY;
    return x;
}

/* out[i] == f(x[i]) for every element, bit for bit */
static void assert_each(const tg_tensor *x, const tg_tensor *out,
                        float (*f)(float), const char *what)
{
    int64_t n = x->numel;
    float *xs = malloc((size_t)n * sizeof *xs);
    float *os = malloc((size_t)n * sizeof *os);
    cr_assert(xs && os);
    double *tmp = malloc((size_t)n * sizeof *tmp);
    cr_assert(tmp);
    cr_assert_eq(tg_to_f64_array(x, tmp), 0);
    for (int64_t i = 0; i < n; i++)
        xs[i] = (float)tmp[i];
    cr_assert_eq(tg_to_f64_array(out, tmp), 0);
    for (int64_t i = 0; i < n; i++)
        os[i] = (float)tmp[i];
    for (int64_t i = 0; i < n; i++) {
        float want = f(xs[i]);
        cr_assert(memcmp(&want, &os[i], sizeof want) == 0,
                  "%s: tanh(%a) is %a, want %a", what, (double)xs[i],
                  (double)os[i], (double)want);
    }
    free(xs);
    free(os);
    free(tmp);
}

static float libm_tanhf(float x)
{
    return tanhf(x);
}

TG_TEST(fast_tanh, tg_tanh_runs_it_and_the_reference_kernels_run_tanhf)
{
    /* 1000 and 300000 elements, and a strided view of each */
    const int64_t sizes[] = {1000, 300000};
    for (int k = 0; k < 2; k++) {
        tg_tensor *x = spread(sizes[k]);
        tg_tensor *x2 = tg_reshape(x, TG_SHAPE(sizes[k] / 2, 2));
        tg_tensor *strided = tg_transpose(x2, 0, 1); // not contiguous
        cr_assert(x && x2 && strided);
        for (int ref = 0; ref < 2; ref++) {
            cr_assert_eq(tg_set_kernels(ref ? TG_KERNELS_REFERENCE
                                            : TG_KERNELS_FAST),
                         0);
            float (*f)(float) = ref ? libm_tanhf : tg_tanh_f32_fast_one;
            tg_tensor *y = tg_tanh(x), *ys = tg_tanh(strided);
            cr_assert(y && ys);
            assert_each(x, y, f, ref ? "reference" : "fast");
            assert_each(strided, ys, f, ref ? "reference, strided"
                                            : "fast, strided");
            tg_release(y);
            tg_release(ys);
        }
        tg_set_kernels(TG_KERNELS_FAST);
        tg_release(strided);
        tg_release(x2);
        tg_release(x);
    }
}

/* dx = g (1 - out^2), computed here in float32 as the three ops compute
 * it: the fused loop must give the same bits. */
TG_TEST(fast_tanh, backward_is_g_times_one_minus_out_squared_bit_for_bit)
{
    for (int ref = 0; ref < 2; ref++) {
        cr_assert_eq(
            tg_set_kernels(ref ? TG_KERNELS_REFERENCE : TG_KERNELS_FAST), 0);
        tg_tensor *x = spread(777);
        tg_set_requires_grad(x, true);
        tg_tensor *g = tg_randn(TG_SHAPE(777), TG_FLOAT32);
        tg_tensor *y = tg_tanh(x);
        cr_assert(x && g && y);
        tg_backward_options o = {.grad = g};
        cr_assert_eq(tg_backward_ex(y, &o), 0);
        const float *ys = tg_data_f32(y), *gs = tg_data_f32(g);
        const float *dx = tg_data_f32(x->grad);
        for (int64_t i = 0; i < 777; i++) {
            float sq = ys[i] * ys[i];
            float slope = 1.0f - sq;
            float want = gs[i] * slope;
            cr_assert(memcmp(&want, &dx[i], sizeof want) == 0,
                      "%s: element %lld: %a, want %a",
                      ref ? "reference" : "fast", (long long)i,
                      (double)dx[i], (double)want);
        }
        tg_release(y);
        tg_release(g);
        tg_release(x);
    }
    tg_set_kernels(TG_KERNELS_FAST);
}
