/*
 * tests/autograd/test_fast_norm_ulp.c - the accuracy contract of the fast
 * float32 LayerNorm and BatchNorm kernels, measured against the exact
 * answer's stand-in: the same float32 inputs converted to float64 and run
 * through the float64 reference kernels (TG_KERNELS_REFERENCE), whose
 * errors (~1e-16 relative) are far below a float32 ulp.
 *
 * What it checks, on rows (LayerNorm) and channels (BatchNorm1d, both
 * layouts) of N(0, 1) values, on the small-row path (one chunk, no
 * threads) and on shapes cut into several chunks or blocks:
 *  - y and dx: within 1 float32 ulp of the float64 answer rounded to
 *    float32. The fast kernels compute every y and dx in double from the
 *    float32 inputs and round once, so they are the float64 answer up to
 *    ~1e-16 relative (another order of the additions in the sums), and
 *    the two roundings to float32 can differ only by that one ulp, when
 *    the double lies next to a rounding midpoint.
 *  - mean, rstd (invstd), dweight, dbias: these are sums of many terms in
 *    another order; each is held to one float32 ulp (the two results are
 *    rounded separately) plus the distance the two summation orders can
 *    put between two double sums, derived next to each bound below
 *    (u = 2^-53, Higham's bound (n - 1) u sum |terms| per sum).
 *  - The small-row path and the chunked one give the same bits on 1 and
 *    2 threads.
 *  - The ulp comparison itself rejects an answer 2 ulps off.
 *
 * What it is not: the comparison with the float32 reference kernels and
 * the rows with |mean| >> std (test_fast_layer_norm.c,
 * test_fast_batch_norm.c).
 *
 * Across CPU widths (the kernels are compiled for plain x86-64, AVX2 and
 * AVX-512, one picked when the program starts) the results are the same
 * bits by construction, not by this test: every sum is split into
 * TG_NORM_LANES partial sums added up in an order the source fixes
 * (tg_norm_lanes_sum), every other value is one IEEE double operation on
 * the same operands in every clone, and the build forbids fused
 * multiply-adds (-ffp-contract=off), the one thing that would let the
 * AVX2 and AVX-512 clones round differently. A test binary runs only
 * the clone its CPU picks, so the identity is checked by hand (the same
 * program natively and under valgrind, which offers no AVX-512 and so
 * runs the AVX2 clone).
 */
#include "../common.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#define U64 0x1p-53 // u: the unit roundoff of double

/* The values of t as doubles (new malloc'd array; t may be any dtype). */
static double *values(const tg_tensor *t)
{
    double *v = malloc(((size_t)t->numel + 1) * sizeof *v);
    cr_assert(v);
    cr_assert_eq(tg_to_f64_array(t, v), 0);
    return v;
}

/* The spacing of float32 numbers at |v|: one ulp. */
static double ulp32(double v)
{
    float f = fabsf((float)v);
    return (double)nextafterf(f, INFINITY) - (double)f;
}

/* True when every element of a (float32) is within max_ulps ulps of the
 * matching element of r (float64) rounded to float32; else the worst
 * element in report. */
static bool within_ulps(const tg_tensor *a, const tg_tensor *r,
                        int64_t max_ulps, const char *name, char *report,
                        size_t size)
{
    if (!a || !r || a->numel != r->numel || a->dtype != TG_FLOAT32) {
        snprintf(report, size, "%s: missing, of another size or not float32",
                 name);
        return false;
    }
    double *va = values(a), *vr = values(r);
    int64_t worst = 0, at = 0;
    for (int64_t i = 0; i < a->numel; i++) {
        int64_t d = tg_test_ulp_position((float)va[i]) - tg_test_ulp_position((float)vr[i]);
        d = d < 0 ? -d : d;
        if (isnan(va[i]) != isnan(vr[i]))
            d = INT64_MAX;
        if (d > worst) {
            worst = d;
            at = i;
        }
    }
    bool ok = worst <= max_ulps;
    if (!ok)
        snprintf(report, size,
                 "%s: element %lld is %.9g, the float64 answer %.17g "
                 "(rounded %.9g): %lld ulps apart, more than %lld",
                 name, (long long)at, va[at], vr[at], (double)(float)vr[at],
                 (long long)worst, (long long)max_ulps);
    free(vr);
    free(va);
    return ok;
}

