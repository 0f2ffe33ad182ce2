/*
 * tests/exercises/grade_ex07_batch_norm_backward.c - grades exercise 07,
 * ex_batch_norm_backward (docs/exercises/07-batch-norm-backward.md):
 *   - against NumPy's gradients, computed by complex-step differentiation
 *     of the forward, not by the closed form
 *     (scripts/reference/gen_ex07.py), naming makemore part 4's n/(n-1)
 *     factor when that is the mistake;
 *   - with tg_gradcheck on the full Jacobian of y with respect to x,
 *     weight and bias: the student's backward inside a tg_function whose
 *     forward is tg_batch_norm_ex in training mode;
 *   - against tapegrad's own tg_batch_norm_ex training backward on the
 *     smallest batch (N = 2) with one channel and with three, a larger
 *     batch and a constant channel.
 * Every result must be float64 with the contract's shape.
 */
#define EX_STATEMENT "07-batch-norm-backward.md"
#include "grade.h"

/* Added to a shape mismatch where a 1-D result came back 2-D. */
#define SHAPE_HINT "sum over the batch, dim 0, without keepdim"

#include <stdio.h>

#define EPS 1e-5 // the forwards' eps; the backward sees it only in rstd

static const ex_norm_exercise exercise = {
    ex_batch_norm_backward, "ex_batch_norm_backward", EX_STATEMENT,
    SHAPE_HINT};

/* The diagnosis of the most common mistake, given before any number. */
#define LECTURE_MESSAGE                                                     \
    "dx has the factor N/(N-1) of makemore part 4's formula. The "          \
    "lecture's forward divided the variance by N - 1 (unbiased); this one " \
    "divides by N (biased, as PyTorch), and then the xhat term has no "     \
    "such factor."

/* makemore part 4's dx made from the right one, dx_right: the lecture's
 * formula has N/(N-1) on the xhat term, so it is
 *   dx_right - weight * rstd / (N (N-1)) * xhat * sum(dy * xhat, 0). */
static tg_tensor *lecture_dx(const tg_tensor *dx_right, const tg_tensor *dy,
                             const tg_tensor *x, const tg_tensor *w,
                             const tg_tensor *mean, const tg_tensor *rstd)
{
    const double n = (double)x->shape[0];
    tg_no_grad_begin();
    tg_tensor *xc = tg_sub(x, mean);
    tg_tensor *xhat = tg_mul(xc, rstd);
    tg_tensor *dyx = tg_mul(dy, xhat);
    tg_tensor *s2 = tg_sum(dyx, TG_DIMS(0), false);    // (C,)
    tg_tensor *wr = tg_mul(w, rstd);
    tg_tensor *ws = tg_mul(wr, s2);
    tg_tensor *coef = tg_div_scalar(ws, n * (n - 1)); // (C,)
    tg_tensor *extra = tg_mul(xhat, coef);
    tg_tensor *lecture = tg_sub(dx_right, extra);
    tg_no_grad_end();
    tg_release(extra);
    tg_release(coef);
    tg_release(ws);
    tg_release(wr);
    tg_release(s2);
    tg_release(dyx);
    tg_release(xhat);
    tg_release(xc);
    return ex_require(lecture, "the lecture's dx");
}

/* Fails with LECTURE_MESSAGE when dx is the lecture's rather than
 * dx_right. */
static void check_not_lecture(const tg_tensor *dx, const tg_tensor *dx_right,
                              const tg_tensor *dy, const tg_tensor *x,
                              const tg_tensor *w, const tg_tensor *mean,
                              const tg_tensor *rstd)
{
    tg_tensor *lecture = lecture_dx(dx_right, dy, x, w, mean, rstd);
    char report[1024];
    bool is_lecture = tg_test_close(dx, lecture, 1e-9, 1e-11, false, report,
                                    sizeof report) &&
                      !tg_test_close(dx, dx_right, 1e-9, 1e-11, false,
                                     report, sizeof report);
    tg_release(lecture);
    cr_assert(!is_lecture, LECTURE_MESSAGE);
}

