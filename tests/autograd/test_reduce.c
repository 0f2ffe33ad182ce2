/*
 * tests/autograd/test_reduce.c - sum, mean, var, std, max, min, argmax,
 * argmin and softmax / log_softmax against NumPy references
 * (scripts/reference/gen_reduce.py), plus exact cases, non-contiguous,
 * 0-d and 0-size inputs and every error message.
 *
 * Tolerances used below, and why:
 *  - FLOAT32_ULP (2^-23 relative): the C code reduces in double and rounds
 *    once to float32; the references are float64 results rounded once to
 *    float32. The two doubles agree far below a float32 ulp, so the rounded
 *    values are equal or adjacent: at most one ulp, which is <= 2^-23 of the
 *    value.
 *  - max, min, argmax, argmin and int64 results are exact (tolerance 0):
 *    they pick an element or count, no rounding happens.
 */
#include "../common.h"

#include "tensor/internal.h" // tg_view_make, to build non-contiguous views

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#define FLOAT32_ULP 1.1920929e-07 // 2^-23

/* The view of x with dims d0 and d1 swapped: non-contiguous, no copy. */
static tg_tensor *swapped_view(const tg_tensor *x, int d0, int d1)
{
    int64_t shape[TG_MAX_DIMS], strides[TG_MAX_DIMS];
    for (int d = 0; d < x->ndim; d++) {
        int from = d == d0 ? d1 : d == d1 ? d0 : d;
        shape[d] = x->shape[from];
        strides[d] = x->strides[from];
    }
    return tg_view_make(x, shape, strides, x->ndim, x->offset);
}

static double value_at(const tg_tensor *x, int64_t flat)
{
    double *all = malloc(sizeof(double) * (size_t)x->numel);
    tg_to_f64_array(x, all);
    double v = all[flat];
    free(all);
    return v;
}

/* ------------------------------------------- the 4-d reference sweep */

/* The dim sets of gen_reduce.py, in the same order, with their tags. */
static const struct {
    int dims[3];
    int ndims;
    const char *tag;
} dim_sets[] = {
    {{0}, 1, "d0"},          {{1}, 1, "d1"},       {{2}, 1, "d2"},
    {{3}, 1, "d3"},          {{-1}, 1, "dm1"},     {{-3}, 1, "dm3"},
    {{0, 1}, 2, "d0_1"},     {{1, 3}, 2, "d1_3"},  {{-1, 0}, 2, "dm1_0"},
    {{0, 2, 3}, 3, "d0_2_3"}, {{0}, 0, "all"},
};
#define N_DIM_SETS (int)(sizeof dim_sets / sizeof dim_sets[0])

/* Runs the reduction named as in the reference files ("var1" is tg_var
 * with correction 1). */
static tg_tensor *run_reduction(const char *op, const tg_tensor *x,
                                const int *dims, int ndims, bool keepdim)
{
    if (strcmp(op, "sum") == 0)
        return tg_sum(x, dims, ndims, keepdim);
    if (strcmp(op, "mean") == 0)
        return tg_mean(x, dims, ndims, keepdim);
    if (strcmp(op, "amax") == 0)
        return tg_max(x, dims, ndims, keepdim);
    if (strcmp(op, "amin") == 0)
        return tg_min(x, dims, ndims, keepdim);
    int64_t correction = op[3] - '0';
    if (strncmp(op, "var", 3) == 0)
        return tg_var(x, dims, ndims, correction, keepdim);
    return tg_std(x, dims, ndims, correction, keepdim);
}

static bool is_selection(const char *op)
{
    return strcmp(op, "amax") == 0 || strcmp(op, "amin") == 0;
}

