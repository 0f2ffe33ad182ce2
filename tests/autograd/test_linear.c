/*
 * tests/autograd/test_linear.c - tg_linear (autograd/ops/linear.c) against
 * NumPy references (scripts/reference/gen_linear.py): the forward and the
 * three gradients, on the fast and the reference kernels, on contiguous
 * and non-contiguous operands; its node names; the fused node against the
 * composed tg_matmul + tg_add; empty shapes; and that each comparison
 * fails on a wrong answer. Errors are rows of tests/errors/catalogue_ops.c.
 *
 * Tolerances, and why:
 *  - float64: the references are exact sums rounded once; the kernels sum
 *    at most 5 rounded products of O(1) values in double, then add b: a
 *    few double ulps, 1e-14 relative plus 1e-14 absolute (sums that cancel
 *    toward 0).
 *  - float32: the fast kernel sums in float32 as BLAS does, within
 *    (k + 2) * 2^-24 * sum |terms| of the exact value; here k <= 4 and the
 *    terms are products of N(0, 1) draws, sum |terms| < 20, so
 *    6 * 2^-24 * 20 = 7.2e-6 absolute, taken as 1e-5, plus 2^-23
 *    relative for the final rounding. The reference kernel sums in double
 *    and is well inside that.
 */
#include "../common.h"

#include <string.h>

/* One case of gen_linear.py. */
typedef struct linear_case {
    const char *name;
    bool bias;
} linear_case;

static const linear_case CASES[] = {
    {"2d_f64", true},  {"2d_f32", true},      {"3d_f64", true},
    {"1d_f64", true},  {"nobias_f32", false},
};

static tg_tensor *load(const char *c, const char *what)
{
    char name[96];
    snprintf(name, sizeof name, "linear_%s_%s", c, what);
    return tg_test_load_ref(name);
}

static void tolerance(const tg_tensor *t, double *rtol, double *atol)
{
    bool f32 = t->dtype == TG_FLOAT32;
    *rtol = f32 ? 1.1920929e-07 : 1e-14;
    *atol = f32 ? 1e-5 : 1e-14;
}

/* actual (borrowed) close to reference linear_<c>_<what>? */
static bool matches(const tg_tensor *actual, const char *c, const char *what,
                    char *report, size_t size)
{
    tg_tensor *ref = load(c, what);
    double rtol, atol;
    tolerance(ref, &rtol, &atol);
    bool ok = tg_test_close(actual, ref, rtol, atol, true, report, size);
    tg_release(ref);
    return ok;
}

#define assert_matches(actual, c, what)                                     \
    do {                                                                    \
        char report_[1024];                                                 \
        cr_assert(matches((actual), (c), (what), report_, sizeof report_),  \
                  "linear_%s_%s: %s", (c), (what), report_);                \
    } while (0)

/* Runs one case forward and backward (x, W, b made non-contiguous when
 * asked) on the current kernels, and compares all four results. */
static void run_case(const linear_case *lc, bool non_contiguous)
{
    tg_tensor *x0 = load(lc->name, "x"), *w0 = load(lc->name, "w");
    tg_tensor *b0 = lc->bias ? load(lc->name, "b") : NULL;
    tg_tensor *g0 = load(lc->name, "g");
    tg_tensor *x = non_contiguous ? tg_test_non_contiguous(x0, false)
                                  : tg_retain(x0);
    tg_tensor *w = non_contiguous ? tg_test_non_contiguous(w0, false)
                                  : tg_retain(w0);
    tg_tensor *b = b0 && non_contiguous ? tg_test_non_contiguous(b0, true)
                                        : tg_retain(b0);
    tg_tensor *g = non_contiguous ? tg_test_non_contiguous(g0, true)
                                  : tg_retain(g0);
    tg_set_requires_grad(x, true);
    tg_set_requires_grad(w, true);
    if (b)
        tg_set_requires_grad(b, true);
    tg_tensor *y = tg_linear(x, w, b);
    cr_assert_not_null(y, "%s: %s", lc->name, tg_last_error());
    assert_matches(y, lc->name, "y");
    cr_assert_eq(tg_backward_ex(y, &(tg_backward_options){.grad = g}), 0,
                 "%s", tg_last_error());
    assert_matches(x->grad, lc->name, "dx");
    assert_matches(w->grad, lc->name, "dw");
    if (b)
        assert_matches(b->grad, lc->name, "db");
    tg_release(y);
    tg_release(g);
    tg_release(b);
    tg_release(w);
    tg_release(x);
    tg_release(g0);
    tg_release(b0);
    tg_release(w0);
    tg_release(x0);
}

static void run_all(tg_kernels kernels, bool non_contiguous)
{
    tg_kernels before = tg_get_kernels();
    tg_set_kernels(kernels);
    for (size_t i = 0; i < sizeof CASES / sizeof *CASES; i++)
        run_case(&CASES[i], non_contiguous);
    tg_set_kernels(before);
}

