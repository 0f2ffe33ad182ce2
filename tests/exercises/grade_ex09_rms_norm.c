/*
 * tests/exercises/grade_ex09_rms_norm.c - grades exercise 09, ex_rms_norm
 * (docs/exercises/09-rms-norm.md), RMSNorm as a tg_function:
 *   - y, dL/dx and dL/dweight against NumPy, whose gradients come from
 *     complex-step differentiation, not from a formula for the backward
 *     (scripts/reference/gen_ex09.py);
 *   - one node per call on the tape, named "RMSNormBackward", and none
 *     when no input needs a gradient;
 *   - tg_gradcheck over x and weight in float64, with a small and a large
 *     eps;
 *   - a row of zeros (rms = sqrt(eps));
 *   - against the same formula built from tapegrad's ops, differentiated
 *     by the tape, on one row, one column and wide rows, and with only one
 *     input needing a gradient.
 * eps is never 1e-5 alone: an RMSNorm that ignores the eps it is given
 * fails.
 */
#define EX_STATEMENT "09-rms-norm.md"
#include "grade.h"

#include <math.h>

/* The student's RMSNorm, its result checked for NULL, shape and dtype. */
static tg_tensor *student(const tg_tensor *x, const tg_tensor *w, double eps)
{
    tg_tensor *y;
    EX_CALL_RECORDING(y = ex_rms_norm(x, w, eps));
    ex_require(y, "ex_rms_norm");
    ex_check_shape(y, "ex_rms_norm's result", x->shape, 2, NULL);
    return y;
}

/* The same formula from tapegrad's ops, which the tape differentiates:
 * x * rsqrt(mean(x * x, -1) + eps) * w. */
static tg_tensor *composed(const tg_tensor *x, const tg_tensor *w,
                           double eps)
{
    tg_tensor *x2 = tg_mul(x, x);
    tg_tensor *ms = tg_mean(x2, TG_DIMS(-1), true);
    tg_tensor *ms_eps = tg_add_scalar(ms, eps);
    tg_tensor *rrms = tg_rsqrt(ms_eps);
    tg_tensor *xhat = tg_mul(x, rrms);
    tg_tensor *y = tg_mul(xhat, w);
    tg_release(xhat);
    tg_release(rrms);
    tg_release(ms_eps);
    tg_release(ms);
    tg_release(x2);
    return y;
}

/* y, dL/dx and dL/dw for L = sum(g * y), with y from the student's op
 * (use_student) or the composed one; x and w are copied into fresh leaves
 * that require grad as need_x and need_w say. A gradient not needed
 * comes back NULL. All new references. */
typedef struct grads {
    tg_tensor *y, *dx, *dw;
} grads;

static grads run(bool use_student, const tg_tensor *x, const tg_tensor *w,
                 const tg_tensor *g, double eps, bool need_x, bool need_w)
{
    tg_tensor *xl = tg_clone(x), *wl = tg_clone(w);
    tg_set_requires_grad(xl, need_x);
    tg_set_requires_grad(wl, need_w);
    grads r;
    r.y = use_student ? student(xl, wl, eps) : composed(xl, wl, eps);
    tg_tensor *yg = tg_mul(r.y, g);
    tg_tensor *loss = tg_sum(yg, NULL, 0, false);
    int rc;
    EX_CALL_RECORDING(rc = tg_backward(loss));
    cr_assert_eq(rc, 0, "backward through %s failed:\n%s",
                 use_student ? "ex_rms_norm" : "the composed RMSNorm",
                 tg_last_error());
    r.dx = tg_retain(xl->grad);
    r.dw = tg_retain(wl->grad);
    tg_release(loss);
    tg_release(yg);
    tg_release(wl);
    tg_release(xl);
    return r;
}

static void grads_release(grads *r)
{
    tg_release(r->y);
    tg_release(r->dx);
    tg_release(r->dw);
}

