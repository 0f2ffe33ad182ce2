/*
 * tests/autograd/test_fast_layer_norm.c - the fast LayerNorm kernels
 * against the plain reference kernels (autograd/ops/layer_norm.c), on the
 * same inputs: y, the row statistics (tg_layer_norm_ex), dx, dw and db, in
 * float32 and float64, with and without weight and bias, on shapes whose
 * rows are not a multiple of the vector width, one row, one element, rows
 * with |mean| >> std, non-contiguous inputs and no rows at all; results
 * bit for bit the same on 1 and 2 threads; and the comparison rejecting a
 * wrong answer.
 *
 * What it is not: the gradcheck (test_norm_grad.c and the table of
 * test_grad_ops, which run on both kernels) and the NumPy references
 * (test_norm_reference.c).
 *
 * Tolerances, and why. Both kernels evaluate the same expressions in
 * double, operation for operation, but for two things: the fast one adds
 * the terms of each sum (mean(g), mean(g * xhat), dw, db) in another
 * order, and it takes mean and variance in one sweep of shifted sums
 * (x - x[0] and its square; the variance cancels by at most N + 1, see
 * layer_norm_fast.c), where the reference sums x, then (x - mean)^2.
 * Each such sum then differs by a few units of double rounding (~1e-16
 * relative to the sum of its terms' sizes; the variance by ~1e-16 times
 * that cancellation, which on N(0, 1) rows is about 2).
 *  - float32 results are these doubles rounded once to float32: the same
 *    float, or its neighbour when the double lies within ~1e-16 of a
 *    rounding midpoint. F32_RTOL 2.5e-7 is two float32 ulps; F32_ATOL
 *    1e-12 only covers results that are zero up to a double rounding.
 *  - float64 results, F64_RTOL / F64_ATOL 1e-12: a few dozen double
 *    roundings on values of size <= ~300 (rstd of a constant row is
 *    eps^-1/2).
 *  - float64 rows of mean 1e4 and std 1e-2: a row of N = 771 sums to
 *    ~7.7e6, whose double ulp is 9.3e-10, so the two orders give means
 *    ~1e-11 apart (a random walk of a few hundred roundings, / N); xhat =
 *    (x - mean) * rstd multiplies that by rstd = 100 (y: 2e-9 measured),
 *    and dx = rstd * (...) by about 100 again (3e-8 measured, where |dx|
 *    reaches 418). F64_BIG_MEAN_ATOL 1e-6 leaves a factor 30 and is still
 *    2e-9 of the largest dx. (float32 rows do not notice: these shifts are
 *    far below a float32 ulp, and the float32 results came out equal.)
 */
#include "../common.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define F32_RTOL 2.5e-7
#define F32_ATOL 1e-12
#define F64_RTOL 1e-12
#define F64_ATOL 1e-12
#define F64_BIG_MEAN_ATOL 1e-6
/* The float32 results on rows of mean 1e4 and std 1e-2 against the same
 * rows computed in float64 and rounded once: a few float32 ulps of the
 * largest value (test_norm_reference.c uses the same bound). */
#define ROUNDED_ONCE 1e-6

/* What one run gives: y, mean, rstd, dx, dw, db (NULL when not asked). */
enum { Y, MEAN, RSTD, DX, DW, DB, NOUT };
static const char *const out_names[NOUT] = {"y",  "mean", "rstd",
                                            "dx", "dw",   "db"};
typedef struct ln_out {
    tg_tensor *t[NOUT];
} ln_out;

static void ln_out_release(ln_out *o)
{
    for (int i = 0; i < NOUT; i++) {
        tg_release(o->t[i]);
        o->t[i] = NULL;
    }
}

/* The gradient a leaf got, taken out of it (NULL when it needs none). */
static tg_tensor *take_grad(tg_tensor *t)
{
    if (!t || !t->requires_grad)
        return NULL;
    tg_tensor *g = tg_retain(t->grad);
    tg_clear_grad(t);
    cr_assert(g, "no gradient reached a tensor that requires grad");
    return g;
}

/* LayerNorm over the last nd dims of x, forward and backward from dy, on
 * the given kernels and thread count (both restored afterwards). x, w, b
 * are leaves; those that require grad get their gradient in o. */
