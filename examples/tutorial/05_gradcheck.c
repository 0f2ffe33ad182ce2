/*
 * examples/tutorial/05_gradcheck.c - the program of tutorial chapter 5
 * (docs/tutorial/05-gradcheck.md): finite differences by hand and how
 * large their error is, tg_gradcheck and its tolerance, float64 against
 * float32, kinks, and gradcheck on a function of your own, first correct,
 * then with the most common backward bug and the report it gets.
 *
 * Sections run in the chapter's order. The function of your own is the
 * norm of each row, y[r] = sqrt(sum_j x[r, j]^2), written as a
 * tg_function. Every verdict the chapter states is also checked: the
 * program exits 1 when a check that should pass fails, or the other way
 * round, or when a tensor is left alive. How gradcheck works inside is in
 * docs/autograd.md, section 9.
 */
#include "tapegrad.h"

#include <math.h>
#include <stdio.h>

static int surprises; // verdicts that were not the expected ones

static void expect(int verdict, int expected, const char *what)
{
    if (verdict != expected) {
        surprises++;
        printf("UNEXPECTED: %s gave %d, expected %d\n", what, verdict,
               expected);
    }
}

/* ------------------------------------------ 1. finite differences by hand */

/* tanh(x) for one number, computed by the library in the given dtype: x is
 * rounded to that dtype first, as gradcheck's perturbed inputs are. */
static double tanh_at(double x, tg_dtype dtype)
{
    tg_tensor *t = tg_scalar(x, dtype);
    tg_tensor *y = tg_tanh(t);
    double v = tg_item(y);
    tg_release(y);
    tg_release(t);
    return v;
}

static void by_hand(void)
{
    printf("== 1. Finite differences by hand: d tanh(x)/dx at x = 0.5 ==\n");
    /* the analytical derivative: what backward computes, 1 - tanh(x)^2 */
    tg_tensor *x = tg_scalar(0.5, TG_FLOAT64);
    tg_set_requires_grad(x, true);
    tg_tensor *y = tg_tanh(x);
    tg_backward(y);
    double exact = tg_item(x->grad);
    printf("backward: %.12f\n", exact);

    printf("  eps     forward error   central error   central error\n"
           "          (float64)       (float64)       (float32)\n");
    const double x0 = 0.5;
    for (int k = 1; k <= 11; k++) {
        double eps = pow(10.0, -k);
        /* forward:  (f(x + eps) - f(x)) / eps            error ~ eps f''/2
         * central:  (f(x + eps) - f(x - eps)) / (2 eps)  error ~ eps^2 f'''/6
         * plus, for both, rounding: about ulp(f) / eps */
        double fwd = (tanh_at(x0 + eps, TG_FLOAT64) -
                      tanh_at(x0, TG_FLOAT64)) / eps;
        double c64 = (tanh_at(x0 + eps, TG_FLOAT64) -
                      tanh_at(x0 - eps, TG_FLOAT64)) / (2 * eps);
        double c32 = (tanh_at(x0 + eps, TG_FLOAT32) -
                      tanh_at(x0 - eps, TG_FLOAT32)) / (2 * eps);
        printf("  1e-%02d   %.1e         %.1e         %.1e\n", k,
               fabs(fwd - exact), fabs(c64 - exact), fabs(c32 - exact));
    }
    tg_release(y);
    tg_release(x);
}

/* ------------------------------------------------ 2. tg_gradcheck itself */

/* What gradcheck differentiates: f(inputs) -> a tensor of any shape. */
static tg_tensor *f_tanh(const tg_tensor *const *in, int n, void *user)
{
    (void)n, (void)user;
    return tg_tanh(in[0]);
}

static tg_tensor *f_relu(const tg_tensor *const *in, int n, void *user)
{
    (void)n, (void)user;
    return tg_relu(in[0]);
}

/* One line that sums up a result: the verdict, how many Jacobian entries
 * were compared, the largest |a - n| and the largest
 * |a - n| / (atol + rtol |n|), which must stay <= 1. */
static void summary(const char *label, int verdict,
                    const tg_gradcheck_result *r)
{
    if (verdict < 0) { // f or backward failed; the error was printed
        printf("%-32s ERROR: %s\n", label, tg_last_error());
        return;
    }
    printf("%-32s %s: %lld entries, max |a - n| = %.1e, worst ratio %.2g\n",
           label, verdict == 1 ? "passed" : "FAILED", (long long)r->entries,
           r->max_error, r->max_error_ratio);
}