TG_TEST(reduce, every_dim_set_matches_numpy_f32)
{
    static const char *ops[] = {"sum",  "mean", "var0", "var1", "var2",
                                "std0", "std1", "std2", "amax", "amin"};
    tg_tensor *x = tg_test_load_ref("reduce_x4_f32"); // (2, 3, 4, 5)
    for (size_t o = 0; o < sizeof ops / sizeof *ops; o++)
        for (int s = 0; s < N_DIM_SETS; s++)
            for (int keep = 0; keep <= 1; keep++) {
                char name[128];
                snprintf(name, sizeof name, "reduce_%s_%s_k%d_f32", ops[o],
                         dim_sets[s].tag, keep);
                tg_tensor *r = run_reduction(ops[o], x, dim_sets[s].dims,
                                             dim_sets[s].ndims, keep);
                /* Selections are exact; the rest: one float32 ulp (see the
                 * top of the file). var2 over a dim of size 2 divides by 0:
                 * the inf must match exactly, which tg_test_close does. */
                tg_test_check_ref(r, name, is_selection(ops[o]) ? 0 : FLOAT32_ULP,
                          0);
            }
    tg_release(x);
}

TG_TEST(reduce, every_dim_set_matches_numpy_f64)
{
    static const char *ops[] = {"sum", "mean", "var1", "std1"};
    tg_tensor *x = tg_test_load_ref("reduce_x4_f64");
    for (size_t o = 0; o < sizeof ops / sizeof *ops; o++)
        for (int s = 0; s < N_DIM_SETS; s++) {
            char name[128];
            snprintf(name, sizeof name, "reduce_%s_%s_k0_f64", ops[o],
                     dim_sets[s].tag);
            tg_tensor *r = run_reduction(ops[o], x, dim_sets[s].dims,
                                         dim_sets[s].ndims, false);
            /* Both sides add at most 120 float64 terms of size ~1, in
             * different orders (NumPy pairwise, here left to right): each
             * addition rounds by <= 2^-53 of the running sum, so the two
             * differ by well under 120 * 1.1e-16 * 120 ~ 1.6e-12
             * absolute; results are O(1..10). */
            tg_test_check_ref(r, name, 1e-12, 1e-12);
        }
    tg_release(x);
}

/* ---------------------------------------------------------- variance */

/* Rows with mean 1e4 and std 1e-2 in float32 (the pitfall of SEMANTICS.md
 * section 3): a two-pass variance is accurate to float32 rounding. */
TG_TEST(reduce, var_two_pass_is_accurate_when_mean_dwarfs_std)
{
    tg_tensor *x = tg_test_load_ref("reduce_shift_x"); // (4, 250)
    /* One float32 ulp, see the top of the file. The one-pass formula,
     * even in double, is off by about 3e-3 relative here (next test):
     * some 25000 times more. */
    tg_test_check_ref(tg_var(x, TG_DIMS(1), 0, false), "reduce_shift_var0",
              FLOAT32_ULP, 0);
    tg_test_check_ref(tg_var(x, TG_DIMS(1), 1, false), "reduce_shift_var1",
              FLOAT32_ULP, 0);
    tg_test_check_ref(tg_std(x, TG_DIMS(1), 0, false), "reduce_shift_std0",
              FLOAT32_ULP, 0);
    tg_test_check_ref(tg_std(x, TG_DIMS(1), 1, false), "reduce_shift_std1",
              FLOAT32_ULP, 0);
    tg_release(x);
}

/* The check above can fail: E[x^2] - E[x]^2, even in double, misses the
 * reference by far more than the tolerance. */
TG_TEST(reduce, var_check_rejects_the_one_pass_formula)
{
    tg_tensor *x = tg_test_load_ref("reduce_shift_x");
    tg_tensor *expected = tg_test_load_ref("reduce_shift_var0");
    tg_tensor *one_pass = tg_empty(TG_SHAPE(4), TG_FLOAT32);
    for (int64_t r = 0; r < 4; r++) {
        double s = 0, s2 = 0;
        for (int64_t j = 0; j < 250; j++) {
            double v;
            tg_get(x, (int64_t[]){r, j}, 2, &v);
            s += v;
            s2 += v * v;
        }
        double mean = s / 250;
        tg_set(one_pass, (int64_t[]){r}, 1, s2 / 250 - mean * mean);
    }
    char report[1024];
    cr_assert_not(tg_test_close(one_pass, expected, FLOAT32_ULP, 0, true,
                                report, sizeof report));
    tg_release(one_pass);
    tg_release(expected);
    tg_release(x);
}