static void ln_run(tg_tensor *x, int nd, tg_tensor *w, tg_tensor *b,
                   const tg_tensor *dy, tg_kernels kernels, int threads,
                   ln_out *o)
{
    tg_kernels saved_kernels = tg_get_kernels();
    int saved_threads = tg_get_num_threads();
    cr_assert_eq(tg_set_kernels(kernels), 0);
    cr_assert_eq(tg_set_num_threads(threads), 0);
    memset(o, 0, sizeof *o);
    const int64_t *ns = x->shape + x->ndim - nd;
    o->t[Y] = tg_layer_norm_ex(x, ns, nd, w, b, 1e-5, &o->t[MEAN],
                               &o->t[RSTD]);
    cr_assert(o->t[Y], "%s", tg_last_error());
    if (o->t[Y]->requires_grad) {
        tg_backward_options opts = {.grad = dy};
        cr_assert_eq(tg_backward_ex(o->t[Y], &opts), 0, "%s",
                     tg_last_error());
    }
    o->t[DX] = take_grad(x);
    o->t[DW] = take_grad(w);
    o->t[DB] = take_grad(b);
    cr_assert_eq(tg_set_kernels(saved_kernels), 0);
    cr_assert_eq(tg_set_num_threads(saved_threads), 0);
}

/* True when every result of a is within rtol/atol of e's (tg_test_close,
 * dtypes checked) and both have the same results; else the first
 * mismatch, named, in report. */
static bool ln_close(const ln_out *a, const ln_out *e, double rtol,
                     double atol, char *report, size_t size)
{
    for (int i = 0; i < NOUT; i++) {
        if (!a->t[i] && !e->t[i])
            continue;
        if (!a->t[i] || !e->t[i]) {
            snprintf(report, size, "%s: computed by one run only",
                     out_names[i]);
            return false;
        }
        char why[1024];
        if (!tg_test_close(a->t[i], e->t[i], rtol, atol, true, why,
                           sizeof why)) {
            snprintf(report, size, "%s: %s", out_names[i], why);
            return false;
        }
    }
    return true;
}

/* True when a and b hold the same results bit for bit. */
static bool ln_identical(const ln_out *a, const ln_out *b, char *report,
                         size_t size)
{
    for (int i = 0; i < NOUT; i++) {
        if (!a->t[i] && !b->t[i])
            continue;
        bool same = a->t[i] && b->t[i] && tg_same_shape(a->t[i], b->t[i]);
        int64_t n = same ? a->t[i]->numel : 0;
        double *va = malloc((size_t)(n + 1) * sizeof *va);
        double *vb = malloc((size_t)(n + 1) * sizeof *vb);
        cr_assert(va && vb);
        same = same && tg_to_f64_array(a->t[i], va) == 0 &&
               tg_to_f64_array(b->t[i], vb) == 0 &&
               memcmp(va, vb, (size_t)n * sizeof *va) == 0;
        free(vb);
        free(va);
        if (!same) {
            snprintf(report, size, "%s differs", out_names[i]);
            return false;
        }
    }
    return true;
}

/* randn * scale + shift, as a leaf that requires grad when asked. */
static tg_tensor *leaf(const int64_t *shape, int ndim, tg_dtype dtype,
                       double scale, double shift, bool grad)
{
    tg_tensor *r = tg_randn(shape, ndim, TG_FLOAT64);
    tg_tensor *s = tg_mul_scalar(r, scale);
    tg_tensor *t = tg_add_scalar(s, shift);
    tg_tensor *out = tg_to_dtype(t, dtype);
    tg_release(t);
    tg_release(s);
    tg_release(r);
    cr_assert(out, "%s", tg_last_error());
    if (grad)
        cr_assert_eq(tg_set_requires_grad(out, true), 0);
    return out;
}

/* Which of weight and bias a case has. */
enum { AFFINE_NONE = 0, AFFINE_W = 1, AFFINE_B = 2, AFFINE_WB = 3 };

typedef struct ln_case {
    int64_t shape[4];
    int ndim;
    int nd;           // dims of normalized_shape
    double mean, std; // of x's rows
} ln_case;

