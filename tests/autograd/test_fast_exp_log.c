/*
 * tests/autograd/test_fast_exp_log.c - the branch-free exp and log of
 * autograd/kernels/exp_log_fast.h against C's, and the fast float32
 * softmax and log_softmax (autograd/kernels/softmax_fast.c) built on
 * them, against the reference kernel and the float64 answer.
 *
 * What it checks:
 *  - exp over [-708, 709] and log over positive normal doubles, in sweeps
 *    of random and hand-picked inputs, within 2 double ulps of the exact
 *    value (long double's expl and logl; the sweeps log their worst);
 *    exp(0) is 1, log(1) is 0, NaN stays NaN; the ulp measure rejects an
 *    answer 3 ulps off;
 *  - softmax and log_softmax of random float32 rows of 1 to 5000 elements
 *    (both the chunked short rows and the long rows in pieces, their
 *    boundaries included): every element within 1 float32 ulp of the
 *    reference kernel's (TG_KERNELS=reference, C's exp and log) and of the
 *    float64 answer, the count of differing elements logged;
 *  - rows with -inf, +inf, NaN, all -inf, huge values and one element give
 *    what the reference kernel gives, bit for bit;
 *  - a strided float32 input gives the same bits as its contiguous copy;
 *    float64 input and softmax along another dim than the last keep the
 *    reference kernel, bit for bit.
 */
#include "../common.h"

#include "autograd/kernels/exp_log_fast.h"
#include "tensor/internal.h" // tg_read_flat

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* |got - want| in units of the spacing of doubles at want (want finite,
 * nonzero) */
static double double_ulps(double got, long double want)
{
    double w = (double)want;
    double spacing = nextafter(fabs(w), INFINITY) - fabs(w);
    return (double)(fabsl((long double)got - want) / spacing);
}

typedef struct worst {
    double ulps;
    double at;
} worst;

static void note(worst *w, double ulps, double at)
{
    if (ulps > w->ulps) {
        w->ulps = ulps;
        w->at = at;
    }
}