/* True when |a_i - r_i| <= ulp32(r_i) + bound[i] for every i; else the
 * worst element, measured against its allowance, in report. */
static bool within_bound(const tg_tensor *a, const tg_tensor *r,
                         const double *bound, const char *name, char *report,
                         size_t size)
{
    if (!a || !r || a->numel != r->numel) {
        snprintf(report, size, "%s: missing or of another size", name);
        return false;
    }
    double *va = values(a), *vr = values(r);
    double worst = 0.0; // the largest |a - r| / allowance
    int64_t at = 0;
    for (int64_t i = 0; i < a->numel; i++) {
        double allow = ulp32(fmax(fabs(va[i]), fabs(vr[i]))) + bound[i];
        double q = fabs(va[i] - vr[i]) / allow;
        if (!(q <= worst)) { // NaN counts as the worst
            worst = q;
            at = i;
        }
    }
    bool ok = worst <= 1.0;
    if (!ok)
        snprintf(report, size,
                 "%s: element %lld is %.9g, the float64 answer %.17g: "
                 "%.3g times its allowance",
                 name, (long long)at, va[at], vr[at], worst);
    free(vr);
    free(va);
    return ok;
}

/* randn * scale + shift in float32, a leaf that requires grad if asked. */
static tg_tensor *randn32(const int64_t *shape, int ndim, double scale,
                          double shift, bool grad)
{
    tg_tensor *r = tg_randn(shape, ndim, TG_FLOAT32);
    tg_tensor *s = tg_mul_scalar(r, scale);
    tg_tensor *t = tg_add_scalar(s, shift);
    tg_release(s);
    tg_release(r);
    cr_assert(t, "%s", tg_last_error());
    if (grad)
        cr_assert_eq(tg_set_requires_grad(t, true), 0);
    return t;
}

/* A float64 copy of a float32 leaf, requiring grad as it does. */
static tg_tensor *as_f64(const tg_tensor *t)
{
    tg_tensor *c = tg_to_dtype(t, TG_FLOAT64);
    tg_tensor *d = tg_detach(c);
    tg_release(c);
    cr_assert(d);
    if (t->requires_grad)
        cr_assert_eq(tg_set_requires_grad(d, true), 0);
    return d;
}

/* The gradient a leaf got, taken out of it. */
static tg_tensor *take_grad(tg_tensor *t)
{
    tg_tensor *g = tg_retain(t->grad);
    tg_clear_grad(t);
    cr_assert(g, "no gradient reached a leaf");
    return g;
}

/* What a run gives. */
enum { Y, DX, DW, DB, MEAN, RSTD, NOUT };
static const char *const names[NOUT] = {"y",  "dx",   "dweight",
                                        "dbias", "mean", "rstd"};

static void release_all(tg_tensor **t)
{
    for (int k = 0; k < NOUT; k++)
        tg_release(t[k]);
}

/* LayerNorm (last dim) or BatchNorm (training, no running statistics)
 * forward and backward of x, w, b with dy, on the given kernels and
 * thread count (both restored). */
static void run(bool ln, tg_tensor *x, tg_tensor *w, tg_tensor *b,
                const tg_tensor *dy, tg_kernels kernels, int threads,
                tg_tensor **out)
{
    tg_kernels saved_kernels = tg_get_kernels();
    int saved_threads = tg_get_num_threads();
    cr_assert_eq(tg_set_kernels(kernels), 0);
    cr_assert_eq(tg_set_num_threads(threads), 0);
    tg_tensor *y;
    if (ln) {
        const int64_t *ns = x->shape + x->ndim - 1;
        y = tg_layer_norm_ex(x, ns, 1, w, b, 1e-5, &out[MEAN], &out[RSTD]);
    } else {
        tg_batch_norm_options o = tg_batch_norm_defaults();
        y = tg_batch_norm_ex(x, NULL, NULL, w, b, &o, &out[MEAN],
                             &out[RSTD]);
    }
    cr_assert(y, "%s", tg_last_error());
    tg_backward_options bo = {.grad = dy};
    cr_assert_eq(tg_backward_ex(y, &bo), 0, "%s", tg_last_error());
    out[Y] = tg_detach(y);
    tg_release(y);
    out[DX] = take_grad(x);
    out[DW] = take_grad(w);
    out[DB] = take_grad(b);
    cr_assert_eq(tg_set_kernels(saved_kernels), 0);
    cr_assert_eq(tg_set_num_threads(saved_threads), 0);
}