TG_TEST(linear, matches_numpy_on_the_fast_kernels)
{
    run_all(TG_KERNELS_PORTABLE, false);
}

TG_TEST(linear, matches_numpy_on_the_reference_kernels)
{
    run_all(TG_KERNELS_REFERENCE, false);
}

TG_TEST(linear, matches_numpy_on_non_contiguous_operands)
{
    run_all(TG_KERNELS_PORTABLE, true);
    run_all(TG_KERNELS_REFERENCE, true);
}

/* ------------------------------------------- the checks can fail */

/* A bias forgotten in the forward, and db taken from one row of g instead
 * of the sum over rows (the two classic slips), must not pass. */
TG_TEST(linear, the_reference_comparison_catches_wrong_answers)
{
    char report[1024];
    tg_tensor *x = load("2d_f64", "x"), *w = load("2d_f64", "w");
    tg_tensor *g = load("2d_f64", "g");
    tg_tensor *y = tg_linear(x, w, NULL); // no bias
    cr_assert_not_null(y);
    cr_assert_not(matches(y, "2d_f64", "y", report, sizeof report),
                  "a missing bias passed the comparison");
    tg_tensor *row = tg_select(g, 0, 0); // g[0], not the sum over rows
    cr_assert_not(matches(row, "2d_f64", "db", report, sizeof report),
                  "one row of g passed as db");
    /* and dW = X^T G laid out (in, out) is not dW */
    tg_tensor *gt = tg_transpose(g, 0, 1);
    tg_tensor *dw = tg_matmul(gt, x);
    tg_tensor *wrong = tg_mul_scalar(dw, 1.0 + 1e-12);
    cr_assert(matches(dw, "2d_f64", "dw", report, sizeof report), "%s",
              report);
    cr_assert_not(matches(wrong, "2d_f64", "dw", report, sizeof report),
                  "a dW off by 1e-12 relative passed");
    tg_release(wrong);
    tg_release(dw);
    tg_release(gt);
    tg_release(row);
    tg_release(y);
    tg_release(g);
    tg_release(w);
    tg_release(x);
}

/* --------------------------------------------- nodes and equivalences */

TG_TEST(linear, records_one_node_named_as_pytorch)
{
    tg_tensor *x = tg_randn(TG_SHAPE(4, 3), TG_FLOAT32);
    tg_tensor *w = tg_randn(TG_SHAPE(2, 3), TG_FLOAT32);
    tg_tensor *b = tg_randn(TG_SHAPE(2), TG_FLOAT32);
    tg_set_requires_grad(w, true);
    int64_t before = tg_tape_size();
    tg_tensor *y = tg_linear(x, w, b);
    cr_assert_eq(tg_tape_size() - before, 1);
    cr_assert_str_eq(tg_grad_fn_name(y), "AddmmBackward0");
    tg_tensor *z = tg_linear(x, w, NULL);
    cr_assert_str_eq(tg_grad_fn_name(z), "MmBackward0");
    tg_no_grad_begin();
    tg_tensor *n = tg_linear(x, w, b);
    tg_no_grad_end();
    cr_assert_not(n->requires_grad);
    cr_assert_null(tg_grad_fn_name(n));
    tg_release(n);
    tg_release(z);
    tg_release(y);
    tg_release(b);
    tg_release(w);
    tg_release(x);
}

/* In float64 the fused node gives the same bits as tg_add(tg_matmul(x,
 * W^T), b) and as the reference kernel (the same sums in the same order,
 * then + b), forward and backward, for a 2-D x. (For an x with batch dims
 * the composed dW differs in the last bits: tg_matmul's backward sums
 * each batch block's rows, then the blocks; tg_linear sums all rows in
 * order.) */