TG_TEST(reduce, var_with_no_degrees_of_freedom_is_inf_or_nan)
{
    tg_tensor *x = tg_from_array((double[]){1, 2}, TG_SHAPE(2), TG_FLOAT64);
    tg_tensor *same = tg_from_array((double[]){1, 1}, TG_SHAPE(2),
                                    TG_FLOAT64);
    tg_tensor *one = tg_from_array((double[]){4}, TG_SHAPE(1), TG_FLOAT64);
    tg_tensor *three = tg_from_array((double[]){1, 2, 3}, TG_SHAPE(3),
                                     TG_FLOAT64);
    tg_tensor *r;
    /* sum of squares 0.5 / max(0, 2 - 2) = inf, as PyTorch */
    r = tg_var(x, NULL, 0, 2, false);
    cr_assert(isinf(tg_item(r)) && tg_item(r) > 0);
    tg_release(r);
    /* 0 / 0 = NaN */
    r = tg_var(same, NULL, 0, 2, false);
    cr_assert(isnan(tg_item(r)));
    tg_release(r);
    /* one element, correction 1 (PyTorch's default): NaN */
    r = tg_var(one, NULL, 0, 1, false);
    cr_assert(isnan(tg_item(r)));
    tg_release(r);
    r = tg_std(x, NULL, 0, 3, false);
    cr_assert(isinf(tg_item(r)));
    tg_release(r);
    /* a negative correction divides by N + 1: 2 / 4, exact */
    r = tg_var(three, NULL, 0, -1, false);
    cr_assert_eq(tg_item(r), 0.5);
    tg_release(r);
    tg_release(x);
    tg_release(same);
    tg_release(one);
    tg_release(three);
}

/* ------------------------------------------------------- exact cases */

TG_TEST(reduce, int64_matches_numpy_exactly)
{
    tg_tensor *x = tg_test_load_ref("reduce_xi"); // (4, 6) in [-3, 3]
    for (int d = 0; d <= 1; d++) {
        char name[64];
        snprintf(name, sizeof name, "reduce_xi_sum_d%d", d);
        tg_test_check_ref(tg_sum(x, &d, 1, false), name, 0, 0);
        snprintf(name, sizeof name, "reduce_xi_amax_d%d", d);
        tg_test_check_ref(tg_max(x, &d, 1, false), name, 0, 0);
        snprintf(name, sizeof name, "reduce_xi_amin_d%d", d);
        tg_test_check_ref(tg_min(x, &d, 1, false), name, 0, 0);
        snprintf(name, sizeof name, "reduce_xi_argmax_d%d", d);
        tg_test_check_ref(tg_argmax(x, d, false), name, 0, 0);
        snprintf(name, sizeof name, "reduce_xi_argmin_d%d", d);
        tg_test_check_ref(tg_argmin(x, d, false), name, 0, 0);
    }
    tg_release(x);
}

TG_TEST(reduce, int64_sum_stays_int64_and_exact)
{
    /* 2^53 + 1 + 1: a double accumulator rounds each +1 away and returns
     * 2^53. */
    int64_t big = INT64_C(1) << 53;
    tg_tensor *x = tg_from_array((int64_t[]){big, 1, 1}, TG_SHAPE(3),
                                 TG_INT64);
    tg_tensor *s = tg_sum(x, NULL, 0, false);
    cr_assert_eq(s->dtype, TG_INT64);
    cr_assert_eq(s->ndim, 0);
    cr_assert_eq(tg_data_i64(s)[0], big + 2);
    tg_release(s);
    tg_release(x);
}

TG_TEST(reduce, float32_sum_accumulates_in_double)
{
    /* 2^24 + 1 + 1 + 1 + 1: in float32 each +1 is lost (the spacing at
     * 2^24 is 2); in double the sum is 2^24 + 4, which float32 holds. */
    tg_tensor *x = tg_from_array((float[]){16777216.0f, 1, 1, 1, 1},
                                 TG_SHAPE(5), TG_FLOAT32);
    tg_tensor *s = tg_sum(x, NULL, 0, false);
    cr_assert_eq(s->dtype, TG_FLOAT32);
    cr_assert_eq(tg_data_f32(s)[0], 16777220.0f);
    tg_release(s);
    tg_release(x);
}

