/*
 * tests/autograd/test_gradcheck.c - the checker itself: it passes correct
 * gradients, and it FAILS, naming the right entry, on each kind of wrong
 * backward (a wrong Jacobian entry, a backward that ignores a zero
 * gradient, a backward that is not repeatable), in full and fast mode.
 *
 * The wrong backwards are custom functions (tg_function), so the tests do
 * not depend on any built-in op being wrong.
 */
#include "../common.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

static tg_tensor *f_mul(const tg_tensor *const *x, int n, void *user)
{
    (void)n, (void)user;
    return tg_mul(x[0], x[1]);
}

static tg_tensor *leaf(const double *v, const int64_t *shape, int ndim)
{
    tg_tensor *t = tg_from_array(v, shape, ndim, TG_FLOAT64);
    tg_set_requires_grad(t, true);
    return t;
}

/* ---- a cube op, y = x^3, with a backward that can be made wrong ---- */

typedef enum { RIGHT, WRONG_ELEMENT, IGNORES_ZERO, DRIFTS } variant;

static tg_tensor *cube_forward(tg_ctx *ctx, const tg_tensor *const *in,
                               int n, const void *args)
{
    (void)n, (void)args;
    tg_ctx_save(ctx, in[0]);
    tg_tensor *sq = tg_mul(in[0], in[0]);
    tg_tensor *y = tg_mul(sq, in[0]);
    tg_release(sq);
    return y;
}

/* dy/dx = 3x^2, scaled by g; the variants break it on purpose */
static variant cube_variant;
static int drift_calls;

static int cube_backward(tg_ctx *ctx, const tg_tensor *g, tg_tensor **grads)
{
    const tg_tensor *x = tg_ctx_saved(ctx, 0);
    tg_tensor *sq = tg_mul(x, x);
    tg_tensor *d = tg_mul_scalar(sq, 3.0);
    grads[0] = tg_mul(g, d);
    tg_release(sq);
    tg_release(d);
    tg_tensor *gx = grads[0]; // (4,), float32 or float64
    double v;
    if (cube_variant == WRONG_ELEMENT) {
        tg_get(gx, (int64_t[]){2}, 1, &v);
        tg_set(gx, (int64_t[]){2}, 1, v * 1.01); // element 2 is 1% off
    } else if (cube_variant == IGNORES_ZERO) {
        double gv[4];
        tg_to_f64_array(g, gv);
        bool all_zero = true;
        for (int64_t k = 0; k < g->numel; k++)
            all_zero = all_zero && gv[k] == 0.0;
        if (all_zero)
            tg_set(gx, (int64_t[]){0}, 1, 1e-3);
    } else if (cube_variant == DRIFTS) {
        /* far below atol, zero stays zero, but not repeatable */
        tg_get(gx, (int64_t[]){1}, 1, &v);
        tg_set(gx, (int64_t[]){1}, 1, v * (1 + 1e-12 * ++drift_calls));
    }
    return 0;
}

static const tg_function cube = {"CubeBackward", cube_forward, cube_backward,
                                 0};

static tg_tensor *f_cube(const tg_tensor *const *x, int n, void *user)
{
    (void)n, (void)user;
    return tg_function_apply(&cube, (const tg_tensor *const *)x, 1, NULL);
}

static tg_tensor *cube_input(void)
{
    return leaf((double[]){0.5, -1.25, 2.0, 0.75}, TG_SHAPE(4));
}

TG_TEST(gradcheck, passes_correct_gradients)
{
    tg_tensor *in[2] = {
        leaf((double[]){0.3, -1.2, 2.5, 0.7, 1.1, -0.4}, TG_SHAPE(2, 3)),
        leaf((double[]){1.5, -0.5, 0.25}, TG_SHAPE(3))};
    tg_gradcheck_result r;
    cr_assert_eq(tg_gradcheck(f_mul, NULL, in, 2, NULL, &r), 1, "%s",
                 r.message);
    cr_assert(r.passed);
    cube_variant = RIGHT;
    tg_tensor *x = cube_input();
    cr_assert_eq(tg_gradcheck(f_cube, NULL, &x, 1, NULL, &r), 1, "%s",
                 r.message);
    tg_release(x);
    tg_release(in[0]);
    tg_release(in[1]);
}