/* Runs case c on the fast and the reference kernels and compares. */
static void check_case(const ln_case *c, tg_dtype dtype, int affine,
                       bool x_grad, bool transposed, int threads)
{
    tg_manual_seed(7);
    const int64_t *ns = c->shape + c->ndim - c->nd;
    tg_tensor *x = leaf(c->shape, c->ndim, dtype, c->std, c->mean, false);
    if (transposed) {
        tg_tensor *t = tg_test_non_contiguous(x, false);
        tg_release(x);
        x = t;
    }
    if (x_grad)
        cr_assert_eq(tg_set_requires_grad(x, true), 0);
    tg_tensor *w = affine & AFFINE_W ? leaf(ns, c->nd, dtype, 1, 1, true)
                                     : NULL;
    tg_tensor *b = affine & AFFINE_B ? leaf(ns, c->nd, dtype, 1, 0, true)
                                     : NULL;
    tg_tensor *dy = leaf(c->shape, c->ndim, dtype, 1, 0, false);
    ln_out fast, ref;
    ln_run(x, c->nd, w, b, dy, TG_KERNELS_FAST, threads, &fast);
    ln_run(x, c->nd, w, b, dy, TG_KERNELS_REFERENCE, 1, &ref);
    double rtol = dtype == TG_FLOAT32 ? F32_RTOL : F64_RTOL;
    double atol = dtype == TG_FLOAT32 ? F32_ATOL : F64_ATOL;
    if (dtype == TG_FLOAT64 && fabs(c->mean) > 1e3 * c->std)
        atol = F64_BIG_MEAN_ATOL;
    char sx[TG_SHAPE_STR_MAX], report[1200];
    cr_assert(ln_close(&fast, &ref, rtol, atol, report, sizeof report),
              "x %s%s over %d dim%s, %s, weight %s, bias %s, %d thread%s: "
              "fast and reference kernels differ\n%s",
              tg_shape_str(x, sx), transposed ? " (non-contiguous)" : "",
              c->nd, c->nd == 1 ? "" : "s", tg_dtype_name(dtype),
              affine & AFFINE_W ? "yes" : "no",
              affine & AFFINE_B ? "yes" : "no", threads,
              threads == 1 ? "" : "s", report);
    ln_out_release(&ref);
    ln_out_release(&fast);
    tg_release(dy);
    tg_release(b);
    tg_release(w);
    tg_release(x);
}

/* Shapes: rows of 1, 7, 5, 768, 17, 13 elements (most not a multiple of
 * the 16 partial sums, 768 the benchmark's), one row, one element, many
 * short rows cut into several chunks and run on threads ((16384, 13):
 * 2^17 elements and more take threads; fewer are one chunk), two-dim
 * normalized shapes, and an x of more than TG_NORM_STREAM_BYTES in float32
 * ((700, 401): the forward goes row by row, not in blocks). */
static const ln_case shapes[] = {
    {{1, 1}, 2, 1, 0, 1},      {{1, 7}, 2, 1, 0, 1},
    {{3, 5}, 2, 1, 0, 1},      {{5, 768}, 2, 1, 0, 1},
    {{33, 17}, 2, 1, 0, 1},    {{16384, 13}, 2, 1, 0, 1},
    {{2, 3, 4}, 3, 1, 0, 1},   {{2, 3, 4}, 3, 2, 0, 1},
    {{200, 300}, 2, 1, 0.5, 2}, {{7, 9, 40}, 3, 2, -3, 0.1},
    {{700, 401}, 2, 1, 0, 1},
};
#define NSHAPES (sizeof shapes / sizeof *shapes)

TG_TEST(fast_layer_norm, matches_reference_float32)
{
    for (size_t i = 0; i < NSHAPES; i++)
        for (int affine = 0; affine < 4; affine++)
            check_case(&shapes[i], TG_FLOAT32, affine, true, false, 1);
}

TG_TEST(fast_layer_norm, matches_reference_float64)
{
    for (size_t i = 0; i < NSHAPES; i++)
        for (int affine = 0; affine < 4; affine++)
            check_case(&shapes[i], TG_FLOAT64, affine, true, false, 1);
}

