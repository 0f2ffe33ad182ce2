/*
 * tests/exercises/grade_ex02_sum_to_shape.c - grades exercise 02,
 * ex_sum_to_shape (docs/exercises/02-sum-to-shape.md):
 *   - against NumPy, which adds up the gradient of every read of every
 *     broadcast element one by one (scripts/reference/gen_ex02.py), on
 *     ordinary shapes, shape (), a shape equal to grad's, size-0 dims and
 *     float32;
 *   - with tg_gradcheck, the student's function as the backward of a
 *     tg_function whose forward is a broadcasting tg_add;
 *   - against tapegrad's own backward of tg_broadcast_to, up to 8 dims.
 */
#define EX_STATEMENT "02-sum-to-shape.md"
#include "grade.h"

#include <stdio.h>

/* Calls the student's function. Returning grad itself is allowed when
 * nothing is summed, but only as a new reference: without one, the
 * caller's release would free grad under its owner's feet, so that is
 * failed here, before it can crash. New reference, or NULL. */
static tg_tensor *call_student(const tg_tensor *grad, const int64_t *shape,
                               int ndim)
{
    int64_t refs = grad->refcount;
    tg_tensor *r;
    EX_CALL(r = ex_sum_to_shape(grad, shape, ndim));
    if (r == grad && grad->refcount == refs)
        cr_assert_fail("ex_sum_to_shape returned grad itself without a new "
                       "reference;\n    the caller releases the result, "
                       "so return a copy (tg_clone) or tg_retain it.");
    return r;
}

/* Calls the student's function and checks what every result must be: a
 * tensor of the shape asked for, with grad's dtype. New reference. */
static tg_tensor *student_sum(const tg_tensor *grad, const int64_t *shape,
                              int ndim)
{
    tg_tensor *r = call_student(grad, shape, ndim);
    ex_require(r, "ex_sum_to_shape");
    char gs[TG_SHAPE_STR_MAX], want[TG_SHAPE_STR_MAX], got[TG_SHAPE_STR_MAX];
    tg_shape_str(grad, gs);
    ex_shape_text(shape, ndim, want, sizeof want);
    bool same = r->ndim == ndim;
    for (int d = 0; same && d < ndim; d++)
        same = r->shape[d] == shape[d];
    cr_assert(same, "ex_sum_to_shape(grad of shape %s, shape %s) returned "
              "shape %s;\n    the result must have the shape asked for.",
              gs, want, tg_shape_str(r, got));
    cr_assert(r->dtype == grad->dtype,
              "ex_sum_to_shape(grad of shape %s, shape %s) returned %s for "
              "a %s grad;\n    keep grad's dtype.", gs, want,
              tg_dtype_name(r->dtype), tg_dtype_name(grad->dtype));
    return r;
}

/* One NumPy case: ex02_<name>_grad summed to the shape of ex02_<name>_sum,
 * compared with it. The sums are of a handful of numbers, so float64
 * agrees to rounding; float32 to its own (sums accumulate in double in
 * both, then round once). */
static void check_numpy_case(const char *name, double rtol, double atol)
{
    char gname[64], sname[64];
    snprintf(gname, sizeof gname, "ex02_%s_grad", name);
    snprintf(sname, sizeof sname, "ex02_%s_sum", name);
    tg_tensor *grad = tg_test_load_ref(gname);
    tg_tensor *expected = tg_test_load_ref(sname);
    tg_tensor *r = student_sum(grad, expected->shape, expected->ndim);
    char report[1024], gs[TG_SHAPE_STR_MAX], es[TG_SHAPE_STR_MAX];
    bool close = tg_test_close(r, expected, rtol, atol, true, report,
                               sizeof report);
    tg_shape_str(grad, gs);
    tg_shape_str(expected, es);
    tg_release(r);
    tg_release(expected);
    tg_release(grad);
    cr_assert(close, "ex_sum_to_shape(grad of shape %s, shape %s) differs "
              "from NumPy (%s.npy):\n    %s", gs, es, sname, report);
}