/* The allowances for mean, rstd, dweight and dbias beyond one float32
 * ulp, from the float64 run's inputs and statistics (float64 arrays):
 * x (G groups of n values: group g, value k at x[g * gs + k * ks]), dy
 * alike, mean and rstd (G,). A group is a LayerNorm row or a BatchNorm
 * channel; dweight and dbias sum over the other axis (for LayerNorm the
 * column j over the M rows; for BatchNorm a channel's n values).
 *  - mean = sum(x) / n: two orders of n additions, each within
 *    (n - 1) u sum|x| of the exact sum: 2 n u sum|x| / n.
 *  - rstd = 1 / sqrt(var + eps), var = sum((x - mean)^2) / n. Each run's
 *    var is within (n + 3) u var of its own mean's exact variance (the
 *    sum's order, and d = x - mean and d * d each rounded once: 3 u); the
 *    two means differ by dm (above), which moves var by dm^2 only (the
 *    d sum to zero). Halved by the sqrt, plus the sqrt and the division:
 *    2 (n / 2 + 4) u rstd + rstd^3 dm^2 / 2; written 2 (n + 8) u rstd +
 *    rstd^3 dm^2.
 *  - dbias = sum(dy): 2 (count - 1) u sum|dy|.
 *  - dweight = sum(dy * xhat), xhat = (x - mean) rstd: the order, 2 count
 *    u sum|dy xhat|, plus what the two xhat differ by: |x - mean| drstd +
 *    rstd dm, plus 3 u |xhat| for the roundings of a term.
 * bound receives, in order, G (mean), G (rstd), D (dweight), D (dbias)
 * values, D being the length of the weight. */
static void allowances(bool ln, const double *x, const double *dy,
                       const double *mean, const double *rstd, int64_t G,
                       int64_t n, int64_t gs, int64_t ks, int64_t D,
                       double *bound)
{
    double *dm = bound, *drs = bound + G, *dw = bound + 2 * G,
           *db = dw + D;
    for (int64_t g = 0; g < G; g++) {
        double s = 0.0;
        for (int64_t k = 0; k < n; k++)
            s += fabs(x[g * gs + k * ks]);
        dm[g] = 2.0 * (double)n * U64 * s / (double)n;
        drs[g] = 2.0 * (double)(n + 8) * U64 * rstd[g] +
                 rstd[g] * rstd[g] * rstd[g] * dm[g] * dm[g];
    }
    for (int64_t j = 0; j < D; j++)
        dw[j] = db[j] = 0.0;
    /* the count of terms in each dweight / dbias sum */
    int64_t count = ln ? G : n;
    for (int64_t g = 0; g < G; g++)
        for (int64_t k = 0; k < n; k++) {
            int64_t i = g * gs + k * ks, j = ln ? k : g;
            double d = x[i] - mean[g], xh = d * rstd[g];
            dw[j] += fabs(dy[i]) *
                     ((2.0 * (double)count + 3.0) * U64 * fabs(xh) +
                      fabs(d) * drs[g] + rstd[g] * dm[g]);
            db[j] += 2.0 * (double)count * U64 * fabs(dy[i]);
        }
}

/* One case: float32 fast kernels at `threads` against the float64
 * reference, y and dx to 1 ulp, the statistics and parameter gradients
 * to their allowances. x is (G, n) for LayerNorm (rows), (N, C, S) for
 * BatchNorm (shape[1] the channel). */