TG_TEST(reduce, argmax_and_argmin_pick_the_first_of_ties)
{
    tg_tensor *x = tg_from_array((float[]){1, 5, 5, 2, /**/ 3, 0, 0, 3},
                                 TG_SHAPE(2, 4), TG_FLOAT32);
    tg_tensor *amax = tg_argmax(x, 1, false);
    tg_tensor *amin = tg_argmin(x, -1, true);
    cr_assert_eq(amax->dtype, TG_INT64);
    cr_assert_eq(amax->ndim, 1);
    cr_assert_eq(tg_data_i64(amax)[0], 1);
    cr_assert_eq(tg_data_i64(amax)[1], 0); // 3 at 0 and at 3
    cr_assert_eq(amin->ndim, 2);
    cr_assert_eq(amin->shape[1], 1);
    cr_assert_eq(tg_data_i64(amin)[0], 0);
    cr_assert_eq(tg_data_i64(amin)[1], 1); // 0 at 1 and at 2
    tg_release(amax);
    tg_release(amin);
    tg_release(x);
}

TG_TEST(reduce, nan_propagates_through_max_min_and_wins_argmax)
{
    tg_tensor *x = tg_from_array((double[]){1, NAN, 3, NAN, /**/ 4, 2, 8, 6},
                                 TG_SHAPE(2, 4), TG_FLOAT64);
    tg_tensor *mx = tg_max(x, TG_DIMS(1), false);
    tg_tensor *mn = tg_min(x, TG_DIMS(1), false);
    tg_tensor *all = tg_max(x, NULL, 0, false);
    tg_tensor *amax = tg_argmax(x, 1, false);
    tg_tensor *amin = tg_argmin(x, 1, false);
    cr_assert(isnan(tg_data_f64(mx)[0]));
    cr_assert_eq(tg_data_f64(mx)[1], 8.0);
    cr_assert(isnan(tg_data_f64(mn)[0]));
    cr_assert_eq(tg_data_f64(mn)[1], 2.0);
    cr_assert(isnan(tg_item(all)));
    /* PyTorch: a NaN is the argmax and the argmin; the first one counts. */
    cr_assert_eq(tg_data_i64(amax)[0], 1);
    cr_assert_eq(tg_data_i64(amax)[1], 2);
    cr_assert_eq(tg_data_i64(amin)[0], 1);
    cr_assert_eq(tg_data_i64(amin)[1], 1);
    tg_release(mx);
    tg_release(mn);
    tg_release(all);
    tg_release(amax);
    tg_release(amin);
    tg_release(x);
}

/* ------------------------------------------------ layouts and corners */

/* x viewed with dims 1 and 3 swapped, (2, 5, 4, 3): reducing the view's
 * dims {1, 3} reduces x's dims {3, 1}, so the reference is the same. */
TG_TEST(reduce, non_contiguous_input_matches_numpy)
{
    tg_tensor *x = tg_test_load_ref("reduce_x4_f32");
    tg_tensor *v = swapped_view(x, 1, 3);
    cr_assert_not(tg_is_contiguous(v));
    /* Tolerances as in every_dim_set_matches_numpy_f32. */
    tg_test_check_ref(tg_sum(v, TG_DIMS(1, 3), false), "reduce_sum_d1_3_k0_f32",
              FLOAT32_ULP, 0);
    tg_test_check_ref(tg_var(v, TG_DIMS(3, 1), 1, true), "reduce_var1_d1_3_k1_f32",
              FLOAT32_ULP, 0);
    tg_test_check_ref(tg_max(v, TG_DIMS(-1, 1), false), "reduce_amax_d1_3_k0_f32",
              0, 0);
    tg_test_check_ref(tg_mean(v, NULL, 0, false), "reduce_mean_all_k0_f32",
              FLOAT32_ULP, 0);
    /* argmax over the view's dim 1 is argmax over x's dim 3: compare
     * with x itself, element by element through the swap. */
    tg_tensor *av = tg_argmax(v, 1, false); // (2, 4, 3)
    tg_tensor *ax = tg_argmax(x, 3, false); // (2, 3, 4)
    for (int64_t i = 0; i < 2; i++)
        for (int64_t j = 0; j < 3; j++)
            for (int64_t k = 0; k < 4; k++) {
                double a, b;
                tg_get(av, (int64_t[]){i, k, j}, 3, &a);
                tg_get(ax, (int64_t[]){i, j, k}, 3, &b);
                cr_assert_eq(a, b);
            }
    tg_release(av);
    tg_release(ax);
    tg_release(v);
    tg_release(x);
}

