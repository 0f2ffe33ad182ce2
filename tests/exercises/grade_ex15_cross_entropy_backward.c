/*
 * tests/exercises/grade_ex15_cross_entropy_backward.c - grades exercise
 * 15, ex_cross_entropy_backward
 * (docs/exercises/15-cross-entropy-backward.md): makemore part 4's
 * exercise 2, dL/dlogits of the mean cross-entropy in one expression.
 * The reference is the tape: tg_cross_entropy's backward (log_softmax,
 * then nll_loss, each tested against NumPy in tests/autograd/).
 *   - float64, random logits: equal to the tape's to 1e-12 relative;
 *   - float32, the lecture's shape (32, 27): tg_cmp says approximately
 *     equal, and the result stays float32;
 *   - logits of size 1000 (exp overflows in float32 and float64 beyond
 *     88 and 709): the result must be finite and right;
 *   - one row, and labels that repeat.
 */
#define EX_STATEMENT "15-cross-entropy-backward.md"
#include "grade.h"

#include <math.h>

/* The tape's dL/dlogits for logits (a leaf made here from values). New
 * reference. */
static tg_tensor *tape_dlogits(const tg_tensor *values,
                               const tg_tensor *labels)
{
    tg_tensor *x = tg_clone(values);
    tg_set_requires_grad(x, true);
    tg_tensor *loss = tg_cross_entropy(x, labels, TG_REDUCTION_MEAN);
    cr_assert_eq(tg_backward(loss), 0, "%s", tg_last_error());
    tg_tensor *g = tg_retain(x->grad);
    tg_release(loss);
    tg_release(x);
    return g;
}

static tg_tensor *student(const tg_tensor *logits, const tg_tensor *labels)
{
    tg_tensor *d = NULL;
    EX_CALL(d = ex_cross_entropy_backward(logits, labels));
    ex_require(d, "ex_cross_entropy_backward");
    if (logits->dtype == TG_FLOAT64) {
        ex_check_shape(d, "dlogits", logits->shape, 2, NULL);
    } else {
        char got[TG_SHAPE_STR_MAX], want[TG_SHAPE_STR_MAX];
        cr_assert(tg_same_shape(d, logits), "dlogits has shape %s but must "
                  "have logits' shape %s", tg_shape_str(d, got),
                  tg_shape_str(logits, want));
        cr_assert(d->dtype == logits->dtype, "dlogits is %s; logits are %s: "
                  "keep their dtype", tg_dtype_name(d->dtype),
                  tg_dtype_name(logits->dtype));
    }
    return d;
}

/* Random logits (n, c) of the dtype, times scale, and labels. */
static void make(uint64_t seed, int64_t n, int64_t c, double scale,
                 tg_dtype dtype, tg_tensor **logits, tg_tensor **labels)
{
    tg_generator *g = tg_generator_new(seed);
    tg_tensor *r = tg_randn_gen(g, TG_SHAPE(n, c), dtype);
    *logits = tg_mul_scalar(r, scale);
    *labels = tg_randint_gen(g, 0, c, TG_SHAPE(n));
    tg_release(r);
    tg_generator_free(g);
}

static void check_float64(uint64_t seed, int64_t n, int64_t c, double scale)
{
    tg_tensor *logits, *labels;
    make(seed, n, c, scale, TG_FLOAT64, &logits, &labels);
    tg_tensor *want = tape_dlogits(logits, labels);
    tg_tensor *got = student(logits, labels);
    char what[64];
    snprintf(what, sizeof what, "dlogits (%lld, %lld), logits * %g",
             (long long)n, (long long)c, scale);
    ex_check_close(got, want, what, 1e-12, 1e-15);
    tg_release(got), tg_release(want), tg_release(labels);
    tg_release(logits);
}

TG_TEST(ex15, matches_the_tape_in_float64)
{
    check_float64(1, 5, 7, 1.0);
    check_float64(2, 16, 3, 3.0);
}

TG_TEST(ex15, the_lecture_shape_in_float32)
{
    tg_tensor *logits, *labels;
    make(3, 32, 27, 1.0, TG_FLOAT32, &logits, &labels);
    tg_tensor *x = tg_clone(logits);
    tg_set_requires_grad(x, true);
    tg_tensor *loss = tg_cross_entropy(x, labels, TG_REDUCTION_MEAN);
    cr_assert_eq(tg_backward(loss), 0);
    tg_tensor *got = student(logits, labels);
    char line[256];
    int ok = tg_cmp_format("logits", got, x, line, sizeof line);
    cr_assert(ok == 1, "%s", ok < 0 ? tg_last_error() : line);
    tg_release(got), tg_release(loss), tg_release(x), tg_release(labels);
    tg_release(logits);
}

TG_TEST(ex15, large_logits_stay_finite)
{
    check_float64(4, 6, 5, 1000.0);
    tg_tensor *logits, *labels;
    make(5, 6, 5, 200.0, TG_FLOAT32, &logits, &labels);
    tg_tensor *want = tape_dlogits(logits, labels);
    tg_tensor *got = student(logits, labels);
    ex_check_close(got, want, "dlogits of float32 logits * 200", 1e-5,
                   1e-7);
    tg_release(got), tg_release(want), tg_release(labels);
    tg_release(logits);
}

TG_TEST(ex15, one_row_and_repeated_labels)
{
    check_float64(6, 1, 4, 1.0);
    tg_tensor *logits = tg_from_array(
        (double[]){1, 2, 3, 0.5, -1, 2, 0, 0, 0}, TG_SHAPE(3, 3),
        TG_FLOAT64);
    tg_tensor *labels = tg_from_array((int64_t[]){2, 2, 0}, TG_SHAPE(3),
                                      TG_INT64);
    tg_tensor *want = tape_dlogits(logits, labels);
    tg_tensor *got = student(logits, labels);
    ex_check_close(got, want, "dlogits with labels 2, 2, 0", 1e-12, 1e-15);
    tg_release(got), tg_release(want), tg_release(labels);
    tg_release(logits);
}
