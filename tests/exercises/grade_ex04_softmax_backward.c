/*
 * tests/exercises/grade_ex04_softmax_backward.c - grades exercise 04,
 * ex_softmax_backward (docs/exercises/04-softmax-backward.md):
 *   - against NumPy's dL/dx computed through the full Jacobian;
 *   - with tg_gradcheck, the student's backward inside a tg_function
 *     whose forward is tg_softmax;
 *   - against tapegrad's own softmax backward on a row of one element
 *     (whose gradient is 0) and on a wide row.
 */
#define EX_STATEMENT "04-softmax-backward.md"
#include "grade.h"

TG_TEST(ex04, matches_numpy)
{
    tg_tensor *y = tg_test_load_ref("ex04_y");
    tg_tensor *g = tg_test_load_ref("ex04_g");
    tg_tensor *dx;
    EX_CALL(dx = ex_softmax_backward(y, g));
    ex_require(dx, "ex_softmax_backward");
    tg_test_check_ref(dx, "ex04_dx", 1e-12, 1e-14);
    tg_release(g);
    tg_release(y);
}

/* A tg_function: forward is the library's softmax, backward the
 * student's, so tg_gradcheck tests the student's backward alone. */
static tg_tensor *softmax_forward(tg_ctx *ctx, const tg_tensor *const *in,
                                  int n, const void *args)
{
    (void)n, (void)args;
    tg_tensor *y = tg_softmax(in[0], -1);
    tg_ctx_save(ctx, y);
    return y;
}

static int softmax_backward(tg_ctx *ctx, const tg_tensor *g,
                            tg_tensor **grad_inputs)
{
    const tg_tensor *y = tg_ctx_saved(ctx, 0);
    EX_CALL(grad_inputs[0] = ex_softmax_backward(y, g));
    return grad_inputs[0] ? 0 : -1;
}

static const tg_function student_softmax = {
    "StudentSoftmaxBackward", softmax_forward, softmax_backward, 0};

static tg_tensor *apply_student_softmax(const tg_tensor *const *in, int n,
                                        void *user)
{
    (void)n, (void)user;
    return tg_function_apply(&student_softmax, (const tg_tensor *const *)in,
                             1, NULL);
}

TG_TEST(ex04, gradcheck)
{
    tg_generator *gen = tg_generator_new(4);
    tg_tensor *x = tg_randn_gen(gen, TG_SHAPE(3, 4), TG_FLOAT64);
    tg_set_requires_grad(x, true);
    tg_gradcheck_options opts = tg_gradcheck_defaults();
    opts.quiet = true;
    tg_gradcheck_result r;
    int ok = tg_gradcheck(apply_student_softmax, NULL, &x, 1, &opts, &r);
    cr_assert_neq(ok, -1, "dx of softmax(x), x (3, 4): the backward "
                  "failed: %s", tg_last_error());
    cr_assert_eq(ok, 1, "dx of softmax(x), x (3, 4), differs from the "
                 "finite differences (gradcheck):\n%s", r.message);
    tg_release(x);
    tg_generator_free(gen);
}

/* dL/dx from tapegrad's own softmax backward: backward of sum(y * g). */
static tg_tensor *library_dx(tg_tensor *x, const tg_tensor *g)
{
    tg_tensor *y = tg_softmax(x, -1);
    tg_tensor *yg = tg_mul(y, g);
    tg_tensor *loss = tg_sum(yg, NULL, 0, false);
    cr_assert_eq(tg_backward(loss), 0, "%s", tg_last_error());
    tg_tensor *dx = tg_retain(x->grad);
    tg_release(loss);
    tg_release(yg);
    tg_release(y);
    return dx;
}

static void check_against_library(int64_t rows, int64_t n, uint64_t seed)
{
    tg_generator *gen = tg_generator_new(seed);
    tg_tensor *x = tg_randn_gen(gen, TG_SHAPE(rows, n), TG_FLOAT64);
    tg_tensor *g = tg_randn_gen(gen, TG_SHAPE(rows, n), TG_FLOAT64);
    tg_set_requires_grad(x, true);
    tg_tensor *expected = library_dx(x, g);
    tg_tensor *y = tg_softmax(x, -1);
    tg_tensor *dx;
    EX_CALL(dx = ex_softmax_backward(y, g));
    ex_require(dx, "ex_softmax_backward");
    tg_assert_close(dx, expected, 1e-10, 1e-13);
    tg_release(dx);
    tg_release(y);
    tg_release(expected);
    tg_release(g);
    tg_release(x);
    tg_generator_free(gen);
}

TG_TEST(ex04, one_element_rows_get_zero)
{
    check_against_library(6, 1, 41);
}

TG_TEST(ex04, wide_rows)
{
    check_against_library(2, 300, 42);
}

TG_TEST(ex04, leaves_inputs_alone)
{
    tg_tensor *y = tg_test_load_ref("ex04_y");
    tg_tensor *g = tg_test_load_ref("ex04_g");
    tg_tensor *y0 = tg_test_load_ref("ex04_y");
    tg_tensor *g0 = tg_test_load_ref("ex04_g");
    tg_tensor *dx;
    EX_CALL(dx = ex_softmax_backward(y, g));
    ex_require(dx, "ex_softmax_backward");
    cr_assert(dx != y && dx != g, "dx is %s itself: return a new tensor, "
              "not an input", dx == y ? "y" : "g");
    tg_assert_close(y, y0, 0, 0);
    tg_assert_close(g, g0, 0, 0);
    tg_release(dx);
    tg_release(g0);
    tg_release(y0);
    tg_release(g);
    tg_release(y);
}