TG_TEST(gradcheck, catches_a_wrong_jacobian_entry)
{
    cube_variant = WRONG_ELEMENT;
    tg_tensor *x = cube_input();
    tg_gradcheck_result r;
    tg_gradcheck_options o = tg_gradcheck_defaults();
    o.quiet = true;
    cr_assert_eq(tg_gradcheck(f_cube, NULL, &x, 1, &o, &r), 0);
    cr_assert_not(r.passed);
    cr_assert_eq(r.input, 0);
    cr_assert_eq(r.input_index, 2);
    cr_assert_eq(r.output_index, 2);
    cr_assert_float_eq(r.numerical, 12.0, 1e-6);   // 3 * 2^2
    cr_assert_float_eq(r.analytical, 12.12, 1e-9); // 1% off
    cr_assert_float_eq(r.error, 0.12, 1e-6);
    cr_assert(strstr(r.message, "input 0 (shape (4,), float64), element 2"),
              "%s", r.message);
    cr_assert(strstr(r.message, "output element 2"), "%s", r.message);
    cr_assert(strstr(r.message, "1 of 16 Jacobian entries differ"), "%s",
              r.message);
    /* the summary covers the whole Jacobian: the 1% error is the largest,
     * 0.12 against a tolerance of 1e-5 + 1e-3 * 12 */
    cr_assert_eq(r.entries, 16);
    cr_assert_float_eq(r.max_error, 0.12, 1e-6);
    cr_assert_float_eq(r.max_error_ratio, 0.12 / (1e-5 + 1e-3 * 12.0), 1e-3);
    cube_variant = RIGHT;
    tg_release(x);
}

TG_TEST(gradcheck, summarises_a_check_that_passes)
{
    /* d(x^3)/dx = 3x^2 on 4 elements: a diagonal 4 x 4 Jacobian, every
     * entry within tolerance, so the largest error ratio is at most 1 */
    cube_variant = RIGHT;
    tg_tensor *x = cube_input();
    tg_gradcheck_result r;
    cr_assert_eq(tg_gradcheck(f_cube, NULL, &x, 1, NULL, &r), 1, "%s",
                 r.message);
    cr_assert_eq(r.entries, 16);
    cr_assert(r.max_error_ratio <= 1.0, "%g", r.max_error_ratio);
    /* central differences of a cubic are off by eps^2 * x (about 1e-12),
     * plus rounding: small but not exactly zero */
    cr_assert(r.max_error > 0 && r.max_error < 1e-8, "%g", r.max_error);
    tg_release(x);
}

TG_TEST(gradcheck, fast_mode_catches_a_wrong_entry_too)
{
    cube_variant = WRONG_ELEMENT;
    tg_tensor *x = cube_input();
    tg_gradcheck_options o = tg_gradcheck_defaults();
    o.fast_mode = true;
    o.quiet = true;
    o.seed = 7;
    tg_gradcheck_result r;
    cr_assert_eq(tg_gradcheck(f_cube, NULL, &x, 1, &o, &r), 0,
                 "fast mode must see a 1%% error in one entry");
    cr_assert(strstr(r.message, "fast mode"), "%s", r.message);
    cube_variant = RIGHT;
    cr_assert_eq(tg_gradcheck(f_cube, NULL, &x, 1, &o, &r), 1, "%s",
                 r.message);
    tg_release(x);
}

TG_TEST(gradcheck, catches_a_backward_that_ignores_a_zero_gradient)
{
    cube_variant = IGNORES_ZERO;
    tg_tensor *x = cube_input();
    tg_gradcheck_options o = tg_gradcheck_defaults();
    o.quiet = true;
    tg_gradcheck_result r;
    cr_assert_eq(tg_gradcheck(f_cube, NULL, &x, 1, &o, &r), 0);
    cr_assert(strstr(r.message, "zero output gradient"), "%s", r.message);
    cr_assert_eq(r.input_index, 0);
    cube_variant = RIGHT;
    tg_release(x);
}