TG_TEST(reduce, broadcast_view_with_stride_0)
{
    /* One row of 5 seen as (3, 5) with stride 0: summing dim 0 triples
     * it. Small integers: exact. */
    tg_tensor *row = tg_from_array((float[]){1, -2, 3, 4, 0.5f},
                                   TG_SHAPE(5), TG_FLOAT32);
    tg_tensor *v = tg_view_make(row, (int64_t[]){3, 5}, (int64_t[]){0, 1},
                                2, 0);
    tg_tensor *s = tg_sum(v, TG_DIMS(0), false);
    tg_tensor *expected = tg_from_array((float[]){3, -6, 9, 12, 1.5f},
                                        TG_SHAPE(5), TG_FLOAT32);
    tg_assert_close(s, expected, 0, 0);
    tg_release(expected);
    tg_release(s);
    tg_release(v);
    tg_release(row);
}

TG_TEST(reduce, scalar_input)
{
    tg_tensor *x = tg_scalar(3.5, TG_FLOAT32);
    tg_tensor *s = tg_sum(x, NULL, 0, false);
    tg_tensor *s0 = tg_sum(x, TG_DIMS(0), true); // keepdim on 0-d: still 0-d
    tg_tensor *sm = tg_sum(x, TG_DIMS(-1), false);
    tg_tensor *m = tg_mean(x, NULL, 0, false);
    tg_tensor *v0 = tg_var(x, NULL, 0, 0, false);
    tg_tensor *v1 = tg_var(x, NULL, 0, 1, false);
    tg_tensor *mx = tg_max(x, TG_DIMS(0), false);
    tg_tensor *am = tg_argmax(x, 0, true);
    cr_assert_eq(s->ndim, 0);
    cr_assert_eq(s0->ndim, 0);
    cr_assert_eq(sm->ndim, 0);
    cr_assert_eq(tg_item(s), 3.5);
    cr_assert_eq(tg_item(s0), 3.5);
    cr_assert_eq(tg_item(sm), 3.5);
    cr_assert_eq(tg_item(m), 3.5);
    cr_assert_eq(tg_item(v0), 0.0);
    cr_assert(isnan(tg_item(v1))); // 0 / 0
    cr_assert_eq(tg_item(mx), 3.5);
    cr_assert_eq(am->ndim, 0);
    cr_assert_eq(am->dtype, TG_INT64);
    cr_assert_eq(tg_item(am), 0.0);
    tg_release(s);
    tg_release(s0);
    tg_release(sm);
    tg_release(m);
    tg_release(v0);
    tg_release(v1);
    tg_release(mx);
    tg_release(am);
    tg_release(x);
}

TG_TEST(reduce, empty_input)
{
    tg_tensor *e = tg_zeros(TG_SHAPE(0), TG_FLOAT32);
    tg_tensor *e2 = tg_zeros(TG_SHAPE(2, 0), TG_FLOAT64);
    tg_tensor *ei = tg_zeros(TG_SHAPE(0, 3), TG_INT64);
    tg_tensor *r;
    /* sum of nothing is 0, mean is 0 / 0 = NaN, as PyTorch */
    r = tg_sum(e, NULL, 0, false);
    cr_assert_eq(r->ndim, 0);
    cr_assert_eq(tg_item(r), 0.0);
    tg_release(r);
    r = tg_mean(e, NULL, 0, false);
    cr_assert(isnan(tg_item(r)));
    tg_release(r);
    r = tg_var(e, NULL, 0, 1, false);
    cr_assert(isnan(tg_item(r)));
    tg_release(r);
    r = tg_sum(e2, TG_DIMS(1), false);
    cr_assert_eq(r->ndim, 1);
    cr_assert_eq(r->shape[0], 2);
    cr_assert_eq(tg_data_f64(r)[0], 0.0);
    cr_assert_eq(tg_data_f64(r)[1], 0.0);
    tg_release(r);
    r = tg_sum(ei, NULL, 0, false);
    cr_assert_eq(r->dtype, TG_INT64);
    cr_assert_eq(tg_data_i64(r)[0], 0);
    tg_release(r);
    /* Reducing a nonempty dim of an empty tensor is fine: no outputs. */
    r = tg_max(ei, TG_DIMS(1), false);
    cr_assert_eq(r->ndim, 1);
    cr_assert_eq(r->shape[0], 0);
    tg_release(r);
    r = tg_argmax(ei, 1, true);
    cr_assert_eq(r->ndim, 2);
    cr_assert_eq(r->shape[0], 0);
    cr_assert_eq(r->shape[1], 1);
    tg_release(r);
    r = tg_sum(e2, TG_DIMS(0), true);
    cr_assert_eq(r->shape[0], 1);
    cr_assert_eq(r->shape[1], 0);
    tg_release(r);
    tg_release(e);
    tg_release(e2);
    tg_release(ei);
}