/* A float64 or float32 leaf holding the given values, requiring grad. */
static tg_tensor *leaf(const double *values, int64_t n, tg_dtype dtype)
{
    tg_tensor *v = tg_from_array(values, &n, 1, TG_FLOAT64);
    tg_tensor *x = tg_to_dtype(v, dtype);
    tg_release(v);
    tg_set_requires_grad(x, true);
    return x;
}

static void gradcheck_tanh(void)
{
    printf("\n== 2. tg_gradcheck on tanh, float64, the defaults ==\n");
    tg_tensor *x = leaf((double[]){-2.0, -0.7, 0.1, 0.5, 1.3, 2.4}, 6,
                        TG_FLOAT64);
    tg_gradcheck_options o = tg_gradcheck_defaults();
    printf("eps %g, atol %g, rtol %g: an entry passes iff "
           "|a - n| <= atol + rtol * |n|\n", o.eps, o.atol, o.rtol);
    tg_gradcheck_result r;
    int verdict = tg_gradcheck(f_tanh, NULL, &x, 1, NULL, &r);
    summary("tanh(x), x (6,) float64", verdict, &r);
    expect(verdict, 1, "tanh in float64");
    tg_release(x);
}

/* ----------------------------------------------------- 3. float32 */

static void float32(void)
{
    printf("\n== 3. The same in float32 ==\n");
    tg_tensor *x = leaf((double[]){-2.0, -0.7, 0.1, 0.5, 1.3, 2.4}, 6,
                        TG_FLOAT32);
    tg_gradcheck_options o = tg_gradcheck_defaults();
    o.report = stdout; // the warning and the report, here rather than stderr
    tg_gradcheck_result r;
    printf("-- with the float64 defaults:\n");
    int verdict = tg_gradcheck(f_tanh, NULL, &x, 1, &o, &r);
    expect(verdict, 0, "tanh in float32 with the defaults");

    printf("-- with eps 1e-3, atol 1e-2, rtol 1e-2:\n");
    o.eps = 1e-3;
    o.atol = 1e-2;
    o.rtol = 1e-2;
    verdict = tg_gradcheck(f_tanh, NULL, &x, 1, &o, &r);
    summary("tanh(x), x (6,) float32", verdict, &r);
    expect(verdict, 1, "tanh in float32 with float32 settings");
    tg_release(x);
}

/* ------------------------------------------------------------ 4. kinks */

static void kinks(void)
{
    printf("\n== 4. Kinks: relu near 0 ==\n");
    /* relu'(0) is 0 by convention (PyTorch's too); the central difference
     * straddles the kink and sees the average slope, (eps - 0) / (2 eps). */
    const double at_kink[] = {-1.0, 0.0, 2.0};
    const double near_kink[] = {-1.0, 1e-7, 2.0}; // closer than eps = 1e-6
    const double away[] = {-1.0, 0.1, 2.0};
    const double *points[] = {at_kink, near_kink, away};
    const char *labels[] = {"relu at (-1, 0, 2)", "relu at (-1, 1e-7, 2)",
                            "relu at (-1, 0.1, 2)"};
    const int expected[] = {0, 0, 1};
    tg_gradcheck_options o = tg_gradcheck_defaults();
    o.quiet = true; // one line each, from the result
    for (int i = 0; i < 3; i++) {
        tg_tensor *x = leaf(points[i], 3, TG_FLOAT64);
        tg_gradcheck_result r;
        int verdict = tg_gradcheck(f_relu, NULL, &x, 1, &o, &r);
        summary(labels[i], verdict, &r);
        if (verdict == 0)
            printf("%32s element %lld: analytical %g, numerical %g\n", "",
                   (long long)r.input_index, r.analytical, r.numerical);
        expect(verdict, expected[i], labels[i]);
        tg_release(x);
    }
}

/* ------------------------------------------- 5. a function of your own */

/* forward: y[r] = sqrt(sum_j x[r, j]^2), x (N, D) -> y (N,).
 * Saved: x and y (index 0 and 1), all the backward needs. */
static tg_tensor *row_norm_forward(tg_ctx *ctx, const tg_tensor *const *in,
                                   int nin, const void *args)
{
    (void)nin, (void)args;
    tg_tensor *x2 = tg_mul(in[0], in[0]);
    tg_tensor *s = tg_sum(x2, TG_DIMS(-1), false); // (N,)
    tg_tensor *y = tg_sqrt(s);
    tg_ctx_save(ctx, in[0]);
    tg_ctx_save(ctx, y);
    tg_release(s);
    tg_release(x2);
    return y;
}