static void check_contract(bool ln, const int64_t *shape, int ndim,
                           int threads, unsigned seed)
{
    tg_manual_seed(seed);
    int64_t D = ln ? shape[ndim - 1] : shape[1];
    tg_tensor *x = randn32(shape, ndim, 1, 0, true);
    tg_tensor *w = randn32(&D, 1, 1, 0, true);
    tg_tensor *b = randn32(&D, 1, 1, 0, true);
    tg_tensor *dy = randn32(shape, ndim, 1, 0, false);
    tg_tensor *x64 = as_f64(x), *w64 = as_f64(w), *b64 = as_f64(b),
              *dy64 = as_f64(dy);
    tg_tensor *fast[NOUT] = {0}, *ref[NOUT] = {0};
    run(ln, x, w, b, dy, TG_KERNELS_FAST, threads, fast);
    run(ln, x64, w64, b64, dy64, TG_KERNELS_REFERENCE, 1, ref);
    char what[96], report[512];
    snprintf(what, sizeof what, "%s of (%lld, %lld%s), %d thread%s",
             ln ? "LayerNorm" : "BatchNorm", (long long)shape[0],
             (long long)shape[1], ndim > 2 ? ", ..." : "", threads,
             threads == 1 ? "" : "s");
    for (int k = Y; k <= DX; k++)
        cr_assert(within_ulps(fast[k], ref[k], 1, names[k], report,
                              sizeof report),
                  "%s: %s", what, report);
    /* the allowances, from the float64 run */
    int64_t G, n, gs, ks;
    if (ln) {
        n = shape[ndim - 1];
        G = x->numel / n;
        gs = n;
        ks = 1;
    } else { // channel c of (N, C, S): value k = (i, s) at i C S + c S + s
        int64_t S = 1;
        for (int i = 2; i < ndim; i++)
            S *= shape[i];
        G = shape[1];
        n = shape[0] * S;
        gs = S;
        ks = 0; // not a single stride: gathered below
    }
    double *vx = values(x64), *vdy = values(dy64);
    double *vm = values(ref[MEAN]), *vr = values(ref[RSTD]);
    if (!ln) { // gather each channel's values into a (C, n) block
        int64_t S = gs, N = shape[0];
        double *gx = malloc(((size_t)x->numel + 1) * sizeof *gx);
        double *gdy = malloc(((size_t)x->numel + 1) * sizeof *gdy);
        cr_assert(gx && gdy);
        for (int64_t c = 0; c < G; c++)
            for (int64_t i = 0; i < N; i++)
                for (int64_t s = 0; s < S; s++) {
                    gx[c * n + i * S + s] = vx[(i * G + c) * S + s];
                    gdy[c * n + i * S + s] = vdy[(i * G + c) * S + s];
                }
        free(vx);
        free(vdy);
        vx = gx;
        vdy = gdy;
        gs = n;
        ks = 1;
    }
    double *bound = malloc((size_t)(2 * G + 2 * D) * sizeof *bound);
    cr_assert(bound);
    allowances(ln, vx, vdy, vm, vr, G, n, gs, ks, D, bound);
    const double *at[NOUT] = {[MEAN] = bound, [RSTD] = bound + G,
                              [DW] = bound + 2 * G,
                              [DB] = bound + 2 * G + D};
    for (int k = DW; k < NOUT; k++)
        cr_assert(within_bound(fast[k], ref[k], at[k], names[k], report,
                               sizeof report),
                  "%s: %s", what, report);
    free(bound);
    free(vr);
    free(vm);
    free(vdy);
    free(vx);
    release_all(ref);
    release_all(fast);
    tg_release(dy64);
    tg_release(b64);
    tg_release(w64);
    tg_release(x64);
    tg_release(dy);
    tg_release(b);
    tg_release(w);
    tg_release(x);
}

/* (64, 768): the small-row path (one chunk, no threads); (37, 19): short
 * rows, not a multiple of the 16 partial sums; (512, 768): six chunks of
 * rows, summed into dweight and dbias in chunk order. */
TG_TEST(fast_norm_ulp, layer_norm_float32_within_one_ulp_of_float64)
{
    static const int64_t shapes[][2] = {{64, 768}, {37, 19}, {512, 768}};
    for (int s = 0; s < 3; s++)
        for (int t = 1; t <= 2; t++)
            check_contract(true, shapes[s], 2, t, 21 + (unsigned)s);
}

/* BatchNorm1d on (N, C): one block of rows and several (65536 elements
 * each); on (N, C, L): whole channels of contiguous runs. */