/* ------------------------------------------------------------ errors */

TG_TEST(reduce, error_bad_dim)
{
    tg_tensor *x = tg_zeros(TG_SHAPE(2, 3, 4, 5), TG_FLOAT32);
    cr_assert_null(tg_sum(x, TG_DIMS(4), false));
    tg_assert_error("tg_sum: dim 4 is out of range for a tensor with 4 dims",
                    "rule: dim must be in [-4, 3]");
    cr_assert_null(tg_var(x, TG_DIMS(0, -5), 1, false));
    tg_assert_error("tg_var: dim -5 is out of range");
    cr_assert_null(tg_argmax(x, 7, false));
    tg_assert_error("tg_argmax: dim 7 is out of range");
    cr_assert_null(tg_sum(x, (const int[]){0}, -1, false));
    tg_assert_error("tg_sum: ndims is -1", "rule: ndims must be >= 0");
    tg_tensor *s = tg_scalar(1, TG_FLOAT32);
    cr_assert_null(tg_min(s, TG_DIMS(1), false));
    tg_assert_error("tg_min: dim 1 is out of range for a tensor with 0 dims");
    tg_release(s);
    tg_release(x);
}

TG_TEST(reduce, error_duplicate_dim)
{
    tg_tensor *x = tg_zeros(TG_SHAPE(2, 3), TG_FLOAT32);
    cr_assert_null(tg_sum(x, TG_DIMS(1, -1), false));
    tg_assert_error("tg_sum: dims [1, -1] name dim 1 twice for a tensor of "
                    "shape (2, 3)",
                    "\n  rule: each dim may be listed once");
    cr_assert_null(tg_max(x, TG_DIMS(0, 0), true));
    tg_assert_error("tg_max: dims [0, 0] name dim 0 twice");
    tg_tensor *s = tg_scalar(1, TG_FLOAT32);
    cr_assert_null(tg_mean(s, TG_DIMS(0, -1), false));
    tg_assert_error("tg_mean: dims [0, -1] name dim 0 twice for a tensor "
                    "of shape ()");
    tg_release(s);
    tg_release(x);
}

TG_TEST(reduce, error_int64_mean_var_std)
{
    tg_tensor *x = tg_zeros(TG_SHAPE(3), TG_INT64);
    cr_assert_null(tg_mean(x, NULL, 0, false));
    tg_assert_error("tg_mean: cannot take the mean of an int64 tensor",
                    "\n  rule: mean, var and std need a float32 or float64",
                    "\n  hint: convert first: tg_mean(tg_to_dtype(x, "
                    "TG_FLOAT32), ...)");
    cr_assert_null(tg_var(x, NULL, 0, 1, false));
    tg_assert_error("tg_var: cannot take the variance of an int64 tensor");
    cr_assert_null(tg_std(x, NULL, 0, 1, false));
    tg_assert_error("tg_std: cannot take the standard deviation of an "
                    "int64 tensor");
    tg_release(x);
}