TG_TEST(ex09, forward_matches_numpy)
{
    tg_tensor *x = tg_test_load_ref("ex09_x");
    tg_tensor *w = tg_test_load_ref("ex09_w");
    tg_tensor *eps = tg_test_load_ref("ex09_eps");
    tg_tensor *y = student(x, w, tg_item(eps));
    tg_test_check_ref(y, "ex09_y", 1e-12, 1e-14);
    tg_release(eps);
    tg_release(w);
    tg_release(x);
}

TG_TEST(ex09, backward_matches_numpy)
{
    tg_tensor *x = tg_test_load_ref("ex09_x");
    tg_tensor *w = tg_test_load_ref("ex09_w");
    tg_tensor *eps = tg_test_load_ref("ex09_eps");
    tg_tensor *g = tg_test_load_ref("ex09_g");
    grads r = run(true, x, w, g, tg_item(eps), true, true);
    cr_assert(r.dx != NULL, "x requires grad but got no gradient: does "
              "your backward store grad_inputs[0]?");
    cr_assert(r.dw != NULL, "weight requires grad but got no gradient: "
              "does your backward store grad_inputs[1]?");
    tg_test_check_ref(tg_retain(r.dx), "ex09_dx", 1e-10, 1e-12);
    tg_test_check_ref(tg_retain(r.dw), "ex09_dw", 1e-10, 1e-12);
    grads_release(&r);
    tg_release(g);
    tg_release(eps);
    tg_release(w);
    tg_release(x);
}

TG_TEST(ex09, one_node_named_RMSNormBackward)
{
    tg_generator *gen = tg_generator_new(91);
    tg_tensor *x = tg_randn_gen(gen, TG_SHAPE(3, 4), TG_FLOAT64);
    tg_tensor *w = tg_randn_gen(gen, TG_SHAPE(4), TG_FLOAT64);
    tg_set_requires_grad(x, true);
    tg_set_requires_grad(w, true);
    int64_t before = tg_tape_size();
    tg_tensor *y1 = student(x, w, 1e-5);
    int64_t grew = tg_tape_size() - before;
    const char *name = tg_grad_fn_name(y1);
    cr_assert(name != NULL && strcmp(name, "RMSNormBackward") == 0,
              "y's grad_fn is %s; expected RMSNormBackward, the name of "
              "your tg_function (apply it with tg_function_apply)",
              name ? name : "NULL (no node was recorded)");
    cr_assert_eq(grew, 1,
                 "one call of ex_rms_norm added %lld nodes to the tape; "
                 "expected exactly 1 (the forward of a tg_function runs "
                 "without recording, so one node stands for the whole op)",
                 (long long)grew);
    tg_tensor *y2 = student(y1, w, 1e-5); // a second call, on y1
    grew = tg_tape_size() - before;
    cr_assert_eq(grew, 2, "two calls of ex_rms_norm added %lld tape nodes; expected 2",
                 (long long)grew);
    tg_release(y2);
    tg_release(y1);
    tg_release(w);
    tg_release(x);
    tg_generator_free(gen);
}

TG_TEST(ex09, no_node_when_no_input_needs_grad)
{
    tg_generator *gen = tg_generator_new(92);
    tg_tensor *x = tg_randn_gen(gen, TG_SHAPE(3, 4), TG_FLOAT64);
    tg_tensor *w = tg_randn_gen(gen, TG_SHAPE(4), TG_FLOAT64);
    int64_t before = tg_tape_size();
    tg_tensor *y = student(x, w, 1e-5);
    cr_assert(!y->requires_grad && tg_grad_fn_name(y) == NULL,
              "neither x nor weight requires grad, yet the result %s; "
              "tg_function_apply records a node only when an input needs "
              "a gradient, so leave that decision to it",
              y->requires_grad ? "requires grad" : "has a grad_fn");
    cr_assert_eq(tg_tape_size(), before,
                 "neither input requires grad, yet the tape grew by %lld",
                 (long long)(tg_tape_size() - before));
    tg_release(y);
    /* inside no_grad, inputs that require grad record nothing either */
    tg_set_requires_grad(x, true);
    tg_no_grad_begin();
    y = student(x, w, 1e-5);
    tg_no_grad_end();
    cr_assert(!y->requires_grad && tg_grad_fn_name(y) == NULL,
              "under tg_no_grad_begin the result must not require grad");
    tg_release(y);
    tg_release(w);
    tg_release(x);
    tg_generator_free(gen);
}