TG_TEST(fast_layer_norm, matches_reference_on_two_threads)
{
    for (size_t i = 0; i < NSHAPES; i++) {
        check_case(&shapes[i], TG_FLOAT32, AFFINE_WB, true, false, 2);
        check_case(&shapes[i], TG_FLOAT64, AFFINE_NONE, true, false, 2);
    }
}

/* Only some inputs need a gradient: x alone, w alone (no dx), none of the
 * parameters; on one chunk and on three. */
TG_TEST(fast_layer_norm, matches_reference_when_some_gradients_are_not_needed)
{
    static const ln_case c[] = {{{33, 17}, 2, 1, 0, 1},
                                {{700, 200}, 2, 1, 0, 1}};
    for (size_t i = 0; i < 2; i++)
        for (int t = 1; t <= 2; t++) {
            check_case(&c[i], TG_FLOAT32, AFFINE_WB, false, false, t);
            check_case(&c[i], TG_FLOAT64, AFFINE_NONE, true, false, t);
        }
}

/* Rows of mean 1e4 and std 1e-2 (SEMANTICS.md §1): the fast kernels agree
 * with the reference, and the float32 result is the float64 one rounded
 * (the relative error a one-pass variance would blow up). */
TG_TEST(fast_layer_norm, large_mean_rows)
{
    static const ln_case c[] = {{{6, 64}, 2, 1, 1e4, 1e-2},
                                {{64, 771}, 2, 1, 1e4, 1e-2}};
    for (size_t i = 0; i < 2; i++)
        for (int t = 1; t <= 2; t++) {
            check_case(&c[i], TG_FLOAT32, AFFINE_WB, true, false, t);
            check_case(&c[i], TG_FLOAT64, AFFINE_WB, true, false, t);
        }
    /* float32 fast against the same values in float64 */
    tg_manual_seed(3);
    const int64_t shape[2] = {64, 771}, ns[1] = {771};
    tg_tensor *x = leaf(shape, 2, TG_FLOAT32, 1e-2, 1e4, false);
    tg_tensor *x64 = tg_to_dtype(x, TG_FLOAT64);
    tg_tensor *y = tg_layer_norm(x, ns, 1, NULL, NULL, 1e-5);
    tg_tensor *y64 = tg_layer_norm(x64, ns, 1, NULL, NULL, 1e-5);
    cr_assert(y && y64, "%s", tg_last_error());
    double err = 0;
    for (int64_t i = 0; i < y->numel; i++) {
        double e = fabs((double)tg_data_f32(y)[i] - tg_data_f64(y64)[i]);
        err = e > err ? e : err;
    }
    cr_assert_lt(err, ROUNDED_ONCE, "float32 rows of mean 1e4: error %g",
                 err);
    tg_release(y64);
    tg_release(y);
    tg_release(x64);
    tg_release(x);
}

/* The fast forward sums x - x[0] and its square in one sweep; the
 * variance then cancels by at most N + 1 however large |mean| / std, the
 * worst case being a first element far from the mean (layer_norm_fast.c).
 * Rows of mean 1e4 and std 1e-2 whose first element is 1e4 + 1 (100 std
 * away), 1e4 - 30, or a typical value agree with the two-pass reference
 * within the tolerances above, in float32 and float64, and the float32
 * result is the float64 one rounded. */
