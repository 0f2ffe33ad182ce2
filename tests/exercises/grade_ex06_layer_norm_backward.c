/*
 * tests/exercises/grade_ex06_layer_norm_backward.c - grades exercise 06,
 * ex_layer_norm_backward (docs/exercises/06-layer-norm-backward.md):
 *   - against NumPy's gradients, computed by complex-step differentiation
 *     of the forward, not by the closed form
 *     (scripts/reference/gen_ex06.py);
 *   - with tg_gradcheck on the full Jacobian of y with respect to x,
 *     weight and bias: the student's backward inside a tg_function whose
 *     forward is tg_layer_norm_ex;
 *   - against tapegrad's own tg_layer_norm backward on one row, one column
 *     (dx = 0), wide rows and a constant row.
 * Every result must be float64 with the contract's shape.
 */
#define EX_STATEMENT "06-layer-norm-backward.md"
#include "grade.h"

/* Added to a shape mismatch where a 1-D result came back 2-D. */
#define SHAPE_HINT "sum over the rows without keepdim"

#include <stdio.h>

#define EPS 1e-5 // the forwards' eps; the backward sees it only in rstd

static const ex_norm_exercise exercise = {
    ex_layer_norm_backward, "ex_layer_norm_backward", EX_STATEMENT,
    SHAPE_HINT};

TG_TEST(ex06, matches_numpy)
{
    tg_tensor *x = tg_test_load_ref("ex06_x");
    tg_tensor *w = tg_test_load_ref("ex06_w");
    tg_tensor *dy = tg_test_load_ref("ex06_dy");
    tg_tensor *mean = tg_test_load_ref("ex06_mean");
    tg_tensor *rstd = tg_test_load_ref("ex06_rstd");
    ex_norm_grads r = ex_norm_backward(&exercise, dy, x, w, mean, rstd);
    /* the complex step is exact to rounding; rstd is up to 5 here */
    tg_test_check_ref(r.dx, "ex06_dx", 1e-10, 1e-12);
    tg_test_check_ref(r.dw, "ex06_dw", 1e-10, 1e-12);
    tg_test_check_ref(r.db, "ex06_db", 1e-10, 1e-12);
    tg_release(rstd);
    tg_release(mean);
    tg_release(dy);
    tg_release(w);
    tg_release(x);
}

/* A tg_function over (x, weight, bias): the forward is tapegrad's
 * LayerNorm and saves what the student's backward takes (x, weight, and
 * the statistics as (rows,)); the backward is the student's. So
 * tg_gradcheck tests the student's backward alone. */
static tg_tensor *ln_forward(tg_ctx *ctx, const tg_tensor *const *in, int n,
                             const void *args)
{
    (void)n, (void)args;
    const tg_tensor *x = in[0];
    const int64_t rows = x->shape[0];
    tg_tensor *mean1 = NULL, *rstd1 = NULL; // (rows, 1)
    tg_tensor *y = tg_layer_norm_ex(x, &x->shape[1], 1, in[1], in[2], EPS,
                                    &mean1, &rstd1);
    tg_tensor *mean = tg_reshape(mean1, &rows, 1);
    tg_tensor *rstd = tg_reshape(rstd1, &rows, 1);
    tg_ctx_save(ctx, x);
    tg_ctx_save(ctx, in[1]);
    tg_ctx_save(ctx, mean);
    tg_ctx_save(ctx, rstd);
    tg_release(rstd);
    tg_release(mean);
    tg_release(rstd1);
    tg_release(mean1);
    return y;
}

static int ln_backward(tg_ctx *ctx, const tg_tensor *g,
                       tg_tensor **grad_inputs)
{
    return ex_norm_function_backward(&exercise, ctx, g, grad_inputs);
}

static const tg_function student_ln = {"StudentLayerNormBackward",
                                       ln_forward, ln_backward, 0};