/* tg_gradcheck's f: the student's op with the eps in user. */
static tg_tensor *apply_student(const tg_tensor *const *in, int n, void *user)
{
    (void)n;
    tg_tensor *y;
    EX_CALL_RECORDING(y = ex_rms_norm(in[0], in[1], *(const double *)user));
    return y;
}

static void gradcheck_case(int64_t rows, int64_t c, double scale,
                           double eps, uint64_t seed)
{
    tg_generator *gen = tg_generator_new(seed);
    tg_tensor *r = tg_randn_gen(gen, TG_SHAPE(rows, c), TG_FLOAT64);
    tg_tensor *x = tg_mul_scalar(r, scale);
    tg_tensor *w0 = tg_randn_gen(gen, TG_SHAPE(c), TG_FLOAT64);
    tg_tensor *w = tg_add_scalar(w0, 1.0);
    tg_set_requires_grad(x, true);
    tg_set_requires_grad(w, true);
    tg_tensor *in[2] = {x, w};
    tg_gradcheck_options opts = tg_gradcheck_defaults();
    opts.quiet = true;
    tg_gradcheck_result res;
    int ok = tg_gradcheck(apply_student, &eps, in, 2, &opts, &res);
    cr_assert_neq(ok, -1, "with eps = %g: the op or its backward failed:\n%s",
                  eps, tg_last_error());
    cr_assert_eq(ok, 1, "gradcheck failed with eps = %g on x (%lld, %lld) "
                 "(input 0 is x, input 1 is weight):\n%s", eps,
                 (long long)rows, (long long)c, res.message);
    tg_release(w);
    tg_release(w0);
    tg_release(x);
    tg_release(r);
    tg_generator_free(gen);
}

TG_TEST(ex09, gradcheck)
{
    gradcheck_case(3, 5, 1.0, 1e-5, 93);
}

/* x of about 0.1 with eps 0.5: eps dominates mean(x^2), so a backward
 * that leaves eps out (recomputing rms without it) is far off. */
TG_TEST(ex09, gradcheck_large_eps)
{
    gradcheck_case(4, 3, 0.1, 0.5, 94);
}

TG_TEST(ex09, row_of_zeros)
{
    /* row 1 is zero: mean(x^2) = 0, rms = sqrt(eps) = 0.1, y = 0, and
     * dL/dx = g * w / sqrt(eps) there (the other term has a factor x) */
    double eps = 0.01;
    tg_tensor *x = tg_from_array(
        (double[]){0.5, -1.0, 2.0, 0.25, 0, 0, 0, 0, -3.0, 1.0, 0.5, 2.0},
        TG_SHAPE(3, 4), TG_FLOAT64);
    tg_tensor *w = tg_from_array((double[]){1.5, -0.5, 2.0, 1.0}, TG_SHAPE(4),
                                 TG_FLOAT64);
    tg_tensor *g = tg_from_array(
        (double[]){1, 2, 3, 4, 0.5, -1.0, 2.0, -0.25, -1, 1, -1, 1},
        TG_SHAPE(3, 4), TG_FLOAT64);
    grads r = run(true, x, w, g, eps, true, true);
    cr_assert(r.dx != NULL && r.dw != NULL,
              "x and weight require grad; each needs a gradient");
    double y[12], dx[12];
    tg_to_f64_array(r.y, y);
    tg_to_f64_array(r.dx, dx);
    const double gw[4] = {0.5 * 1.5, -1.0 * -0.5, 2.0 * 2.0, -0.25 * 1.0};
    for (int j = 0; j < 4; j++) {
        cr_assert(y[4 + j] == 0.0,
                  "a row of zeros must give y = 0, got y[1, %d] = %g "
                  "(rms = sqrt(0 + eps) = 0.1, not 0)", j, y[4 + j]);
        double want = gw[j] / sqrt(eps);
        cr_assert(fabs(dx[4 + j] - want) <= 1e-12 * fabs(want),
                  "row of zeros: dL/dx[1, %d] = %.17g; expected "
                  "g * w / sqrt(eps) = %.17g", j, dx[4 + j], want);
    }
    /* the other rows, and dw, against the composed op */
    grads ref = run(false, x, w, g, eps, true, true);
    ex_check_close(r.y, ref.y, "y", 1e-12, 1e-14);
    ex_check_close(r.dx, ref.dx, "dL/dx", 1e-10, 1e-12);
    ex_check_close(r.dw, ref.dw, "dL/dweight", 1e-10, 1e-12);
    grads_release(&ref);
    grads_release(&r);
    tg_release(g);
    tg_release(w);
    tg_release(x);
}