TG_TEST(fast_norm_ulp, batch_norm_float32_within_one_ulp_of_float64)
{
    static const struct {
        int ndim;
        int64_t shape[3];
    } cases[] = {{2, {64, 768}}, {2, {700, 300}}, {3, {8, 16, 33}}};
    for (int s = 0; s < 3; s++)
        for (int t = 1; t <= 2; t++)
            check_contract(false, cases[s].shape, cases[s].ndim, t,
                           31 + (unsigned)s);
}

/* The small-row path and the chunked one: the same bits on 1 and 2
 * threads, for every output. */
TG_TEST(fast_norm_ulp, layer_norm_same_bits_on_one_and_two_threads)
{
    static const int64_t shapes[][2] = {{64, 768}, {512, 768}};
    for (int s = 0; s < 2; s++) {
        tg_manual_seed(41);
        const int64_t *shape = shapes[s];
        tg_tensor *x = randn32(shape, 2, 1, 0, true);
        tg_tensor *w = randn32(shape + 1, 1, 1, 1, true);
        tg_tensor *b = randn32(shape + 1, 1, 1, 0, true);
        tg_tensor *dy = randn32(shape, 2, 1, 0, false);
        tg_tensor *one[NOUT] = {0}, *two[NOUT] = {0};
        run(true, x, w, b, dy, TG_KERNELS_FAST, 1, one);
        run(true, x, w, b, dy, TG_KERNELS_FAST, 2, two);
        for (int k = 0; k < NOUT; k++) {
            cr_assert_eq(one[k]->numel, two[k]->numel);
            cr_assert_eq(one[k]->dtype, TG_FLOAT32);
            cr_assert(memcmp(tg_data_f32(one[k]), tg_data_f32(two[k]),
                             (size_t)one[k]->numel * sizeof(float)) == 0,
                      "(%lld, %lld): %s differs between 1 and 2 threads",
                      (long long)shape[0], (long long)shape[1], names[k]);
        }
        release_all(two);
        release_all(one);
        tg_release(dy);
        tg_release(b);
        tg_release(w);
        tg_release(x);
    }
}

/* The comparisons can fail: an element 2 ulps from the float64 answer,
 * one NaN, and a mean outside its allowance are caught; 1 ulp is not. */
TG_TEST(fast_norm_ulp, comparisons_reject_a_wrong_answer)
{
    char report[512];
    double v[3] = {1.0, -0.3, 1e-3};
    tg_tensor *r = tg_from_array(v, TG_SHAPE(3), TG_FLOAT64);
    float f[3] = {1.0f, -0.3f, 1e-3f};
    f[1] = nextafterf(f[1], 0.0f); // 1 ulp: fine
    tg_tensor *one = tg_from_array(f, TG_SHAPE(3), TG_FLOAT32);
    cr_assert(within_ulps(one, r, 1, "t", report, sizeof report), "%s",
              report);
    f[2] = nextafterf(nextafterf((float)v[2], 1.0f), 1.0f); // 2 ulps
    tg_tensor *two = tg_from_array(f, TG_SHAPE(3), TG_FLOAT32);
    cr_assert_not(within_ulps(two, r, 1, "t", report, sizeof report));
    cr_assert(strstr(report, "element 2") != NULL, "%s", report);
    f[2] = NAN;
    tg_tensor *nan = tg_from_array(f, TG_SHAPE(3), TG_FLOAT32);
    cr_assert_not(within_ulps(nan, r, 1, "t", report, sizeof report));
    const double none[3] = {0.0, 0.0, 0.0};
    cr_assert(within_bound(one, r, none, "t", report, sizeof report), "%s",
              report);
    cr_assert_not(within_bound(two, r, none, "t", report, sizeof report));
    cr_assert_not(within_bound(nan, r, none, "t", report, sizeof report));
    const double wide[3] = {0.0, 0.0, 1e-9}; // 2 ulps of 1e-3 are 2.3e-10
    cr_assert(within_bound(two, r, wide, "t", report, sizeof report), "%s",
              report);
    /* ulp positions: neighbours 1 apart, across zero too */
    cr_assert_eq(tg_test_ulp_position(nextafterf(0.0f, 1.0f)) -
                     tg_test_ulp_position(nextafterf(0.0f, -1.0f)), 2);
    cr_assert_eq(tg_test_ulp_position(-0.0f), tg_test_ulp_position(0.0f));
    tg_release(nan);
    tg_release(two);
    tg_release(one);
    tg_release(r);
}
