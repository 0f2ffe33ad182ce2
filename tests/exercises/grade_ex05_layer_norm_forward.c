/*
 * tests/exercises/grade_ex05_layer_norm_forward.c - grades exercise 05,
 * ex_layer_norm_forward (docs/exercises/05-layer-norm-forward.md):
 *   - y, mean and rstd against NumPy (scripts/reference/gen_ex05.py), with
 *     weight and bias and without, and with the unbiased variance named
 *     when that is the mistake;
 *   - against tapegrad's own tg_layer_norm_ex with only a weight or only a
 *     bias, on one row, on one column (every row one element: y = bias)
 *     and on wide rows;
 *   - a large eps, and rows whose mean is large next to their spread.
 * Every result must be float64 with the contract's shape.
 */
#define EX_STATEMENT "05-layer-norm-forward.md"
#include "grade.h"

/* Added to a shape mismatch where a 1-D result came back 2-D. */
#define SHAPE_HINT "one value per row: reshape the (rows, 1) statistic with tg_reshape"

#include <stdio.h>

typedef struct ln_result {
    tg_tensor *y, *mean, *rstd;
} ln_result;

static void ln_result_release(ln_result *r)
{
    tg_release(r->rstd);
    tg_release(r->mean);
    tg_release(r->y);
}

/* Calls the student's forward and checks that the three results are there
 * with the right shapes and dtype. */
static ln_result student_forward(const tg_tensor *x, const tg_tensor *w,
                                 const tg_tensor *b, double eps)
{
    ln_result r = {NULL, NULL, NULL};
    EX_CALL(r.y = ex_layer_norm_forward(x, w, b, eps, &r.mean, &r.rstd));
    ex_require(r.y, "ex_layer_norm_forward");
    cr_assert(r.mean && r.rstd,
              "ex_layer_norm_forward returned y but left *%s NULL: store "
              "the per-row statistic there (a new reference)",
              r.mean ? "rstd" : "mean");
    ex_check_shape(r.y, "y", x->shape, 2, SHAPE_HINT);
    ex_check_shape(r.mean, "*mean", x->shape, 1, SHAPE_HINT);
    ex_check_shape(r.rstd, "*rstd", x->shape, 1, SHAPE_HINT);
    return r;
}

/* Fails with the hint when actual equals the reference `name`, the result
 * of a known mistake. */
static void reject_mistake(const tg_tensor *actual, const char *name,
                           const char *hint)
{
    tg_tensor *wrong = tg_test_load_ref(name);
    char report[1024];
    bool same = tg_test_close(actual, wrong, 1e-10, 1e-12, false, report,
                              sizeof report);
    tg_release(wrong);
    cr_assert(!same, "%s", hint);
}

TG_TEST(ex05, matches_numpy)
{
    tg_tensor *x = tg_test_load_ref("ex05_x");
    tg_tensor *w = tg_test_load_ref("ex05_w");
    tg_tensor *b = tg_test_load_ref("ex05_b");
    ln_result r = student_forward(x, w, b, 1e-5);
    reject_mistake(r.y, "ex05_y_unbiased",
                   "y is what the unbiased variance sum((x - mean)^2) / "
                   "(C - 1) gives. LayerNorm divides by C (correction 0): "
                   "tg_var's and torch.var's default is correction 1, "
                   "F.layer_norm's is 0.");
    /* float64 all the way; the tolerance leaves room for another order
     * of summation and rounding, amplified by rstd up to 20 (row 4) */
    tg_test_check_ref(r.y, "ex05_y", 1e-10, 1e-12);
    tg_test_check_ref(r.mean, "ex05_mean", 1e-12, 1e-14);
    tg_test_check_ref(r.rstd, "ex05_rstd", 1e-10, 0);
    tg_release(b);
    tg_release(w);
    tg_release(x);
}

TG_TEST(ex05, no_weight_no_bias)
{
    tg_tensor *x = tg_test_load_ref("ex05_x");
    ln_result r = student_forward(x, NULL, NULL, 1e-5);
    tg_test_check_ref(r.y, "ex05_y_plain", 1e-10, 1e-12);
    tg_test_check_ref(r.mean, "ex05_mean", 1e-12, 1e-14);
    tg_test_check_ref(r.rstd, "ex05_rstd", 1e-10, 0);
    tg_release(x);
}

/* The student's results against tg_layer_norm_ex on the same arguments;
 * the library's statistics are (rows, 1), reshaped to (rows,). */
static void check_against_library(const tg_tensor *x, const tg_tensor *w,
                                  const tg_tensor *b, double eps)
{
    const int64_t rows = x->shape[0];
    tg_tensor *mean1, *rstd1;
    tg_tensor *y = tg_layer_norm_ex(x, &x->shape[1], 1, w, b, eps, &mean1,
                                    &rstd1);
    cr_assert(y != NULL, "%s", tg_last_error());
    tg_tensor *mean = tg_reshape(mean1, &rows, 1);
    tg_tensor *rstd = tg_reshape(rstd1, &rows, 1);
    ln_result r = student_forward(x, w, b, eps);
    ex_check_close(r.y, y, "y against tg_layer_norm_ex's", 1e-10, 1e-12);
    ex_check_close(r.mean, mean, "mean against tg_layer_norm_ex's", 1e-12,
                1e-14);
    ex_check_close(r.rstd, rstd, "rstd against tg_layer_norm_ex's", 1e-10, 0);
    ln_result_release(&r);
    tg_release(rstd);
    tg_release(mean);
    tg_release(rstd1);
    tg_release(mean1);
    tg_release(y);
}