TG_TEST(gradcheck, catches_a_backward_that_is_not_repeatable)
{
    cube_variant = DRIFTS;
    tg_tensor *x = cube_input();
    tg_gradcheck_options o = tg_gradcheck_defaults();
    o.quiet = true;
    tg_gradcheck_result r;
    cr_assert_eq(tg_gradcheck(f_cube, NULL, &x, 1, &o, &r), 0);
    cr_assert(strstr(r.message, "not repeatable"), "%s", r.message);
    cr_assert_eq(r.input_index, 1);
    cube_variant = RIGHT;
    tg_release(x);
}

TG_TEST(gradcheck, writes_its_report_and_the_float32_warning)
{
    FILE *f = tmpfile();
    cr_assert(f);
    tg_tensor *x = tg_from_array((float[]){0.5f, -1.25f, 2.0f, 0.75f},
                                 TG_SHAPE(4), TG_FLOAT32);
    tg_set_requires_grad(x, true);
    tg_gradcheck_options o = tg_gradcheck_defaults();
    o.report = f;
    o.eps = 1e-3;
    o.atol = 1e-2;
    o.rtol = 1e-2;
    cube_variant = RIGHT;
    cr_assert_eq(tg_gradcheck(f_cube, NULL, &x, 1, &o, NULL), 1,
                 "the documented float32 settings pass");
    cube_variant = WRONG_ELEMENT;
    o.atol = o.rtol = 1e-4;
    cr_assert_eq(tg_gradcheck(f_cube, NULL, &x, 1, &o, NULL), 0);
    cube_variant = RIGHT;
    char text[4096] = {0};
    rewind(f);
    size_t len = fread(text, 1, sizeof text - 1, f);
    fclose(f);
    cr_assert(len > 0);
    cr_assert(strstr(text, "warning: input 0 is float32"), "%s", text);
    cr_assert(strstr(text, "backward disagrees with finite differences"),
              "%s", text);
    tg_release(x);
}

TG_TEST(gradcheck, leaves_inputs_and_their_grads_as_they_were)
{
    const double v[] = {0.1, 0.2, 0.3};
    tg_tensor *a = leaf(v, TG_SHAPE(3));
    tg_tensor *b = leaf((double[]){3, 2, 1}, TG_SHAPE(3));
    tg_tensor *old = tg_full(TG_SHAPE(3), 42.0, TG_FLOAT64);
    a->grad = tg_retain(old);
    tg_tensor *in[2] = {a, b};
    cr_assert_eq(tg_gradcheck(f_mul, NULL, in, 2, NULL, NULL), 1);
    cr_assert_eq(a->grad, old, "the caller's grad is given back");
    cr_assert_eq(tg_data_f64(old)[0], 42.0);
    cr_assert_null(b->grad);
    for (int k = 0; k < 3; k++)
        cr_assert_eq(tg_data_f64(a)[k], v[k], "bit-exact restore");
    cr_assert_eq(tg_tape_size(), 0);
    tg_release(old);
    tg_release(a);
    tg_release(b);
}

TG_TEST(gradcheck, checks_non_contiguous_inputs_and_some_without_grad)
{
    tg_tensor *base = tg_from_array((double[]){1, 2, 3, 4, 5, 6},
                                    TG_SHAPE(2, 3), TG_FLOAT64);
    tg_tensor *t = tg_transpose(base, 0, 1); // (3, 2), not contiguous
    tg_set_requires_grad(t, true);
    tg_tensor *c = tg_from_array((double[]){0.5, -2}, TG_SHAPE(2),
                                 TG_FLOAT64); // no grad
    tg_tensor *in[2] = {t, c};
    tg_gradcheck_result r;
    cr_assert_eq(tg_gradcheck(f_mul, NULL, in, 2, NULL, &r), 1, "%s",
                 r.message);
    tg_release(c);
    tg_release(t);
    tg_release(base);
}