/* The student's y, dx and dw against the composed op's, for random x
 * (rows, c), with only the inputs need_x and need_w requiring grad. */
static void check_against_composed(int64_t rows, int64_t c, double eps,
                                   bool need_x, bool need_w, uint64_t seed)
{
    tg_generator *gen = tg_generator_new(seed);
    tg_tensor *x = tg_randn_gen(gen, TG_SHAPE(rows, c), TG_FLOAT64);
    tg_tensor *w = tg_randn_gen(gen, TG_SHAPE(c), TG_FLOAT64);
    tg_tensor *g = tg_randn_gen(gen, TG_SHAPE(rows, c), TG_FLOAT64);
    grads s = run(true, x, w, g, eps, need_x, need_w);
    grads ref = run(false, x, w, g, eps, need_x, need_w);
    ex_check_close(s.y, ref.y, "y", 1e-12, 1e-14);
    if (need_x) {
        cr_assert(s.dx != NULL, "x (%lld, %lld) requires grad but got none",
                  (long long)rows, (long long)c);
        ex_check_close(s.dx, ref.dx, "dL/dx", 1e-10, 1e-12);
    }
    if (need_w) {
        cr_assert(s.dw != NULL, "weight (%lld,) requires grad but got none",
                  (long long)c);
        ex_check_close(s.dw, ref.dw, "dL/dweight", 1e-10, 1e-12);
    }
    grads_release(&ref);
    grads_release(&s);
    tg_release(g);
    tg_release(w);
    tg_release(x);
    tg_generator_free(gen);
}

TG_TEST(ex09, one_row)
{
    check_against_composed(1, 6, 1e-5, true, true, 95);
}

/* C = 1: y = x / sqrt(x^2 + eps) * w, nearly sign(x) * w */
TG_TEST(ex09, one_column)
{
    check_against_composed(4, 1, 0.1, true, true, 96);
}

TG_TEST(ex09, wide_rows)
{
    check_against_composed(2, 300, 1e-3, true, true, 97);
}

TG_TEST(ex09, only_x_needs_grad)
{
    check_against_composed(3, 4, 1e-2, true, false, 98);
}

TG_TEST(ex09, only_weight_needs_grad)
{
    check_against_composed(3, 4, 1e-2, false, true, 99);
}

TG_TEST(ex09, leaves_inputs_alone)
{
    tg_tensor *x = tg_test_load_ref("ex09_x");
    tg_tensor *w = tg_test_load_ref("ex09_w");
    tg_tensor *x0 = tg_test_load_ref("ex09_x");
    tg_tensor *w0 = tg_test_load_ref("ex09_w");
    tg_tensor *y = student(x, w, 1e-3);
    cr_assert(y != x && y != w, "y is %s itself: return a new tensor, "
              "not an input", y == x ? "x" : "weight");
    ex_check_close(x, x0, "x after the call (it must not change)", 0, 0);
    ex_check_close(w, w0, "weight after the call (it must not change)", 0,
                   0);
    tg_release(y);
    tg_release(w0);
    tg_release(x0);
    tg_release(w);
    tg_release(x);
}