TG_TEST(fast_layer_norm, large_mean_rows_with_a_far_first_element)
{
    static const double first[] = {1e4 + 1, 1e4 - 30, NAN};
    const int64_t shape[2] = {3 * 8, 771}, ns[1] = {771};
    for (int d = 0; d < 2; d++) {
        tg_dtype dtype = d ? TG_FLOAT64 : TG_FLOAT32;
        tg_manual_seed(17);
        tg_tensor *x = leaf(shape, 2, dtype, 1e-2, 1e4, false);
        for (int64_t r = 0; r < shape[0]; r++) {
            double v = first[r % 3];
            if (isnan(v)) // a typical first element: leave it
                continue;
            if (dtype == TG_FLOAT32)
                tg_data_f32(x)[r * shape[1]] = (float)v;
            else
                tg_data_f64(x)[r * shape[1]] = v;
        }
        cr_assert_eq(tg_set_requires_grad(x, true), 0);
        tg_tensor *w = leaf(ns, 1, dtype, 1, 1, true);
        tg_tensor *b = leaf(ns, 1, dtype, 1, 0, true);
        tg_tensor *dy = leaf(shape, 2, dtype, 1, 0, false);
        ln_out fast, ref;
        ln_run(x, 1, w, b, dy, TG_KERNELS_FAST, 1, &fast);
        ln_run(x, 1, w, b, dy, TG_KERNELS_REFERENCE, 1, &ref);
        double rtol = d ? F64_RTOL : F32_RTOL;
        double atol = d ? F64_BIG_MEAN_ATOL : F32_ATOL;
        char report[1200];
        cr_assert(ln_close(&fast, &ref, rtol, atol, report, sizeof report),
                  "%s: %s", tg_dtype_name(dtype), report);
        if (dtype == TG_FLOAT32) { // against the float64 answer, rounded
            tg_tensor *x64 = tg_to_dtype(x, TG_FLOAT64);
            tg_tensor *y64 = tg_layer_norm(x64, ns, 1, NULL, NULL, 1e-5);
            tg_tensor *y = tg_layer_norm(x, ns, 1, NULL, NULL, 1e-5);
            cr_assert(y && y64, "%s", tg_last_error());
            double err = 0;
            for (int64_t i = 0; i < y->numel; i++) {
                double e =
                    fabs((double)tg_data_f32(y)[i] - tg_data_f64(y64)[i]);
                err = e > err ? e : err;
            }
            cr_assert_lt(err, ROUNDED_ONCE, "float32: error %g", err);
            tg_release(y);
            tg_release(y64);
            tg_release(x64);
        }
        ln_out_release(&ref);
        ln_out_release(&fast);
        tg_release(dy);
        tg_release(b);
        tg_release(w);
        tg_release(x);
    }
}

/* A transposed x (and an every-other-element one) is normalised as its
 * contiguous copy. */
TG_TEST(fast_layer_norm, non_contiguous_input)
{
    static const ln_case c[] = {{{33, 17}, 2, 1, 0, 1},
                                {{300, 200}, 2, 1, 0, 1},
                                {{2, 3, 4}, 3, 2, 0, 1}};
    for (size_t i = 0; i < 3; i++) {
        check_case(&c[i], TG_FLOAT32, AFFINE_WB, true, true, 2);
        check_case(&c[i], TG_FLOAT64, AFFINE_W, true, true, 1);
    }
    /* and against the fast kernels on the contiguous copy, exactly */
    tg_manual_seed(5);
    const int64_t shape[2] = {300, 200};
    tg_tensor *x = leaf(shape, 2, TG_FLOAT32, 1, 0, true);
    tg_tensor *xs = tg_test_non_contiguous(x, true);
    cr_assert_eq(tg_set_requires_grad(xs, true), 0);
    tg_tensor *dy = leaf(shape, 2, TG_FLOAT32, 1, 0, false);
    ln_out a, b;
    ln_run(x, 1, NULL, NULL, dy, TG_KERNELS_FAST, 2, &a);
    ln_run(xs, 1, NULL, NULL, dy, TG_KERNELS_FAST, 2, &b);
    char report[256];
    cr_assert(ln_identical(&a, &b, report, sizeof report), "%s", report);
    ln_out_release(&b);
    ln_out_release(&a);
    tg_release(dy);
    tg_release(xs);
    tg_release(x);
}

/* No rows, and rows of no elements: nothing to compute, nothing read. */
TG_TEST(fast_layer_norm, empty)
{
    static const ln_case c[] = {{{0, 5}, 2, 1, 0, 1},
                                {{0, 3, 4}, 3, 2, 0, 1},
                                {{3, 0}, 2, 1, 0, 1}};
    for (size_t i = 0; i < 3; i++)
        for (int affine = 0; affine < 4; affine++) {
            check_case(&c[i], TG_FLOAT32, affine, true, false, 2);
            check_case(&c[i], TG_FLOAT64, affine, true, false, 1);
        }
}

