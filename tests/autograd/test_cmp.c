/*
 * tests/autograd/test_cmp.c - tg_cmp and tg_cmp_format, makemore part 4's
 * cmp(): the printed line character for character, exact against
 * approximate (torch.allclose's rtol 1e-5, atol 1e-8), maxdiff as Python
 * prints a float, a wrong gradient, and the shape mismatch PyTorch would
 * broadcast. The expected strings are what Python and PyTorch 1.13 print
 * for the same values (each checked by hand: repr(2**-30) is
 * '9.313225746154785e-10'; torch.allclose(torch.tensor([1.0]) + 1e-5,
 * torch.tensor([1.0])) is False, with maxdiff 1.0013580322265625e-05,
 * because 1 + 1e-5 rounds up in float32).
 */
#include "../common.h"

#include <criterion/redirect.h>

#include <math.h>
#include <stdio.h>

/* A leaf x of the given values that requires grad, after a backward of
 * sum(x * c): x->grad = c. New reference. */
static tg_tensor *leaf_with_grad(const double *x, const double *c, int64_t n,
                                 tg_dtype dtype)
{
    tg_tensor *xt = tg_from_array(x, TG_SHAPE(n), TG_FLOAT64);
    tg_tensor *leaf = tg_to_dtype(xt, dtype);
    tg_release(xt);
    tg_set_requires_grad(leaf, true);
    tg_tensor *ct = tg_from_array(c, TG_SHAPE(n), TG_FLOAT64);
    tg_tensor *cd = tg_to_dtype(ct, dtype);
    tg_tensor *y = tg_mul(leaf, cd);
    tg_tensor *s = tg_sum(y, NULL, 0, false);
    cr_assert_eq(tg_backward(s), 0, "%s", tg_last_error());
    tg_release(s), tg_release(y), tg_release(cd), tg_release(ct);
    return leaf;
}

/* A float tensor of the values given, no history. New reference. */
static tg_tensor *values(const double *v, int64_t n, tg_dtype dtype)
{
    tg_tensor *t = tg_from_array(v, TG_SHAPE(n), TG_FLOAT64);
    tg_tensor *out = tg_to_dtype(t, dtype);
    tg_release(t);
    return out;
}

TG_TEST(cmp, exact_line_as_the_lecture_prints_it)
{
    tg_tensor *x = leaf_with_grad((double[]){1, 2, 3}, (double[]){4, 5, 6},
                                  3, TG_FLOAT32);
    tg_tensor *dt = values((double[]){4, 5, 6}, 3, TG_FLOAT32);
    char line[256];
    cr_assert_eq(tg_cmp_format("logprobs", dt, x, line, sizeof line), 1);
    cr_assert_str_eq(line, "logprobs        | exact: True  | approximate: "
                           "True  | maxdiff: 0.0");
    /* tg_cmp returns the same answer and prints the line (captured: the
     * test's stdout carries the TAP report) */
    cr_redirect_stdout();
    cr_assert_eq(tg_cmp("logprobs", dt, x), 1);
    fflush(stdout);
    cr_assert_stdout_eq_str("logprobs        | exact: True  | approximate: "
                            "True  | maxdiff: 0.0\n");
    /* a name longer than 15 characters is not cut, as Python's {:15s} */
    cr_assert_eq(tg_cmp_format("a_name_of_17_char", dt, x, line,
                               sizeof line), 1);
    cr_assert_str_eq(line, "a_name_of_17_char | exact: True  | "
                           "approximate: True  | maxdiff: 0.0");
    tg_release(dt), tg_release(x);
}

TG_TEST(cmp, approximate_but_not_exact)
{
    /* grad 4, 5, 6 and dt off by 2^-30 in its first element (float64) */
    tg_tensor *x = leaf_with_grad((double[]){1, 2, 3}, (double[]){4, 5, 6},
                                  3, TG_FLOAT64);
    tg_tensor *dt = values((double[]){4 + ldexp(1, -30), 5, 6}, 3,
                           TG_FLOAT64);
    char line[256];
    cr_assert_eq(tg_cmp_format("hprebn", dt, x, line, sizeof line), 1);
    cr_assert_str_eq(line, "hprebn          | exact: False | approximate: "
                           "True  | maxdiff: 9.313225746154785e-10");
    tg_release(dt), tg_release(x);
}

/* The checker must say no: a gradient that is wrong (the classic missing
 * factor 2 of d(x^2)/dx) is neither exact nor approximate. */
TG_TEST(cmp, wrong_gradient_is_reported)
{
    tg_tensor *x = leaf_with_grad((double[]){1, 2, 3}, (double[]){2, 4, 6},
                                  3, TG_FLOAT32);
    tg_tensor *dt = values((double[]){1, 2, 3}, 3, TG_FLOAT32);
    char line[256];
    cr_assert_eq(tg_cmp_format("h", dt, x, line, sizeof line), 0);
    cr_assert_str_eq(line, "h               | exact: False | approximate: "
                           "False | maxdiff: 3.0");
    cr_redirect_stdout();
    cr_assert_eq(tg_cmp("h", dt, x), 0);
    fflush(stdout);
    cr_assert_stdout_eq_str("h               | exact: False | approximate: "
                            "False | maxdiff: 3.0\n");
    tg_release(dt), tg_release(x);
}