TG_TEST(ex07, matches_numpy)
{
    tg_tensor *x = tg_test_load_ref("ex07_x");
    tg_tensor *w = tg_test_load_ref("ex07_w");
    tg_tensor *dy = tg_test_load_ref("ex07_dy");
    tg_tensor *mean = tg_test_load_ref("ex07_mean");
    tg_tensor *rstd = tg_test_load_ref("ex07_rstd");
    ex_norm_grads r = ex_norm_backward(&exercise, dy, x, w, mean, rstd);
    tg_tensor *lecture = tg_test_load_ref("ex07_dx_lecture");
    char report[1024];
    cr_assert(!tg_test_close(r.dx, lecture, 1e-10, 1e-12, false, report,
                             sizeof report),
              LECTURE_MESSAGE);
    tg_release(lecture);
    /* the complex step is exact to rounding; rstd is up to 4 here */
    tg_test_check_ref(r.dx, "ex07_dx", 1e-10, 1e-12);
    tg_test_check_ref(r.dw, "ex07_dw", 1e-10, 1e-12);
    tg_test_check_ref(r.db, "ex07_db", 1e-10, 1e-12);
    tg_release(rstd);
    tg_release(mean);
    tg_release(dy);
    tg_release(w);
    tg_release(x);
}

/* A tg_function over (x, weight, bias): the forward is tapegrad's
 * BatchNorm in training mode with no running statistics (so that the
 * many forwards of gradcheck change nothing) and saves what the student's
 * backward takes; the backward is the student's. So tg_gradcheck tests
 * the student's backward alone. */
static tg_tensor *bn_forward(tg_ctx *ctx, const tg_tensor *const *in, int n,
                             const void *args)
{
    (void)n, (void)args;
    tg_batch_norm_options o = tg_batch_norm_defaults(); // training, biased
    o.eps = EPS;
    tg_tensor *mean = NULL, *rstd = NULL; // (C,)
    tg_tensor *y = tg_batch_norm_ex(in[0], NULL, NULL, in[1], in[2], &o,
                                    &mean, &rstd);
    tg_ctx_save(ctx, in[0]);
    tg_ctx_save(ctx, in[1]);
    tg_ctx_save(ctx, mean);
    tg_ctx_save(ctx, rstd);
    tg_release(rstd);
    tg_release(mean);
    return y;
}

static int bn_backward(tg_ctx *ctx, const tg_tensor *g,
                       tg_tensor **grad_inputs)
{
    return ex_norm_function_backward(&exercise, ctx, g, grad_inputs);
}

static const tg_function student_bn = {"StudentBatchNormBackward",
                                       bn_forward, bn_backward, 0};

static tg_tensor *apply_student_bn(const tg_tensor *const *in, int n, void *user)
{
    (void)n, (void)user;
    return tg_function_apply(&student_bn, (const tg_tensor *const *)in, 3,
                             NULL);
}

static void check_against_library(int64_t rows, int64_t cols, uint64_t seed,
                                  bool constant_channel, bool lecture_only,
                                  const char *note);

/* The lecture's factor is looked for first, on the same shape, so that a
 * student who made that mistake reads its name, not a Jacobian entry. */
TG_TEST(ex07, gradcheck)
{
    check_against_library(5, 3, 71, false, true, "");
    ex_norm_gradcheck(&exercise, apply_student_bn, 5, 3, 71);
}

/* The student's gradients against those tapegrad's tg_batch_norm_ex
 * gives in training mode for L = sum(y * dy), after the diagnosis of the
 * lecture's factor (alone when lecture_only). The student gets detached
 * copies, so nothing of theirs is recorded. With constant_channel, column
 * 0 of x is all 3.0. note is added to the message about dx. */