TG_TEST(gradcheck, errors)
{
    tg_tensor *c = tg_ones(TG_SHAPE(2), TG_FLOAT64);
    tg_tensor *in[2] = {c, c};
    cr_assert_eq(tg_gradcheck(f_mul, NULL, in, 2, NULL, NULL), -1);
    tg_assert_error("tg_gradcheck", "no input requires grad (2 given)");

    tg_tensor *row = tg_ones(TG_SHAPE(1, 3), TG_FLOAT64);
    tg_tensor *wide = tg_expand(row, TG_SHAPE(2, 3));
    tg_set_requires_grad(wide, true);
    in[0] = wide;
    in[1] = wide;
    cr_assert_eq(tg_gradcheck(f_mul, NULL, in, 2, NULL, NULL), -1);
    tg_assert_error("tg_gradcheck", "stride 0 in dim 0", "tg_contiguous");

    tg_tensor *w = tg_ones(TG_SHAPE(2), TG_FLOAT64);
    tg_set_requires_grad(w, true);
    tg_tensor *nl = tg_mul(w, w);
    in[0] = nl;
    in[1] = w;
    cr_assert_eq(tg_gradcheck(f_mul, NULL, in, 2, NULL, NULL), -1);
    tg_assert_error("tg_gradcheck", "made by MulBackward0", "not a leaf");

    in[0] = w;
    tg_gradcheck_options o = tg_gradcheck_defaults();
    o.eps = TG_EXACT_ZERO;
    cr_assert_eq(tg_gradcheck(f_mul, NULL, in, 2, &o, NULL), -1);
    tg_assert_error("tg_gradcheck", "eps must be > 0");
    cr_assert_eq(tg_gradcheck(NULL, NULL, in, 2, NULL, NULL), -1);
    tg_assert_error("tg_gradcheck", "f NULL");
    in[1] = NULL;
    cr_assert_eq(tg_gradcheck(f_mul, NULL, in, 2, NULL, NULL), -1);

    tg_release(nl);
    tg_release(w);
    tg_release(wide);
    tg_release(row);
    tg_release(c);
}

static tg_tensor *f_mul_by_ctx(const tg_tensor *const *x, int n, void *user)
{
    (void)n;
    return tg_mul(x[0], (const tg_tensor *)user);
}

TG_TEST(gradcheck, leaves_other_leaves_grads_alone)
{
    /* w requires grad but is not checked: backward must not touch it */
    tg_tensor *x = leaf((double[]){1, 2, 3}, TG_SHAPE(3));
    tg_tensor *w = leaf((double[]){0.5, 0.25, -1}, TG_SHAPE(3));
    tg_gradcheck_result r;
    cr_assert_eq(tg_gradcheck(f_mul_by_ctx, w, &x, 1, NULL, &r), 1, "%s",
                 r.message);
    cr_assert_null(w->grad);
    tg_release(w);
    tg_release(x);
}

TG_TEST(gradcheck, rejects_inputs_that_share_memory)
{
    tg_tensor *x = leaf((double[]){1, 2, 3}, TG_SHAPE(3));
    tg_tensor *old = tg_zeros(TG_SHAPE(3), TG_FLOAT64);
    x->grad = tg_retain(old);
    tg_tensor *in[2] = {x, x};
    cr_assert_eq(tg_gradcheck(f_mul, NULL, in, 2, NULL, NULL), -1);
    tg_assert_error("tg_gradcheck", "inputs 0 and 1 share memory",
                    "the same tensor twice", "tg_clone");
    cr_assert_eq(x->grad, old, "the caller's grad is untouched");
    tg_tensor *alias = tg_detach(x);
    tg_set_requires_grad(alias, true);
    in[1] = alias;
    cr_assert_eq(tg_gradcheck(f_mul, NULL, in, 2, NULL, NULL), -1);
    tg_assert_error("tg_gradcheck", "inputs 0 and 1 share memory");
    tg_release(alias);
    tg_release(old);
    tg_release(x);
}