static tg_tensor *apply_student_ln(const tg_tensor *const *in, int n, void *user)
{
    (void)n, (void)user;
    return tg_function_apply(&student_ln, (const tg_tensor *const *)in, 3,
                             NULL);
}

TG_TEST(ex06, gradcheck)
{
    ex_norm_gradcheck(&exercise, apply_student_ln, 3, 5, 61);
}

/* The student's gradients against those tapegrad's tg_layer_norm gives
 * for L = sum(y * dy). The student gets detached copies, so nothing of
 * theirs is recorded. With constant_row, row 1 of x is all 3.0. */
static void check_against_library(int64_t rows, int64_t cols, uint64_t seed,
                                  bool constant_row)
{
    tg_generator *gen = tg_generator_new(seed);
    tg_tensor *x = tg_randn_gen(gen, TG_SHAPE(rows, cols), TG_FLOAT64);
    tg_tensor *w = tg_randn_gen(gen, TG_SHAPE(cols), TG_FLOAT64);
    tg_tensor *b = tg_randn_gen(gen, TG_SHAPE(cols), TG_FLOAT64);
    tg_tensor *dy = tg_randn_gen(gen, TG_SHAPE(rows, cols), TG_FLOAT64);
    if (constant_row) {
        tg_tensor *row = tg_select(x, 0, 1);
        tg_fill_(row, 3.0);
        tg_release(row);
    }
    tg_set_requires_grad(x, true);
    tg_set_requires_grad(w, true);
    tg_set_requires_grad(b, true);
    tg_tensor *mean1, *rstd1;
    tg_tensor *y = tg_layer_norm_ex(x, &cols, 1, w, b, EPS, &mean1, &rstd1);
    tg_tensor *yd = tg_mul(y, dy);
    tg_tensor *loss = tg_sum(yd, NULL, 0, false);
    cr_assert_eq(tg_backward(loss), 0, "%s", tg_last_error());
    tg_tensor *mean = tg_reshape(mean1, &rows, 1);
    tg_tensor *rstd = tg_reshape(rstd1, &rows, 1);
    tg_tensor *xd = tg_detach(x), *wd = tg_detach(w);
    ex_norm_grads r = ex_norm_backward(&exercise, dy, xd, wd, mean, rstd);
    /* two float64 evaluations of one formula; a constant row has
     * rstd = 1 / sqrt(eps) = 316, which scales the rounding */
    ex_check_close(r.dx, x->grad, "dx against tg_layer_norm's", 1e-9, 1e-11);
    ex_check_close(r.dw, w->grad, "dweight against tg_layer_norm's", 1e-9,
                1e-11);
    ex_check_close(r.db, b->grad, "dbias against tg_layer_norm's", 1e-9,
                1e-11);
    ex_norm_grads_release(&r);
    tg_release(wd);
    tg_release(xd);
    tg_release(rstd);
    tg_release(mean);
    tg_release(loss);
    tg_release(yd);
    tg_release(rstd1);
    tg_release(mean1);
    tg_release(y);
    tg_release(dy);
    tg_release(b);
    tg_release(w);
    tg_release(x);
    tg_generator_free(gen);
}

TG_TEST(ex06, one_row)
{
    check_against_library(1, 5, 62, false);
}

/* Rows of one element: y = bias whatever x is, so dx = 0 and
 * dweight = 0 (xhat = 0). */
TG_TEST(ex06, one_column_gives_zero_dx)
{
    check_against_library(5, 1, 63, false);
}

TG_TEST(ex06, wide_rows)
{
    check_against_library(2, 300, 64, false);
}

/* A row of variance 0: xhat = 0 there and dx = rstd * (g - mean(g)) with
 * rstd = 1 / sqrt(eps) (docs/normalization.md section 5). */
TG_TEST(ex06, constant_row)
{
    check_against_library(3, 4, 65, true);
}

TG_TEST(ex06, leaves_inputs_alone)
{
    ex_norm_leaves_inputs_alone(&exercise, "ex06");
}