/* The thread count changes no bit: one row per thread in the forward, and
 * chunks of rows of a size fixed by the shape in the backward ((600, 257)
 * and (16384, 13) run on threads in 3 and 4 chunks; (64, 771) is the
 * small-row path, one chunk on the calling thread). */
TG_TEST(fast_layer_norm, one_and_two_threads_give_the_same_bits)
{
    static const int64_t shapes_[][2] = {{600, 257}, {16384, 13}, {64, 771}};
    for (int s = 0; s < 3; s++)
        for (int d = 0; d < 2; d++) {
            tg_dtype dtype = d ? TG_FLOAT64 : TG_FLOAT32;
            tg_manual_seed(11);
            const int64_t *shape = shapes_[s], *ns = shape + 1;
            tg_tensor *x = leaf(shape, 2, dtype, 3, 1, true);
            tg_tensor *w = leaf(ns, 1, dtype, 1, 1, true);
            tg_tensor *b = leaf(ns, 1, dtype, 1, 0, true);
            tg_tensor *dy = leaf(shape, 2, dtype, 1, 0, false);
            ln_out one, two;
            ln_run(x, 1, w, b, dy, TG_KERNELS_FAST, 1, &one);
            ln_run(x, 1, w, b, dy, TG_KERNELS_FAST, 2, &two);
            char report[256];
            cr_assert(ln_identical(&one, &two, report, sizeof report),
                      "(%lld, %lld) %s: %s", (long long)shape[0],
                      (long long)shape[1], tg_dtype_name(dtype), report);
            ln_out_release(&two);
            ln_out_release(&one);
            tg_release(dy);
            tg_release(b);
            tg_release(w);
            tg_release(x);
        }
}

/* The comparisons above can fail: a result off by a few float32 ulps, or
 * a dw off in one element, is caught, and so is a missing gradient. */
TG_TEST(fast_layer_norm, comparison_rejects_a_wrong_answer)
{
    tg_manual_seed(13);
    const int64_t shape[2] = {33, 17}, ns[1] = {17};
    tg_tensor *x = leaf(shape, 2, TG_FLOAT32, 1, 0, true);
    tg_tensor *w = leaf(ns, 1, TG_FLOAT32, 1, 1, true);
    tg_tensor *dy = leaf(shape, 2, TG_FLOAT32, 1, 0, false);
    ln_out fast, ref;
    ln_run(x, 1, w, NULL, dy, TG_KERNELS_FAST, 1, &fast);
    ln_run(x, 1, w, NULL, dy, TG_KERNELS_REFERENCE, 1, &ref);
    char report[1200];
    cr_assert(ln_close(&fast, &ref, F32_RTOL, F32_ATOL, report,
                       sizeof report), "%s", report);
    cr_assert(ln_identical(&ref, &ref, report, sizeof report));

    /* y off by 4 ulps in one element */
    float *y = tg_data_f32(fast.t[Y]);
    float saved = y[40];
    y[40] = saved * (1.0f + 4 * 1.2e-7f);
    cr_assert_not(ln_close(&fast, &ref, F32_RTOL, F32_ATOL, report,
                           sizeof report));
    cr_assert(strstr(report, "y: ") == report, "%s", report);
    y[40] = saved;
    /* dw off in its last element */
    float *dw = tg_data_f32(fast.t[DW]);
    dw[16] += 1e-3f;
    cr_assert_not(ln_close(&fast, &ref, F32_RTOL, F32_ATOL, report,
                           sizeof report));
    cr_assert(strstr(report, "dw: ") == report, "%s", report);
    cr_assert_not(ln_identical(&fast, &ref, report, sizeof report));
    /* dx missing from one side */
    tg_tensor *dx = fast.t[DX];
    fast.t[DX] = NULL;
    cr_assert_not(ln_close(&fast, &ref, F32_RTOL, F32_ATOL, report,
                           sizeof report));
    cr_assert(strstr(report, "dx") == report, "%s", report);
    cr_assert_not(ln_identical(&fast, &ref, report, sizeof report));
    fast.t[DX] = dx;
    ln_out_release(&ref);
    ln_out_release(&fast);
    tg_release(dy);
    tg_release(w);
    tg_release(x);
}