TG_TEST(gradcheck, needs_gradients_enabled)
{
    tg_tensor *x = leaf((double[]){1, 2, 3}, TG_SHAPE(3));
    tg_tensor *in[2] = {x, x};
    tg_no_grad_begin();
    cr_assert_eq(tg_gradcheck(f_mul, NULL, in, 2, NULL, NULL), -1);
    tg_no_grad_end();
    tg_assert_error("tg_gradcheck", "gradients are disabled",
                    "outside the no_grad scope");
    tg_release(x);
}

/* ---- every error leaves result->passed false ---- */

static tg_tensor *f_log(const tg_tensor *const *x, int n, void *user)
{
    (void)n, (void)user;
    return tg_log(x[0]);
}

/* x * x, but on call number *user (counting from 1) f makes a mistake */
static tg_tensor *f_fails_on_call(const tg_tensor *const *x, int n, void *user)
{
    (void)n;
    int *left = user;
    if (--*left == 0)
        return tg_reshape(x[0], TG_SHAPE(5)); // (3,) has no 5 elements
    return tg_mul(x[0], x[0]);
}

/* A result left at passed = true by a check that never finished would read
 * as a pass to a caller that looks at result.passed alone. */
TG_TEST(gradcheck, an_error_is_never_a_pass)
{
    tg_tensor *x = leaf((double[]){1, 2, 3}, TG_SHAPE(3));
    tg_gradcheck_result r;
    tg_gradcheck_options o = tg_gradcheck_defaults();
    o.eps = TG_EXACT_ZERO;
    cr_assert_eq(tg_gradcheck(f_log, NULL, &x, 1, &o, &r), -1);
    cr_assert_not(r.passed, "eps 0");

    /* f fails at once, then half way through the numerical Jacobian */
    for (int call = 1; call <= 6; call += 5) {
        int left = call;
        cr_assert_eq(tg_gradcheck(f_fails_on_call, &left, &x, 1, NULL, &r),
                     -1);
        tg_assert_error("tg_reshape");
        cr_assert_not(r.passed, "f failed on call %d", call);
    }

    /* anomaly mode stops f at log(-1) */
    tg_tensor *neg = leaf((double[]){1, -1, 2}, TG_SHAPE(3));
    bool was = tg_set_detect_anomaly(true);
    cr_assert_eq(tg_gradcheck(f_log, NULL, &neg, 1, NULL, &r), -1);
    tg_set_detect_anomaly(was);
    tg_assert_error("LogBackward0");
    cr_assert_not(r.passed, "anomaly mode stopped f");
    tg_release(neg);
    tg_release(x);
}

TG_TEST(gradcheck, refuses_an_output_that_is_not_finite)
{
    /* without the check this failed as "numerical nan ... = nan", which
     * does not say that f itself was not finite */
    tg_tensor *x = leaf((double[]){1, -1, 0}, TG_SHAPE(3));
    tg_gradcheck_result r;
    for (int fast = 0; fast <= 1; fast++) {
        tg_gradcheck_options o = tg_gradcheck_defaults();
        o.fast_mode = fast;
        o.quiet = true;
        cr_assert_eq(tg_gradcheck(f_log, NULL, &x, 1, &o, &r), -1);
        tg_assert_error("tg_gradcheck: f's output is nan at element 1 "
                        "(output shape (3,)), at the inputs as given",
                        "where f is finite", "tg_log");
        cr_assert_not(r.passed);
    }
    /* the first element that is not finite is named, and -inf as such */
    tg_tensor *z = leaf((double[]){1, 0, -1}, TG_SHAPE(3));
    cr_assert_eq(tg_gradcheck(f_log, NULL, &z, 1, NULL, &r), -1);
    tg_assert_error("f's output is -inf at element 1");
    tg_release(z);
    tg_release(x);
}