TG_TEST(cmp, allclose_tolerance_in_float32)
{
    /* torch.allclose(torch.tensor([1.0]) + 1e-5, torch.tensor([1.0])) is
     * False: 1 + 1e-5 is 1.0000100135803223 in float32 */
    tg_tensor *x = leaf_with_grad((double[]){0}, (double[]){1}, 1,
                                  TG_FLOAT32);
    tg_tensor *dt = values((double[]){1 + 1e-5}, 1, TG_FLOAT32);
    char line[256];
    cr_assert_eq(tg_cmp_format("b2", dt, x, line, sizeof line), 0);
    cr_assert_str_eq(line, "b2              | exact: False | approximate: "
                           "False | maxdiff: 1.0013580322265625e-05");
    tg_release(dt);
    /* within atol + rtol |g| = 1e-8 + 1e-5: close */
    dt = values((double[]){1 + 9e-6}, 1, TG_FLOAT32);
    cr_assert_eq(tg_cmp_format("b2", dt, x, line, sizeof line), 1, "%s",
                 line);
    tg_release(dt), tg_release(x);
}

TG_TEST(cmp, maxdiff_as_python_prints_it)
{
    /* grad 0, so maxdiff is |dt| */
    static const struct {
        double v;
        const char *text;
    } cases[] = {
        {0.5, "0.5"},           {1e-5, "1e-05"},
        {1e16, "1e+16"},        {1e15, "1000000000000000.0"},
        {0.0001, "0.0001"},     {123.25, "123.25"},
        {1.5e-7, "1.5e-07"},    {12345678.9, "12345678.9"},
        {3.0 * 0x1p-20, "2.86102294921875e-06"},
    };
    tg_tensor *x = leaf_with_grad((double[]){1}, (double[]){0}, 1,
                                  TG_FLOAT64);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        tg_tensor *dt = values(&cases[i].v, 1, TG_FLOAT64);
        char line[256], want[256];
        tg_cmp_format("x", dt, x, line, sizeof line);
        snprintf(want, sizeof want, "x               | exact: False | "
                 "approximate: False | maxdiff: %s", cases[i].text);
        cr_assert_str_eq(line, want);
        tg_release(dt);
    }
    /* NaN: close to nothing, and the maximum is NaN */
    tg_tensor *dt = values((double[]){NAN}, 1, TG_FLOAT64);
    char line[256];
    cr_assert_eq(tg_cmp_format("x", dt, x, line, sizeof line), 0);
    cr_assert_str_eq(line, "x               | exact: False | approximate: "
                           "False | maxdiff: nan");
    tg_release(dt), tg_release(x);
}

/* PyTorch's cmp broadcasts a (3,) dt against a (3, 1) grad and compares a
 * (3, 3) grid: with both all ones, as here, it prints "exact: True" for a
 * gradient of the wrong shape. tg_cmp refuses the shapes instead, and
 * prints nothing. */
TG_TEST(cmp, shape_mismatch_is_an_error_not_a_broadcast)
{
    tg_tensor *x = tg_zeros(TG_SHAPE(3, 1), TG_FLOAT32);
    tg_set_requires_grad(x, true);
    tg_tensor *s = tg_sum(x, NULL, 0, false);
    cr_assert_eq(tg_backward(s), 0);
    tg_tensor *dt = tg_ones(TG_SHAPE(3), TG_FLOAT32); // the keepdim lost
    char line[256] = "untouched";
    cr_assert_eq(tg_cmp_format("bnmeani", dt, x, line, sizeof line), -1);
    cr_assert_str_eq(line, "");
    cr_assert(strstr(tg_last_error(), "tg_cmp_format: cannot compare "
                     "dbnmeani of shape (3,) with bnmeani.grad of shape "
                     "(3, 1)") == tg_last_error(), "%s", tg_last_error());
    cr_assert(strstr(tg_last_error(), "keepdim") != NULL, "%s",
              tg_last_error());
    cr_redirect_stdout();
    cr_assert_eq(tg_cmp("bnmeani", dt, x), -1);
    fflush(stdout);
    cr_assert_stdout_eq_str(""); // nothing printed after an error
    tg_release(dt), tg_release(s), tg_release(x);
}

TG_TEST(cmp, strided_operands_are_read_in_order)
{
    /* dt a transposed view whose values equal the grad in C order */
    double g[6] = {1, 2, 3, 4, 5, 6};
    tg_tensor *x = tg_zeros(TG_SHAPE(2, 3), TG_FLOAT64);
    tg_set_requires_grad(x, true);
    tg_tensor *c = tg_from_array(g, TG_SHAPE(2, 3), TG_FLOAT64);
    tg_tensor *y = tg_mul(x, c);
    tg_tensor *s = tg_sum(y, NULL, 0, false);
    cr_assert_eq(tg_backward(s), 0);
    tg_tensor *base = tg_from_array((double[]){1, 4, 2, 5, 3, 6},
                                    TG_SHAPE(3, 2), TG_FLOAT64);
    tg_tensor *dt = tg_transpose(base, 0, 1);
    char line[256];
    cr_assert_eq(tg_cmp_format("x", dt, x, line, sizeof line), 1);
    cr_assert(strstr(line, "exact: True") != NULL, "%s", line);
    tg_release(dt), tg_release(base), tg_release(s), tg_release(y);
    tg_release(c), tg_release(x);
}
