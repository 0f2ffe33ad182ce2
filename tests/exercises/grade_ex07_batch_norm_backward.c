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

typedef struct bn_grads {
    tg_tensor *dx, *dw, *db;
} bn_grads;

static void bn_grads_release(bn_grads *r)
{
    tg_release(r->db);
    tg_release(r->dw);
    tg_release(r->dx);
}

/* Calls the student's backward; true when it returned 0 and three
 * results. */
static bool call_student(const tg_tensor *dy, const tg_tensor *x,
                         const tg_tensor *w, const tg_tensor *mean,
                         const tg_tensor *rstd, bn_grads *r)
{
    int rc = -1;
    *r = (bn_grads){NULL, NULL, NULL};
    EX_CALL(rc = ex_batch_norm_backward(dy, x, w, mean, rstd, &r->dx,
                                        &r->dw, &r->db));
    return rc == 0 && r->dx && r->dw && r->db;
}

/* call_student, failing the test with a message when it did not work or
 * a result has the wrong shape. */
static bn_grads student_backward(const tg_tensor *dy, const tg_tensor *x,
                                 const tg_tensor *w, const tg_tensor *mean,
                                 const tg_tensor *rstd)
{
    bn_grads r;
    bool ok = call_student(dy, x, w, mean, rstd, &r);
    cr_assert(ok,
              "ex_batch_norm_backward returned -1 or left a result NULL "
              "(dx %s, dweight %s, dbias %s); the last error was:\n%s",
              r.dx ? "set" : "NULL", r.dw ? "set" : "NULL",
              r.db ? "set" : "NULL",
              tg_last_error()[0] ? tg_last_error() : "(none reported)");
    ex_check_shape(r.dx, "*dx", x->shape, 2, SHAPE_HINT);
    ex_check_shape(r.dw, "*dweight", &x->shape[1], 1, SHAPE_HINT);
    ex_check_shape(r.db, "*dbias", &x->shape[1], 1, SHAPE_HINT);
    return r;
}

TG_TEST(ex07, matches_numpy)
{
    tg_tensor *x = tg_test_load_ref("ex07_x");
    tg_tensor *w = tg_test_load_ref("ex07_w");
    tg_tensor *dy = tg_test_load_ref("ex07_dy");
    tg_tensor *mean = tg_test_load_ref("ex07_mean");
    tg_tensor *rstd = tg_test_load_ref("ex07_rstd");
    bn_grads r = student_backward(dy, x, w, mean, rstd);
    tg_tensor *lecture = tg_test_load_ref("ex07_dx_lecture");
    char report[1024];
    cr_assert(!tg_test_close(r.dx, lecture, 1e-10, 1e-12, false, report,
                             sizeof report),
              "dx has the factor N/(N-1) of makemore part 4's formula. The "
              "lecture's forward divided the variance by N - 1 (unbiased); "
              "this one divides by N (biased, as PyTorch), and then the "
              "xhat term has no such factor.");
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
    bn_grads r;
    if (!call_student(g, tg_ctx_saved(ctx, 0), tg_ctx_saved(ctx, 1),
                      tg_ctx_saved(ctx, 2), tg_ctx_saved(ctx, 3), &r)) {
        bn_grads_release(&r);
        return -1;
    }
    tg_tensor *grads[3] = {r.dx, r.dw, r.db};
    for (int i = 0; i < 3; i++) {
        if (tg_ctx_needs_grad(ctx, i))
            grad_inputs[i] = grads[i];
        else
            tg_release(grads[i]);
    }
    return 0;
}

static const tg_function student_bn = {"StudentBatchNormBackward",
                                       bn_forward, bn_backward, 0};

static tg_tensor *apply_student_bn(const tg_tensor *const *in, int n, void *user)
{
    (void)n, (void)user;
    return tg_function_apply(&student_bn, (const tg_tensor *const *)in, 3,
                             NULL);
}