TG_TEST(reduce, error_reducing_an_empty_dim)
{
    tg_tensor *x = tg_zeros(TG_SHAPE(0, 3), TG_FLOAT32);
    cr_assert_null(tg_max(x, TG_DIMS(0), false));
    tg_assert_error("tg_max: cannot reduce dim 0 of size 0 in a tensor of "
                    "shape (0, 3)",
                    "\n  rule: the maximum of no elements is undefined");
    cr_assert_null(tg_min(x, NULL, 0, false));
    tg_assert_error("tg_min: cannot reduce dim 0 of size 0");
    cr_assert_null(tg_argmax(x, 0, false));
    tg_assert_error("tg_argmax: cannot reduce dim 0 of size 0 in a tensor "
                    "of shape (0, 3)",
                    "\n  rule: the argmax of no elements is undefined");
    tg_tensor *y = tg_zeros(TG_SHAPE(2, 0), TG_INT64);
    cr_assert_null(tg_argmin(y, -1, true));
    tg_assert_error("tg_argmin: cannot reduce dim 1 of size 0");
    tg_release(y);
    tg_release(x);
}

TG_TEST(reduce, null_input_returns_null_without_a_message)
{
    cr_assert_null(tg_sum(NULL, NULL, 0, false));
    cr_assert_null(tg_mean(NULL, TG_DIMS(0), false));
    cr_assert_null(tg_var(NULL, NULL, 0, 1, false));
    cr_assert_null(tg_std(NULL, NULL, 0, 1, false));
    cr_assert_null(tg_max(NULL, NULL, 0, false));
    cr_assert_null(tg_min(NULL, NULL, 0, false));
    cr_assert_null(tg_argmax(NULL, 0, false));
    cr_assert_null(tg_argmin(NULL, 0, false));
    cr_assert_null(tg_softmax(NULL, 0));
    cr_assert_null(tg_log_softmax(NULL, 0));
    cr_assert_str_eq(tg_last_error(), "");
}

/* ----------------------------------------------------------- softmax */

/* Tolerances for softmax against the references:
 *  - float32: one float32 ulp relative, as for the reductions; plus, in
 *    absolute terms, one ulp of the subnormal range (1.4e-45), where
 *    float32 keeps fewer significant bits than 2^-23.
 *  - float64: exp and log differ by about an ulp between libm and NumPy,
 *    and the sums (3 to 5 terms) are added in other orders: a few double
 *    ulps; 1e-14 relative allows ~45.
 *  - log_softmax, both: an element near the maximum gets
 *    -log(sum) with sum = 1 + tiny; the sum itself carries one double
 *    rounding (2^-52 absolute) whose size relative to a tiny result is
 *    large, so allow 2^-51 ~ 4.4e-16 absolute. */
#define SUBNORMAL_ULP 1.5e-45
#define LOG_SUM_ATOL 4.5e-16

TG_TEST(softmax, large_values_match_numpy_along_every_dim)
{
    static const char *tags[] = {"f32", "f64"};
    for (int t = 0; t < 2; t++) {
        char name[64];
        snprintf(name, sizeof name, "softmax_x_%s", tags[t]);
        tg_tensor *x = tg_test_load_ref(name); // (3, 4, 5), +-1000 inside
        double rtol = t == 0 ? FLOAT32_ULP : 1e-14;
        double atol = t == 0 ? SUBNORMAL_ULP : 0;
        for (int d = 0; d < 3; d++) {
            snprintf(name, sizeof name, "softmax_d%d_%s", d, tags[t]);
            tg_test_check_ref(tg_softmax(x, d), name, rtol, atol);
            /* the same dim counted from the end */
            tg_test_check_ref(tg_softmax(x, d - 3), name, rtol, atol);
            snprintf(name, sizeof name, "softmax_log_d%d_%s", d, tags[t]);
            tg_test_check_ref(tg_log_softmax(x, d), name, rtol, LOG_SUM_ATOL);
        }
        tg_release(x);
    }
}