static void check_against_library(int64_t rows, int64_t cols, uint64_t seed,
                                  bool constant_channel, bool lecture_only,
                                  const char *note)
{
    tg_generator *gen = tg_generator_new(seed);
    tg_tensor *x = tg_randn_gen(gen, TG_SHAPE(rows, cols), TG_FLOAT64);
    tg_tensor *w = tg_randn_gen(gen, TG_SHAPE(cols), TG_FLOAT64);
    tg_tensor *b = tg_randn_gen(gen, TG_SHAPE(cols), TG_FLOAT64);
    tg_tensor *dy = tg_randn_gen(gen, TG_SHAPE(rows, cols), TG_FLOAT64);
    if (constant_channel) {
        tg_tensor *column = tg_select(x, 1, 0);
        tg_fill_(column, 3.0);
        tg_release(column);
    }
    tg_set_requires_grad(x, true);
    tg_set_requires_grad(w, true);
    tg_set_requires_grad(b, true);
    tg_batch_norm_options o = tg_batch_norm_defaults();
    o.eps = EPS;
    tg_tensor *mean, *rstd;
    tg_tensor *y = tg_batch_norm_ex(x, NULL, NULL, w, b, &o, &mean, &rstd);
    tg_tensor *yd = tg_mul(y, dy);
    tg_tensor *loss = tg_sum(yd, NULL, 0, false);
    cr_assert_eq(tg_backward(loss), 0, "%s", tg_last_error());
    tg_tensor *xd = tg_detach(x), *wd = tg_detach(w);
    ex_norm_grads r = ex_norm_backward(&exercise, dy, xd, wd, mean, rstd);
    check_not_lecture(r.dx, x->grad, dy, xd, wd, mean, rstd);
    if (!lecture_only) {
        char what[512];
        snprintf(what, sizeof what, "dx against tg_batch_norm_ex's%s", note);
        /* two float64 evaluations of one formula; a constant channel has
         * rstd = 1 / sqrt(eps) = 316, which scales the rounding */
        ex_check_close(r.dx, x->grad, what, 1e-9, 1e-11);
        ex_check_close(r.dw, w->grad, "dweight against tg_batch_norm_ex's",
                       1e-9, 1e-11);
        ex_check_close(r.db, b->grad, "dbias against tg_batch_norm_ex's",
                       1e-9, 1e-11);
    }
    ex_norm_grads_release(&r);
    tg_release(wd);
    tg_release(xd);
    tg_release(loss);
    tg_release(yd);
    tg_release(rstd);
    tg_release(mean);
    tg_release(y);
    tg_release(dy);
    tg_release(b);
    tg_release(w);
    tg_release(x);
    tg_generator_free(gen);
}

/* N = 2: each channel's xhat is (-a, a) with a = sqrt(var / (var + eps)),
 * nearly 1 whatever x is, so y hardly depends on x and dx is of the
 * order of eps / var: close to 0. The lecture's n/(n-1) = 2 makes it of
 * the order of dy. */
static const char *const batch_of_two =
    " (with N = 2, xhat is nearly (-1, 1) whatever x is, so y hardly "
    "depends on x and dx must be close to 0)";

TG_TEST(ex07, batch_of_two_one_channel)
{
    check_against_library(2, 1, 72, false, false, batch_of_two);
}

TG_TEST(ex07, batch_of_two)
{
    check_against_library(2, 3, 73, false, false, batch_of_two);
}

TG_TEST(ex07, larger_batch)
{
    check_against_library(64, 2, 74, false, false, "");
}

/* A channel of variance 0: xhat = 0 there, and dx = weight * rstd *
 * (dy - mean(dy)) with rstd = 1 / sqrt(eps) (docs/normalization.md
 * section 5). */
TG_TEST(ex07, constant_channel)
{
    check_against_library(4, 3, 75, true, false, "");
}

TG_TEST(ex07, leaves_inputs_alone)
{
    ex_norm_leaves_inputs_alone(&exercise, "ex07");
}