/* f returns y itself, so gradcheck compares the full Jacobian: a loss of
 * sum(y) has a zero gradient for x by construction and would pass any
 * backward that gets that right. */
TG_TEST(ex07, gradcheck)
{
    tg_generator *gen = tg_generator_new(71);
    tg_tensor *in[3] = {
        tg_randn_gen(gen, TG_SHAPE(5, 3), TG_FLOAT64),
        tg_randn_gen(gen, TG_SHAPE(3), TG_FLOAT64),
        tg_randn_gen(gen, TG_SHAPE(3), TG_FLOAT64),
    };
    for (int i = 0; i < 3; i++)
        tg_set_requires_grad(in[i], true);
    tg_gradcheck_options opts = tg_gradcheck_defaults();
    opts.quiet = true;
    tg_gradcheck_result r;
    int ok = tg_gradcheck(apply_student_bn, NULL, in, 3, &opts, &r);
    cr_assert_neq(ok, -1, "the backward failed: %s", tg_last_error());
    cr_assert_eq(ok, 1,
                 "gradcheck failed (input 0 is x, 1 weight, 2 bias):\n%s",
                 r.message);
    for (int i = 0; i < 3; i++)
        tg_release(in[i]);
    tg_generator_free(gen);
}

/* The student's gradients against those tapegrad's tg_batch_norm_ex
 * gives in training mode for L = sum(y * dy). The student gets detached
 * copies, so nothing of theirs is recorded. With constant_channel, column
 * 0 of x is all 3.0. note is added to the message about dx. */
static void check_against_library(int64_t rows, int64_t cols, uint64_t seed,
                                  bool constant_channel, const char *note)
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
    bn_grads r = student_backward(dy, xd, wd, mean, rstd);
    char what[512];
    snprintf(what, sizeof what, "dx against tg_batch_norm_ex's%s", note);
    /* two float64 evaluations of one formula; a constant channel has
     * rstd = 1 / sqrt(eps) = 316, which scales the rounding */
    ex_check_close(r.dx, x->grad, what, 1e-9, 1e-11);
    ex_check_close(r.dw, w->grad, "dweight against tg_batch_norm_ex's", 1e-9,
                1e-11);
    ex_check_close(r.db, b->grad, "dbias against tg_batch_norm_ex's", 1e-9,
                1e-11);
    bn_grads_release(&r);
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
    check_against_library(2, 1, 72, false, batch_of_two);
}

TG_TEST(ex07, batch_of_two)
{
    check_against_library(2, 3, 73, false, batch_of_two);
}

TG_TEST(ex07, larger_batch)
{
    check_against_library(64, 2, 74, false, "");
}

/* A channel of variance 0: xhat = 0 there, and dx = weight * rstd *
 * (dy - mean(dy)) with rstd = 1 / sqrt(eps) (docs/normalization.md
 * section 5). */
TG_TEST(ex07, constant_channel)
{
    check_against_library(4, 3, 75, true, "");
}

TG_TEST(ex07, leaves_inputs_alone)
{
    const char *names[5] = {"ex07_dy", "ex07_x", "ex07_w", "ex07_mean",
                            "ex07_rstd"};
    tg_tensor *in[5], *before[5];
    for (int i = 0; i < 5; i++) {
        in[i] = tg_test_load_ref(names[i]);
        before[i] = tg_test_load_ref(names[i]);
    }
    bn_grads r = student_backward(in[0], in[1], in[2], in[3], in[4]);
    for (int i = 0; i < 5; i++) {
        cr_assert(r.dx != in[i] && r.dw != in[i] && r.db != in[i],
                  "return new tensors, not an argument");
        char what[64];
        snprintf(what, sizeof what, "%s was changed", names[i] + 5);
        ex_check_close(in[i], before[i], what, 0, 0);
    }
    bn_grads_release(&r);
    for (int i = 0; i < 5; i++) {
        tg_release(before[i]);
        tg_release(in[i]);
    }
}