/* In the forward this was: y[r] = sqrt(sum_j x[r, j]^2), so
 *   dy[r] / dx[r, j] = x[r, j] / y[r]    (and 0 for another row's x)
 * and with g = dL/dy (N,), the chain rule gives
 *   dL/dx[r, j] = g[r] * x[r, j] / y[r]
 * g and y are (N,): unsqueezed to (N, 1) so that they broadcast along
 * each row of x (N, D). */
static int row_norm_backward(tg_ctx *ctx, const tg_tensor *g,
                             tg_tensor **grad_in)
{
    const tg_tensor *x = tg_ctx_saved(ctx, 0), *y = tg_ctx_saved(ctx, 1);
    tg_tensor *g1 = tg_unsqueeze(g, 1);    // (N, 1)
    tg_tensor *y1 = tg_unsqueeze(y, 1);    // (N, 1)
    tg_tensor *x_over_y = tg_div(x, y1);   // (N, D)
    grad_in[0] = tg_mul(g1, x_over_y);     // (N, D)
    tg_release(x_over_y);
    tg_release(y1);
    tg_release(g1);
    return grad_in[0] ? 0 : -1;
}

/* The most common slip: the local derivative without the incoming
 * gradient g, as if every output's gradient were 1. */
static int row_norm_backward_wrong(tg_ctx *ctx, const tg_tensor *g,
                                   tg_tensor **grad_in)
{
    (void)g; // forgotten
    const tg_tensor *x = tg_ctx_saved(ctx, 0), *y = tg_ctx_saved(ctx, 1);
    tg_tensor *y1 = tg_unsqueeze(y, 1);
    grad_in[0] = tg_div(x, y1);            // dy/dx only: g is missing
    tg_release(y1);
    return grad_in[0] ? 0 : -1;
}

static const tg_function row_norm_fn = {"RowNormBackward", row_norm_forward,
                                        row_norm_backward, 0};
static const tg_function row_norm_wrong_fn = {
    "RowNormBackward", row_norm_forward, row_norm_backward_wrong, 0};

/* f for gradcheck: user says which of the two functions to apply. */
static tg_tensor *f_row_norm(const tg_tensor *const *in, int n, void *user)
{
    (void)n;
    const tg_tensor *x = in[0];
    return tg_function_apply(user, &x, 1, NULL);
}

static void own_function(void)
{
    printf("\n== 5. gradcheck on a function of your own ==\n");
    tg_generator *gen = tg_generator_new(5);
    tg_tensor *x = tg_randn_gen(gen, TG_SHAPE(3, 4), TG_FLOAT64);
    tg_set_requires_grad(x, true);
    tg_print(x);

    tg_gradcheck_options o = tg_gradcheck_defaults();
    o.report = stdout;
    tg_gradcheck_result r;
    int verdict = tg_gradcheck(f_row_norm, (void *)&row_norm_fn, &x, 1, &o,
                               &r);
    summary("row norm, correct backward", verdict, &r);
    expect(verdict, 1, "the row norm");

    printf("-- the backward that forgets g:\n");
    verdict = tg_gradcheck(f_row_norm, (void *)&row_norm_wrong_fn, &x, 1, &o,
                           &r);
    expect(verdict, 0, "the row norm without g");
    /* The report counts elements in C order: flat element k of x (3, 4)
     * is x[k / 4, k % 4], and output element j is y[j]. */
    int64_t row = r.input_index / 4, col = r.input_index % 4;
    printf("input element %lld is x[%lld, %lld], output element %lld is "
           "y[%lld]\n",
           (long long)r.input_index, (long long)row, (long long)col,
           (long long)r.output_index, (long long)r.output_index);
    tg_release(x);
    tg_generator_free(gen);
}

int main(void)
{
    by_hand();
    gradcheck_tanh();
    float32();
    kinks();
    own_function();
    if (tg_live_tensors() != 0 || tg_tape_size() != 0) {
        printf("leak: %lld tensors, %lld tape nodes alive\n",
               (long long)tg_live_tensors(), (long long)tg_tape_size());
        surprises++;
    }
    return surprises == 0 ? 0 : 1;
}