TG_TEST(ex05, weight_or_bias_alone)
{
    tg_tensor *x = tg_test_load_ref("ex05_x");
    tg_tensor *w = tg_test_load_ref("ex05_w");
    tg_tensor *b = tg_test_load_ref("ex05_b");
    check_against_library(x, w, NULL, 1e-5);
    check_against_library(x, NULL, b, 1e-5);
    tg_release(b);
    tg_release(w);
    tg_release(x);
}

static void random_case(int64_t rows, int64_t cols, uint64_t seed)
{
    tg_generator *gen = tg_generator_new(seed);
    tg_tensor *x = tg_randn_gen(gen, TG_SHAPE(rows, cols), TG_FLOAT64);
    tg_tensor *w = tg_randn_gen(gen, TG_SHAPE(cols), TG_FLOAT64);
    tg_tensor *b = tg_randn_gen(gen, TG_SHAPE(cols), TG_FLOAT64);
    check_against_library(x, w, b, 1e-5);
    tg_release(b);
    tg_release(w);
    tg_release(x);
    tg_generator_free(gen);
}

TG_TEST(ex05, one_row)
{
    random_case(1, 5, 51);
}

TG_TEST(ex05, wide_rows)
{
    random_case(2, 300, 52);
}

/* One column: every row is one element, its own mean, variance 0, so
 * xhat = 0 and y = bias whatever x and weight are. */
TG_TEST(ex05, one_element_rows_give_bias)
{
    tg_generator *gen = tg_generator_new(53);
    tg_tensor *x = tg_randn_gen(gen, TG_SHAPE(6, 1), TG_FLOAT64);
    tg_tensor *w = tg_randn_gen(gen, TG_SHAPE(1), TG_FLOAT64);
    tg_tensor *b = tg_randn_gen(gen, TG_SHAPE(1), TG_FLOAT64);
    tg_tensor *expected = tg_expand(b, TG_SHAPE(6, 1));
    ln_result r = student_forward(x, w, b, 1e-5);
    ex_check_close(r.y, expected,
                "a row of one element has variance 0, so xhat = 0 and y "
                "must be the bias", 0, 1e-12);
    ln_result_release(&r);
    check_against_library(x, w, b, 1e-5);
    tg_release(expected);
    tg_release(b);
    tg_release(w);
    tg_release(x);
    tg_generator_free(gen);
}

/* eps 0.5 on rows of variance about 0.01: eps dominates, so leaving it
 * out, fixing it at 1e-5 or adding it outside the sqrt shows. */
TG_TEST(ex05, large_eps)
{
    tg_tensor *x = tg_test_load_ref("ex05_x_eps");
    ln_result r = student_forward(x, NULL, NULL, 0.5);
    tg_test_check_ref(r.rstd, "ex05_rstd_eps", 1e-10, 0);
    tg_test_check_ref(r.y, "ex05_y_eps", 1e-10, 1e-12);
    tg_release(r.mean);
    tg_release(x);
}

/* Rows of mean about 1e6 and standard deviation 1e-2. A two-pass variance
 * (the mean of (x - mean)^2) keeps about 8 digits here: x - mean loses
 * the 8 digits that the mean and the spread have in common. E[x^2] -
 * E[x]^2 subtracts two numbers near 1e12 whose rounding error (1e-4) is
 * the size of the variance itself, and is off by 40% or more. */
TG_TEST(ex05, large_mean_rows)
{
    tg_tensor *x = tg_test_load_ref("ex05_x_big");
    ln_result r = student_forward(x, NULL, NULL, 1e-5);
    tg_tensor *mean = tg_test_load_ref("ex05_mean_big");
    tg_tensor *rstd = tg_test_load_ref("ex05_rstd_big");
    tg_tensor *y = tg_test_load_ref("ex05_y_big");
    ex_check_close(r.mean, mean, "mean of rows of mean 1e6", 1e-14, 0);
    ex_check_close(r.rstd, rstd,
                "rstd of rows of mean 1e6 and spread 1e-2 (compute the "
                "variance as the mean of (x - mean)^2: E[x^2] - E[x]^2 "
                "subtracts two numbers near 1e12 and loses it)",
                1e-6, 0);
    ex_check_close(r.y, y, "y of rows of mean 1e6 and spread 1e-2", 1e-6,
                1e-6);
    ln_result_release(&r);
    tg_release(y);
    tg_release(rstd);
    tg_release(mean);
    tg_release(x);
}

TG_TEST(ex05, leaves_inputs_alone)
{
    tg_tensor *x = tg_test_load_ref("ex05_x");
    tg_tensor *w = tg_test_load_ref("ex05_w");
    tg_tensor *b = tg_test_load_ref("ex05_b");
    ln_result r = student_forward(x, w, b, 1e-5);
    cr_assert(r.y != x && r.mean != x && r.rstd != x,
              "return new tensors, not x");
    tg_tensor *x0 = tg_test_load_ref("ex05_x");
    tg_tensor *w0 = tg_test_load_ref("ex05_w");
    tg_tensor *b0 = tg_test_load_ref("ex05_b");
    ex_check_close(x, x0, "x was changed", 0, 0);
    ex_check_close(w, w0, "weight was changed", 0, 0);
    ex_check_close(b, b0, "bias was changed", 0, 0);
    ln_result_release(&r);
    tg_release(b0);
    tg_release(w0);
    tg_release(x0);
    tg_release(b);
    tg_release(w);
    tg_release(x);
}