TG_TEST(softmax, non_contiguous_input_matches_numpy)
{
    tg_tensor *x = tg_test_load_ref("softmax_x_f32");
    tg_tensor *v = swapped_view(x, 0, 2); // (5, 4, 3)
    tg_tensor *ref = tg_test_load_ref("softmax_d2_f32");
    tg_tensor *ref_log = tg_test_load_ref("softmax_log_d2_f32");
    tg_tensor *ref_v = swapped_view(ref, 0, 2);
    tg_tensor *ref_log_v = swapped_view(ref_log, 0, 2);
    tg_tensor *s = tg_softmax(v, 0); // along x's dim 2
    tg_tensor *ls = tg_log_softmax(v, 0);
    /* Tolerances as in large_values_match_numpy_along_every_dim. */
    tg_assert_close(s, ref_v, FLOAT32_ULP, SUBNORMAL_ULP);
    tg_assert_close(ls, ref_log_v, FLOAT32_ULP, LOG_SUM_ATOL);
    tg_release(s);
    tg_release(ls);
    tg_release(ref_v);
    tg_release(ref_log_v);
    tg_release(ref);
    tg_release(ref_log);
    tg_release(v);
    tg_release(x);
}

TG_TEST(softmax, infinite_rows_as_pytorch)
{
    /* rows: all -inf | one -inf | +inf with a finite value */
    tg_tensor *x = tg_from_array(
        (float[]){-INFINITY, -INFINITY, -INFINITY, 1, INFINITY, 1},
        TG_SHAPE(3, 2), TG_FLOAT32);
    tg_tensor *s = tg_softmax(x, 1);
    tg_tensor *ls = tg_log_softmax(x, 1);
    float e[6], le[6];
    for (int i = 0; i < 6; i++) {
        e[i] = (float)value_at(s, i);
        le[i] = (float)value_at(ls, i);
    }
    /* exp(-inf - (-inf)) = exp(NaN): PyTorch gives NaN for the row */
    cr_assert(isnan(e[0]) && isnan(e[1]) && isnan(le[0]) && isnan(le[1]));
    /* exp(-inf) = 0 exactly, leaving exactly 1 and log 0 */
    cr_assert_eq(e[2], 0.0f);
    cr_assert_eq(e[3], 1.0f);
    cr_assert(isinf(le[2]) && le[2] < 0);
    cr_assert_eq(le[3], 0.0f);
    /* +inf - +inf = NaN poisons the sum: PyTorch gives NaN, NaN */
    cr_assert(isnan(e[4]) && isnan(e[5]) && isnan(le[4]) && isnan(le[5]));
    tg_release(s);
    tg_release(ls);
    tg_release(x);
}

TG_TEST(softmax, scalar_and_empty)
{
    tg_tensor *x = tg_scalar(5, TG_FLOAT64);
    tg_tensor *s = tg_softmax(x, 0);
    tg_tensor *ls = tg_log_softmax(x, -1);
    cr_assert_eq(s->ndim, 0);
    cr_assert_eq(tg_item(s), 1.0);
    cr_assert_eq(tg_item(ls), 0.0);
    tg_tensor *e = tg_zeros(TG_SHAPE(2, 0), TG_FLOAT32);
    tg_tensor *se = tg_softmax(e, 1);
    cr_assert(tg_same_shape(se, e));
    cr_assert_eq(se->dtype, TG_FLOAT32);
    tg_release(se);
    tg_release(e);
    tg_release(s);
    tg_release(ls);
    tg_release(x);
}

TG_TEST(softmax, errors)
{
    tg_tensor *x = tg_zeros(TG_SHAPE(2, 3), TG_FLOAT32);
    cr_assert_null(tg_softmax(x, 2));
    tg_assert_error("tg_softmax: dim 2 is out of range for a tensor with 2 "
                    "dims",
                    "\n  rule: dim must be in [-2, 1]");
    cr_assert_null(tg_log_softmax(x, -3));
    tg_assert_error("tg_log_softmax: dim -3 is out of range");
    tg_tensor *xi = tg_zeros(TG_SHAPE(2, 3), TG_INT64);
    cr_assert_null(tg_softmax(xi, 1));
    tg_assert_error("tg_softmax: cannot take the softmax of an int64 tensor",
                    "\n  rule: softmax needs a float32 or float64 input",
                    "\n  hint: convert first: tg_softmax(tg_to_dtype(x, "
                    "TG_FLOAT32), dim)");
    cr_assert_null(tg_log_softmax(xi, 1));
    tg_assert_error("tg_log_softmax: cannot take the log-softmax of an "
                    "int64 tensor");
    tg_release(xi);
    tg_release(x);
}