/* A reproducible uniform double in [0, 1): splitmix64 */
static double uniform(uint64_t *state)
{
    uint64_t z = (*state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    z ^= z >> 31;
    return (double)(z >> 11) * 0x1p-53;
}

TG_TEST(exp_log_fast, exp_within_2_ulps_over_its_range)
{
    worst w = {0, 0};
    uint64_t st = 1;
    for (int i = 0; i < 2000000; i++) {
        double u = uniform(&st);
        /* the whole range, and [-1, 1] and [-1e-6, 1e-6] densely */
        double y = i % 3 == 0   ? 1417.0 * u - 708.0
                   : i % 3 == 1 ? 2.0 * u - 1.0
                                : 2e-6 * u - 1e-6;
        note(&w, double_ulps(tg_exp_in_range(y), expl((long double)y)), y);
    }
    /* around the reduction's points n ln 2 and halfway between them */
    for (int n = -1022; n <= 1022; n++)
        for (int k = -50; k <= 50; k++) {
            double c = 0.6931471805599453 * (n + (k % 2 ? 0.5 : 0.0));
            double y = c + k * 1e-12;
            if (y > 709 || y < -708)
                continue;
            note(&w, double_ulps(tg_exp_in_range(y), expl((long double)y)),
                 y);
        }
    cr_log_info("exp: worst %.3f double ulps, at %.17g", w.ulps, w.at);
    cr_assert_leq(w.ulps, 2.0, "exp(%.17g): %.3f ulps off", w.at, w.ulps);
    cr_assert_eq(tg_exp_in_range(0.0), 1.0);
    cr_assert_eq(tg_exp_in_range(-0.0), 1.0);
    cr_assert(isnan(tg_exp_in_range(NAN)));
}

TG_TEST(exp_log_fast, log_within_2_ulps_over_positive_normals)
{
    worst w = {0, 0};
    uint64_t st = 2;
    for (int i = 0; i < 2000000; i++) {
        double u = uniform(&st);
        double s = i % 4 == 0   ? 1.0 + 1e4 * u   // sums of exps: [1, n]
                   : i % 4 == 1 ? 1.0 + 1e-6 * u // just above 1
                   : i % 4 == 2 ? 1.0 - 1e-6 * u // just below 1
                                : ldexp(0.5 + u, (int)(uniform(&st) * 2040) - 1020);
        long double want = logl((long double)s);
        if (want == 0)
            continue; // s = 1: checked below
        note(&w, double_ulps(tg_log_positive(s), want), s);
    }
    /* around sqrt(2), where m is halved, and the powers of two */
    for (int e = -1020; e <= 1020; e += 17)
        for (int k = -20; k <= 20; k++) {
            double s = ldexp(1.4142135623730951 + k * 1e-15, e);
            note(&w, double_ulps(tg_log_positive(s), logl((long double)s)), s);
            double t = ldexp(1.0 + k * 0x1p-52, e);
            if (logl((long double)t) != 0)
                note(&w, double_ulps(tg_log_positive(t), logl((long double)t)),
                     t);
        }
    cr_log_info("log: worst %.3f double ulps, at %.17g", w.ulps, w.at);
    cr_assert_leq(w.ulps, 2.0, "log(%.17g): %.3f ulps off", w.at, w.ulps);
    cr_assert_eq(tg_log_positive(1.0), 0.0);
    cr_assert_eq(tg_log_positive(2.0), log(2.0));
    cr_assert(isnan(tg_log_positive(NAN)));
}

TG_TEST(exp_log_fast, the_ulp_measure_rejects_a_wrong_answer)
{
    double want = exp(-3.0);
    double off = nextafter(nextafter(nextafter(want, 1), 1), 1); // 3 ulps up
    cr_assert_gt(double_ulps(off, expl(-3.0L)), 2.0);
    cr_assert_lt(double_ulps(want, expl(-3.0L)), 1.0);
}

/* ------------------------------------------------------------ softmax */

static tg_tensor *softmax_with(bool log_form, const tg_tensor *x, int dim,
                               tg_kernels kernels)
{
    cr_assert_eq(tg_set_kernels(kernels), 0);
    tg_tensor *y = log_form ? tg_log_softmax(x, dim) : tg_softmax(x, dim);
    tg_set_kernels(TG_KERNELS_FAST);
    cr_assert_not_null(y, "%s", tg_last_error());
    return y;
}

/* The float64 answer (in long double) for a row of n elements: its
 * maximum and sum of exps, then each element */
typedef struct row_answer {
    long double m, sum;
} row_answer;

static row_answer row_of(const float *row, int64_t n)
{
    row_answer a = {row[0], 0};
    for (int64_t k = 1; k < n; k++)
        a.m = row[k] > a.m ? row[k] : a.m;
    for (int64_t k = 0; k < n; k++)
        a.sum += expl((long double)row[k] - a.m);
    return a;
}

static float answer(row_answer a, float x, bool log_form)
{
    return (float)(log_form ? (long double)x - a.m - logl(a.sum)
                            : expl((long double)x - a.m) / a.sum);
}

TG_TEST(fast_softmax, within_1_ulp_of_the_reference_kernel_and_float64)
{
    /* n: one element; short rows (3, 27 classes); the chunk's edge (1024:
     * one row a chunk); long rows in pieces (1025, 5000); rows counts
     * that leave a partial last chunk */
    const int64_t ns[] = {1, 3, 27, 100, 1023, 1024, 1025, 5000};
    const int64_t rows[] = {700, 600, 300, 50, 3, 3, 3, 2};
    int64_t elements = 0, differ = 0;
    tg_manual_seed(7);
    for (int c = 0; c < 8; c++) {
        const int64_t n = ns[c], R = rows[c];
        tg_tensor *z = tg_randn(TG_SHAPE(R, n), TG_FLOAT32);
        tg_tensor *x = tg_mul_scalar(z, 6.0); // a spread of logits
        cr_assert_not_null(x);
        const float *px = tg_data_f32(x);
        for (int log_form = 0; log_form < 2; log_form++) {
            tg_tensor *fast = softmax_with(log_form, x, 1, TG_KERNELS_FAST);
            tg_tensor *ref = softmax_with(log_form, x, 1, TG_KERNELS_REFERENCE);
            const float *f = tg_data_f32(fast), *g = tg_data_f32(ref);
            row_answer a = {0, 0};
            for (int64_t i = 0; i < R * n; i++) {
                if (i % n == 0)
                    a = row_of(px + i, n);
                int64_t d = llabs(tg_test_ulp_position(f[i]) - tg_test_ulp_position(g[i]));
                float want = answer(a, px[i], log_form);
                int64_t e = llabs(tg_test_ulp_position(f[i]) - tg_test_ulp_position(want));
                cr_assert_leq(d, 1, "n %lld, %s, element %lld: %a, the "
                              "reference kernel %a", (long long)n,
                              log_form ? "log_softmax" : "softmax",
                              (long long)i, (double)f[i], (double)g[i]);
                cr_assert_leq(e, 1, "n %lld, %s, element %lld: %a, the "
                              "float64 answer %a", (long long)n,
                              log_form ? "log_softmax" : "softmax",
                              (long long)i, (double)f[i], (double)want);
                differ += d != 0;
                elements++;
            }
            tg_release(fast);
            tg_release(ref);
        }
        tg_release(x);
        tg_release(z);
    }
    cr_log_info("softmax, log_softmax: %lld of %lld elements differ from the "
                "reference kernel's (by 1 ulp)",
                (long long)differ, (long long)elements);
}

static void assert_same_bits(const tg_tensor *a, const tg_tensor *b,
                             const char *what)
{
    cr_assert_eq(a->numel, b->numel);
    for (int64_t i = 0; i < a->numel; i++) {
        double u = tg_read_flat(a, i), v = tg_read_flat(b, i);
        cr_assert(memcmp(&u, &v, sizeof u) == 0 || (isnan(u) && isnan(v)),
                  "%s, element %lld: %a, want %a", what, (long long)i, u, v);
    }
}

TG_TEST(fast_softmax, special_rows_as_the_reference_kernel)
{
    const float inf = INFINITY, nan = NAN;
    const float rows[][4] = {
        {1.0f, -inf, 2.0f, 0.5f},     // a -inf entry: 0, -inf
        {1.0f, inf, 2.0f, 0.5f},      // +inf: a NaN row
        {1.0f, nan, 2.0f, 0.5f},      // NaN: a NaN row
        {-inf, -inf, -inf, -inf},     // all -inf: a NaN row
        {3e38f, -3e38f, 1e30f, 0.0f}, // huge: exp underflows to 0
        {-800.0f, 0.0f, -750.0f, -707.0f}, // around the clamp at -708
        {88.0f, 88.0f, 88.0f, 88.0f}, // equal: 1/4 each
    };
    tg_tensor *x = tg_from_array(&rows[0][0], TG_SHAPE(7, 4), TG_FLOAT32);
    tg_tensor *one = tg_from_array(&rows[0][0], TG_SHAPE(1, 1), TG_FLOAT32);
    cr_assert(x && one);
    for (int log_form = 0; log_form < 2; log_form++) {
        const tg_tensor *ins[] = {x, one};
        for (int k = 0; k < 2; k++) {
            tg_tensor *f = softmax_with(log_form, ins[k], -1, TG_KERNELS_FAST);
            tg_tensor *r =
                softmax_with(log_form, ins[k], -1, TG_KERNELS_REFERENCE);
            assert_same_bits(f, r, log_form ? "log_softmax" : "softmax");
            tg_release(f);
            tg_release(r);
        }
    }
    tg_release(one);
    tg_release(x);
}

TG_TEST(fast_softmax, strided_float64_and_other_dims)
{
    tg_manual_seed(3);
    tg_tensor *x = tg_randn(TG_SHAPE(40, 27), TG_FLOAT32);
    tg_tensor *xs = tg_test_non_contiguous(x, false); // transposed in memory
    tg_tensor *x64 = tg_to_dtype(x, TG_FLOAT64);
    cr_assert(x && xs && x64);
    for (int log_form = 0; log_form < 2; log_form++) {
        const char *name = log_form ? "log_softmax" : "softmax";
        tg_tensor *a = softmax_with(log_form, x, 1, TG_KERNELS_FAST);
        tg_tensor *b = softmax_with(log_form, xs, 1, TG_KERNELS_FAST);
        assert_same_bits(b, a, name);
        for (int k = 0; k < 2; k++) {
            /* float64, and dim 0 of float32: the reference kernel */
            tg_tensor *in = k ? x64 : x;
            int dim = k ? 1 : 0;
            tg_tensor *f = softmax_with(log_form, in, dim, TG_KERNELS_FAST);
            tg_tensor *r = softmax_with(log_form, in, dim, TG_KERNELS_REFERENCE);
            assert_same_bits(f, r, name);
            tg_release(f);
            tg_release(r);
        }
        tg_release(a);
        tg_release(b);
    }
    tg_release(x64);
    tg_release(xs);
    tg_release(x);
}