TG_TEST(ex02, matches_numpy)
{
    static const char *const cases[] = {
        "rows", "rows_keepdim", "column", "two_dims", "middle",
        "grad_has_ones", "deep", "ones"};
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++)
        check_numpy_case(cases[i], 1e-12, 1e-14);
}

TG_TEST(ex02, scalar_shape)
{
    check_numpy_case("scalar", 1e-12, 1e-14);
}

TG_TEST(ex02, size_zero_dims)
{
    check_numpy_case("empty_rows", 0, 0);   // no element: a gradient of 0
    check_numpy_case("empty_to_one", 0, 0);
}

TG_TEST(ex02, keeps_float32)
{
    check_numpy_case("float32_rows", 1e-6, 1e-6);
    check_numpy_case("float32_column", 1e-6, 1e-6);
}

/* Nothing to sum: the result equals grad, and is either a copy or grad
 * itself with one more reference (the caller releases what it gets). */
TG_TEST(ex02, same_shape)
{
    tg_tensor *grad = tg_test_load_ref("ex02_same_grad");
    tg_tensor *grad0 = tg_test_load_ref("ex02_same_grad");
    tg_tensor *r = student_sum(grad, grad->shape, grad->ndim);
    tg_assert_close(r, grad0, 0, 0);
    tg_release(r);
    tg_assert_close(grad, grad0, 0, 0);
    tg_release(grad0);
    tg_release(grad);
}

TG_TEST(ex02, leaves_grad_alone)
{
    tg_tensor *grad = tg_test_load_ref("ex02_two_dims_grad");
    tg_tensor *grad0 = tg_test_load_ref("ex02_two_dims_grad");
    tg_tensor *r = student_sum(grad, TG_SHAPE(3, 1));
    cr_assert(r != grad, "return a new tensor, not grad");
    tg_release(r);
    char report[1024];
    cr_assert(tg_test_close(grad, grad0, 0, 0, true, report, sizeof report),
              "ex_sum_to_shape changed grad:\n%s", report);
    tg_release(grad0);
    tg_release(grad);
}

/* A tg_function: forward is the library's broadcasting tg_add, backward
 * the student's function applied to the output gradient once per input,
 * so tg_gradcheck tests the student's reduction alone. The inputs' shapes
 * are kept in the node's data. */
typedef struct add_shapes {
    int ndim[2];
    int64_t shape[2][TG_MAX_DIMS];
} add_shapes;

static tg_tensor *add_forward(tg_ctx *ctx, const tg_tensor *const *in,
                              int n, const void *args)
{
    (void)n, (void)args;
    add_shapes *s = tg_ctx_data(ctx);
    for (int i = 0; i < 2; i++) {
        s->ndim[i] = in[i]->ndim;
        for (int d = 0; d < in[i]->ndim; d++)
            s->shape[i][d] = in[i]->shape[d];
    }
    return tg_add(in[0], in[1]);
}

static int add_backward(tg_ctx *ctx, const tg_tensor *g,
                        tg_tensor **grad_inputs)
{
    const add_shapes *s = tg_ctx_data(ctx);
    for (int i = 0; i < 2; i++) {
        if (!tg_ctx_needs_grad(ctx, i))
            continue;
        grad_inputs[i] = call_student(g, s->shape[i], s->ndim[i]);
        if (!grad_inputs[i])
            return -1;
    }
    return 0;
}

static const tg_function student_add = {
    "StudentAddBackward", add_forward, add_backward, sizeof(add_shapes)};

static tg_tensor *apply_student_add(const tg_tensor *const *in, int n, void *user)
{
    (void)n, (void)user;
    return tg_function_apply(&student_add, (const tg_tensor *const *)in, 2,
                             NULL);
}