TG_TEST(linear, float64_is_bit_identical_to_the_composed_form)
{
    tg_tensor *x = tg_randn(TG_SHAPE(6, 7), TG_FLOAT64);
    tg_tensor *w = tg_randn(TG_SHAPE(5, 7), TG_FLOAT64);
    tg_tensor *b = tg_randn(TG_SHAPE(5), TG_FLOAT64);
    tg_tensor *g = tg_randn(TG_SHAPE(6, 5), TG_FLOAT64);
    tg_tensor *grads[3][3] = {{NULL}};
    tg_tensor *ys[3];
    for (int k = 0; k < 3; k++) { // fused fast, fused reference, composed
        tg_kernels before = tg_get_kernels();
        tg_set_kernels(k == 1 ? TG_KERNELS_REFERENCE : TG_KERNELS_PORTABLE);
        tg_tensor *in[3] = {tg_detach(x), tg_detach(w), tg_detach(b)};
        for (int i = 0; i < 3; i++)
            tg_set_requires_grad(in[i], true);
        if (k < 2) {
            ys[k] = tg_linear(in[0], in[1], in[2]);
        } else {
            tg_tensor *wt = tg_transpose(in[1], 0, 1);
            tg_tensor *xw = tg_matmul(in[0], wt);
            ys[k] = tg_add(xw, in[2]);
            tg_release(xw);
            tg_release(wt);
        }
        cr_assert_eq(tg_backward_ex(ys[k], &(tg_backward_options){.grad = g}),
                     0, "%s", tg_last_error());
        for (int i = 0; i < 3; i++) {
            grads[k][i] = tg_retain(in[i]->grad);
            tg_release(in[i]);
        }
        tg_set_kernels(before);
    }
    for (int k = 1; k < 3; k++) {
        tg_assert_close(ys[k], ys[0], 0, 0);
        for (int i = 0; i < 3; i++)
            tg_assert_close(grads[k][i], grads[0][i], 0, 0);
    }
    for (int k = 0; k < 3; k++) {
        tg_release(ys[k]);
        for (int i = 0; i < 3; i++)
            tg_release(grads[k][i]);
    }
    tg_release(g);
    tg_release(b);
    tg_release(w);
    tg_release(x);
}

/* ----------------------------------------------------------- empty */

/* No rows: y is (0, 3) and dW, db are zeros. No input features: y is b on
 * every row, dX is (2, 0), dW (3, 0) and db sums g. */
TG_TEST(linear, empty_shapes)
{
    tg_tensor *x = tg_zeros(TG_SHAPE(0, 4), TG_FLOAT64);
    tg_tensor *w = tg_ones(TG_SHAPE(3, 4), TG_FLOAT64);
    tg_tensor *b = tg_ones(TG_SHAPE(3), TG_FLOAT64);
    tg_set_requires_grad(w, true);
    tg_set_requires_grad(b, true);
    tg_tensor *y = tg_linear(x, w, b);
    cr_assert_not_null(y, "%s", tg_last_error());
    cr_assert_eq(y->ndim, 2);
    cr_assert_eq(y->shape[0], 0);
    cr_assert_eq(y->shape[1], 3);
    tg_tensor *s = tg_sum(y, NULL, 0, false);
    cr_assert_eq(tg_backward(s), 0, "%s", tg_last_error());
    tg_tensor *zw = tg_zeros(TG_SHAPE(3, 4), TG_FLOAT64);
    tg_tensor *zb = tg_zeros(TG_SHAPE(3), TG_FLOAT64);
    tg_assert_close(w->grad, zw, 0, 0);
    tg_assert_close(b->grad, zb, 0, 0);
    tg_release(zb);
    tg_release(zw);
    tg_release(s);
    tg_release(y);
    tg_release(b);
    tg_release(w);
    tg_release(x);

    x = tg_zeros(TG_SHAPE(2, 0), TG_FLOAT64);
    w = tg_zeros(TG_SHAPE(3, 0), TG_FLOAT64);
    b = tg_arange(1, 4, 1, TG_FLOAT64);
    tg_set_requires_grad(x, true);
    tg_set_requires_grad(w, true);
    tg_set_requires_grad(b, true);
    y = tg_linear(x, w, b);
    cr_assert_not_null(y, "%s", tg_last_error());
    tg_tensor *bb = tg_expand(b, TG_SHAPE(2, 3));
    tg_assert_close(y, bb, 0, 0);
    s = tg_sum(y, NULL, 0, false);
    cr_assert_eq(tg_backward(s), 0, "%s", tg_last_error());
    cr_assert_eq(x->grad->numel, 0);
    cr_assert_eq(w->grad->numel, 0);
    tg_tensor *two = tg_full(TG_SHAPE(3), 2.0, TG_FLOAT64);
    tg_assert_close(b->grad, two, 0, 0);
    tg_release(two);
    tg_release(s);
    tg_release(bb);
    tg_release(y);
    tg_release(b);
    tg_release(w);
    tg_release(x);
}

/* nn's Linear runs tg_linear: one node per layer. */
TG_TEST(linear, the_nn_layer_records_one_addmm_node)
{
    tg_manual_seed(3);
    tg_module *lin = tg_linear_new(3, 2, true);
    tg_tensor *x = tg_randn(TG_SHAPE(4, 3), TG_FLOAT32);
    int64_t before = tg_tape_size();
    tg_tensor *y = tg_module_forward(lin, x);
    cr_assert_not_null(y, "%s", tg_last_error());
    cr_assert_eq(tg_tape_size() - before, 1);
    cr_assert_str_eq(tg_grad_fn_name(y), "AddmmBackward0");
    tg_release(y);
    tg_release(x);
    tg_module_free(lin);
}