static void gradcheck_add(const int64_t *sa, int na, const int64_t *sb,
                          int nb, uint64_t seed)
{
    tg_generator *gen = tg_generator_new(seed);
    tg_tensor *in[2] = {tg_randn_gen(gen, sa, na, TG_FLOAT64),
                        tg_randn_gen(gen, sb, nb, TG_FLOAT64)};
    tg_set_requires_grad(in[0], true);
    tg_set_requires_grad(in[1], true);
    tg_gradcheck_options opts = tg_gradcheck_defaults();
    opts.quiet = true;
    tg_gradcheck_result r;
    int ok = tg_gradcheck(apply_student_add, NULL, in, 2, &opts, &r);
    char s0[96], s1[96];
    ex_shape_text(sa, na, s0, sizeof s0);
    ex_shape_text(sb, nb, s1, sizeof s1);
    cr_assert_neq(ok, -1, "the backward of tg_add(%s, %s) failed: %s", s0,
                  s1, tg_last_error());
    cr_assert_eq(ok, 1, "gradcheck of tg_add(%s, %s) failed:\n%s", s0, s1,
                 r.message);
    tg_release(in[1]);
    tg_release(in[0]);
    tg_generator_free(gen);
}

TG_TEST(ex02, gradcheck)
{
    gradcheck_add(TG_SHAPE(3, 1, 4), TG_SHAPE(2, 1), 21);  // both broadcast
    gradcheck_add(TG_SHAPE(1, 3), TG_SHAPE(4, 1), 22);     // an outer sum
    gradcheck_add(NULL, 0, TG_SHAPE(2, 3), 23);            // a 0-d input
    gradcheck_add(TG_SHAPE(2, 3), TG_SHAPE(2, 3), 24);     // no broadcasting
}

/* dL/dx from tapegrad's own backward of tg_broadcast_to: the backward of
 * sum(broadcast_to(x, grad's shape) * grad). */
static void check_against_library(const int64_t *gshape, int gndim,
                                  const int64_t *shape, int ndim,
                                  uint64_t seed)
{
    tg_generator *gen = tg_generator_new(seed);
    tg_tensor *x = tg_randn_gen(gen, shape, ndim, TG_FLOAT64);
    tg_tensor *grad = tg_randn_gen(gen, gshape, gndim, TG_FLOAT64);
    tg_set_requires_grad(x, true);
    tg_tensor *y = tg_broadcast_to(x, gshape, gndim);
    tg_tensor *yg = tg_mul(y, grad);
    tg_tensor *loss = tg_sum(yg, NULL, 0, false);
    cr_assert_eq(tg_backward(loss), 0, "%s", tg_last_error());
    tg_tensor *r = student_sum(grad, shape, ndim);
    char report[1024], gs[TG_SHAPE_STR_MAX], xs[TG_SHAPE_STR_MAX];
    cr_assert(tg_test_close(r, x->grad, 1e-12, 1e-13, true, report,
                            sizeof report),
              "ex_sum_to_shape(grad of shape %s, shape %s) differs from "
              "the gradient tapegrad's tg_broadcast_to gives:\n    %s",
              tg_shape_str(grad, gs), tg_shape_str(x, xs), report);
    tg_release(r);
    tg_release(loss);
    tg_release(yg);
    tg_release(y);
    tg_release(grad);
    tg_release(x);
    tg_generator_free(gen);
}

TG_TEST(ex02, against_library)
{
    check_against_library(TG_SHAPE(2, 5, 4, 3), TG_SHAPE(5, 1, 3), 31);
    check_against_library(TG_SHAPE(7), TG_SHAPE(1), 32);
    check_against_library(TG_SHAPE(3, 4, 5), TG_SHAPE(3, 1, 1), 33);
    check_against_library(TG_SHAPE(1, 6), TG_SHAPE(1, 1), 34);
    check_against_library(TG_SHAPE(2, 3, 2, 3, 2, 3, 2, 3),
                          TG_SHAPE(1, 3, 1, 3, 1, 1, 2, 1), 35);
    check_against_library(TG_SHAPE(2, 3, 2, 3, 2, 3, 2, 3), NULL, 0, 36);
}
