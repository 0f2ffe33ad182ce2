/*
 * tests/autograd/test_grad_elementwise.c - the backward of the elementwise
 * ops (arith.c, unary.c, activation.c, compare.c) against NumPy references
 * (scripts/reference/gen_grad_elementwise.py), plus what a reference cannot
 * show: PyTorch's conventions at kinks and domain edges, the grad_fn
 * names, which ops record nothing, mixed dtypes and gradients of any
 * layout.
 *
 * Every forward + backward runs with an upstream gradient g given through
 * tg_backward_ex(out, &(tg_backward_options){.grad = g}), so each element
 * of dx is checked on its own (a sum as the loss would hide a wrong sign
 * in one place behind another).
 *
 * Tolerances (|actual - expected| <= atol + rtol |expected|):
 * - F64 (rtol 1e-12, atol 1e-14): the references are the closed forms in
 *   float64; the C code takes a few more roundings (2^-52 = 2.2e-16 each)
 *   and, for tanh and sigmoid, goes through the rounded output (1 - y^2
 *   with |y| near 1 loses a few digits relative to the result, hence the
 *   small absolute term). Any formula mistake is far larger.
 * - F32 (rtol 2e-5, atol 2e-6): the references are the float64 closed
 *   forms rounded once; the C code computes in float32 (2^-23 = 1.2e-7
 *   per rounding). Through the saved float32 output, 1 - y^2 is off by up
 *   to ~ulp(1) = 1.2e-7 absolute, times |g| <= 3 and relative to values
 *   as small as 0.01 (tanh(3)); a broadcast operand's gradient is a sum of
 *   float32 products that may cancel. PyTorch's own float32 gradients
 *   differ from these references by up to 8e-6 relative.
 * - Kink and edge values below are exact: they are 0, g, g/2, +-inf, NaN
 *   or one exact product, each checked against PyTorch 1.13.
 */
#include "../common.h"

#include <math.h>
#include <stdio.h>

typedef struct tolerance {
    double rtol, atol;
} tolerance;
static const tolerance F64 = {1e-12, 1e-14};
static const tolerance F32 = {2e-5, 2e-6};

typedef tg_tensor *(*unary_fn)(const tg_tensor *);
typedef tg_tensor *(*binary_fn)(const tg_tensor *, const tg_tensor *);

/* ------------------------------------------------------------- helpers */

static tg_tensor *load(const char *fmt, const char *a, const char *b)
{
    char name[256];
    snprintf(name, sizeof name, fmt, a, b);
    return tg_test_load_ref(name);
}

static void requires_grad(tg_tensor *x)
{
    cr_assert_eq(tg_set_requires_grad(x, true), 0, "%s", tg_last_error());
}

/* out.backward(g); asserts success. */
static void backward_with(tg_tensor *out, const tg_tensor *g)
{
    cr_assert_not_null(out, "forward failed: %s", tg_last_error());
    int rc = tg_backward_ex(out, &(tg_backward_options){.grad = g});
    cr_assert_eq(rc, 0, "backward failed: %s", tg_last_error());
}

/* x->grad against reference `name` (NULL grad fails). */
static void check_grad(const tg_tensor *x, const char *name, tolerance tol)
{
    cr_assert_not_null(x->grad, "no gradient for %s", name);
    tg_test_check_ref(tg_retain(x->grad), name, tol.rtol, tol.atol);
}

static tg_tensor *vec64(const double *v, int64_t n)
{
    return tg_from_array(v, &n, 1, TG_FLOAT64);
}
#define VEC64(...)                                                          \
    vec64((const double[]){__VA_ARGS__},                                    \
          (int64_t)(sizeof((const double[]){__VA_ARGS__}) / sizeof(double)))

/* x->grad equals expected exactly (NaN matches NaN, inf the same inf). */
static void assert_grad_exact(const tg_tensor *x, const tg_tensor *expected)
{
    cr_assert_not_null(x->grad, "no gradient");
    tg_assert_close(x->grad, expected, 0, 0);
}

/* --------------------------------------------- the ops, as one signature */

static tg_tensor *gelu_exact(const tg_tensor *x)
{
    return tg_gelu(x, TG_GELU_EXACT);
}
static tg_tensor *gelu_tanh(const tg_tensor *x)
{
    return tg_gelu(x, TG_GELU_TANH);
}
static tg_tensor *clamp_ref(const tg_tensor *x) // the generator's bounds
{
    return tg_clamp(x, -1.0, 2.0);
}
static tg_tensor *sub_scalar(const tg_tensor *x)
{
    return tg_sub_scalar(x, 1.5);
}
static tg_tensor *rsub_scalar(const tg_tensor *x)
{
    return tg_rsub_scalar(x, 1.5);
}
static tg_tensor *div_scalar(const tg_tensor *x)
{
    return tg_div_scalar(x, -0.75);
}
static tg_tensor *rdiv_scalar(const tg_tensor *x)
{
    return tg_rdiv_scalar(x, 2.5);
}
static tg_tensor *pow2(const tg_tensor *x)
{
    return tg_pow_scalar(x, 2.0);
}
static tg_tensor *pow05(const tg_tensor *x)
{
    return tg_pow_scalar(x, 0.5);
}
static tg_tensor *powm1(const tg_tensor *x)
{
    return tg_pow_scalar(x, -1.0);
}
static tg_tensor *pow3(const tg_tensor *x)
{
    return tg_pow_scalar(x, 3.0);
}

/* The reference name, the op, which input ("x" or "xpos") and the
 * grad_fn name PyTorch gives the same call. */
static const struct unary_case {
    const char *name;
    unary_fn f;
    const char *input;
    const char *grad_fn;
} UNARY[] = {
    {"neg", tg_neg, "x", "NegBackward0"},
    {"exp", tg_exp, "x", "ExpBackward0"},
    {"log", tg_log, "xpos", "LogBackward0"},
    {"sqrt", tg_sqrt, "xpos", "SqrtBackward0"},
    {"rsqrt", tg_rsqrt, "xpos", "RsqrtBackward0"},
    {"abs", tg_abs, "x", "AbsBackward0"},
    {"tanh", tg_tanh, "x", "TanhBackward0"},
    {"sigmoid", tg_sigmoid, "x", "SigmoidBackward0"},
    {"relu", tg_relu, "x", "ReluBackward0"},
    {"gelu", gelu_exact, "x", "GeluBackward0"},
    {"gelu_tanh", gelu_tanh, "x", "GeluBackward0"},
    {"silu", tg_silu, "x", "SiluBackward0"},
    {"clamp", clamp_ref, "x", "ClampBackward1"},
    {"sub_scalar", sub_scalar, "x", "SubBackward0"},
    /* PyTorch says RsubBackward1: here s - x records tg_sub's node */
    {"rsub_scalar", rsub_scalar, "x", "SubBackward0"},
    {"div_scalar", div_scalar, "x", "DivBackward0"},
    {"rdiv_scalar", rdiv_scalar, "x", "DivBackward0"},
    {"pow2", pow2, "x", "PowBackward0"},
    {"pow05", pow05, "xpos", "PowBackward0"},
    {"powm1", powm1, "x", "PowBackward0"},
    {"pow3", pow3, "x", "PowBackward0"},
};
#define NUNARY (sizeof UNARY / sizeof *UNARY)

/* The reference name, the op, the input group and the grad_fn name. */
static const struct binary_case {
    const char *name;
    binary_fn f;
    const char *inputs;
    const char *grad_fn;
} BINARY[] = {
    {"add", tg_add, "binary", "AddBackward0"},
    {"sub", tg_sub, "binary", "SubBackward0"},
    {"mul", tg_mul, "binary", "MulBackward0"},
    {"div", tg_div, "binary", "DivBackward0"},
    {"pow", tg_pow, "pow", "PowBackward1"},
    {"maximum", tg_maximum, "ext", "MaximumBackward0"},
    {"minimum", tg_minimum, "ext", "MinimumBackward0"},
};
#define NBINARY (sizeof BINARY / sizeof *BINARY)

/* g laid out transposed in memory (same values, non-contiguous). */
static tg_tensor *transposed_copy(const tg_tensor *g)
{
    tg_tensor *t = tg_transpose(g, 0, 1);
    tg_tensor *c = tg_contiguous(t);
    tg_tensor *back = tg_transpose(c, 0, 1);
    tg_release(t);
    tg_release(c);
    cr_assert(!tg_is_contiguous(back));
    return back;
}

static void check_unary(const struct unary_case *c, const char *dt,
                        tolerance tol, bool strided_g)
{
    tg_tensor *x = load("grad_elementwise_unary_%s_%s", c->input, dt);
    tg_tensor *g = load("grad_elementwise_unary_g_%s%s", dt, "");
    if (strided_g) {
        tg_tensor *t = transposed_copy(g);
        tg_release(g);
        g = t;
    }
    requires_grad(x);
    tg_tensor *out = c->f(x);
    cr_assert_str_eq(tg_grad_fn_name(out), c->grad_fn, "%s", c->name);
    backward_with(out, g);
    char ref[128];
    snprintf(ref, sizeof ref, "grad_elementwise_%s_dx_%s", c->name, dt);
    check_grad(x, ref, tol);
    tg_release(out);
    tg_release(x);
    tg_release(g);
    cr_assert_eq(tg_tape_size(), 0);
}

static void check_binary(const struct binary_case *c, const char *dt,
                         tolerance tol)
{
    tg_tensor *a = load("grad_elementwise_%s_a_%s", c->inputs, dt);
    tg_tensor *b = load("grad_elementwise_%s_b_%s", c->inputs, dt);
    tg_tensor *g = load("grad_elementwise_binary_g_%s%s", dt, "");
    requires_grad(a);
    requires_grad(b);
    tg_tensor *out = c->f(a, b);
    cr_assert_str_eq(tg_grad_fn_name(out), c->grad_fn, "%s", c->name);
    backward_with(out, g);
    char ref[128];
    snprintf(ref, sizeof ref, "grad_elementwise_%s_da_%s", c->name, dt);
    check_grad(a, ref, tol);
    snprintf(ref, sizeof ref, "grad_elementwise_%s_db_%s", c->name, dt);
    check_grad(b, ref, tol);
    tg_release(out);
    tg_release(a);
    tg_release(b);
    tg_release(g);
    cr_assert_eq(tg_tape_size(), 0);
}

static void check_where(const char *dt, tolerance tol)
{
    tg_tensor *cond = tg_test_load_ref("grad_elementwise_where_cond");
    tg_tensor *a = load("grad_elementwise_where_a_%s%s", dt, "");
    tg_tensor *b = load("grad_elementwise_where_b_%s%s", dt, "");
    tg_tensor *g = load("grad_elementwise_where_g_%s%s", dt, "");
    requires_grad(a);
    requires_grad(b);
    tg_tensor *out = tg_where(cond, a, b);
    cr_assert_str_eq(tg_grad_fn_name(out), "WhereBackward0");
    backward_with(out, g);
    char ref[128];
    snprintf(ref, sizeof ref, "grad_elementwise_where_da_%s", dt);
    check_grad(a, ref, tol);
    snprintf(ref, sizeof ref, "grad_elementwise_where_db_%s", dt);
    check_grad(b, ref, tol);
    tg_release(out);
    tg_release(cond);
    tg_release(a);
    tg_release(b);
    tg_release(g);
    cr_assert_eq(tg_tape_size(), 0);
}

/* ------------------------------------------------- against the references */

TG_TEST(grad_elementwise, unary_and_scalar_forms_f64)
{
    for (size_t i = 0; i < NUNARY; i++)
        check_unary(&UNARY[i], "f64", F64, false);
}

TG_TEST(grad_elementwise, unary_and_scalar_forms_f32)
{
    for (size_t i = 0; i < NUNARY; i++)
        check_unary(&UNARY[i], "f32", F32, false);
}

TG_TEST(grad_elementwise, unary_with_a_non_contiguous_gradient)
{
    for (size_t i = 0; i < NUNARY; i++)
        check_unary(&UNARY[i], "f64", F64, true);
}

TG_TEST(grad_elementwise, binary_with_broadcasting_f64)
{
    for (size_t i = 0; i < NBINARY; i++)
        check_binary(&BINARY[i], "f64", F64);
}

TG_TEST(grad_elementwise, binary_with_broadcasting_f32)
{
    for (size_t i = 0; i < NBINARY; i++)
        check_binary(&BINARY[i], "f32", F32);
}

TG_TEST(grad_elementwise, where_three_way_broadcast)
{
    check_where("f64", F64);
    check_where("f32", F32);
}

/* The reference comparison can fail: tanh's gradient is not sigmoid's,
 * and a gradient off by 1e-4 relative is caught at the float32 tolerance. */
TG_TEST(grad_elementwise, reference_check_can_fail)
{
    tg_tensor *x = tg_test_load_ref("grad_elementwise_unary_x_f32");
    tg_tensor *g = tg_test_load_ref("grad_elementwise_unary_g_f32");
    requires_grad(x);
    tg_tensor *out = tg_tanh(x);
    backward_with(out, g);
    tg_tensor *wrong = tg_test_load_ref("grad_elementwise_sigmoid_dx_f32");
    tg_tensor *right = tg_test_load_ref("grad_elementwise_tanh_dx_f32");
    tg_tensor *off = tg_mul_scalar(right, 1.0 + 1e-4);
    char report[1024];
    cr_assert(tg_test_close(x->grad, right, F32.rtol, F32.atol, true, report,
                            sizeof report),
              "%s", report);
    cr_assert(!tg_test_close(x->grad, wrong, F32.rtol, F32.atol, true,
                             report, sizeof report));
    cr_assert(!tg_test_close(x->grad, off, F32.rtol, F32.atol, true, report,
                             sizeof report));
    tg_release(off);
    tg_release(right);
    tg_release(wrong);
    tg_release(out);
    tg_release(x);
    tg_release(g);
    cr_assert_eq(tg_tape_size(), 0);
}

/* The reference catches the classic mistake of a hand-written SiLU
 * backward (examples/custom_op.c): differentiating only the first x of
 * x * sigmoid(x), which gives dx = g * sigmoid(x). */
TG_TEST(grad_elementwise, silu_reference_catches_a_missing_product_rule_term)
{
    tg_tensor *x = tg_test_load_ref("grad_elementwise_unary_x_f64");
    tg_tensor *g = tg_test_load_ref("grad_elementwise_unary_g_f64");
    tg_tensor *right = tg_test_load_ref("grad_elementwise_silu_dx_f64");
    tg_tensor *s = tg_sigmoid(x);
    tg_tensor *wrong = tg_mul(g, s); // missing g * x s (1 - s)
    char report[1024];
    cr_assert(!tg_test_close(wrong, right, F64.rtol, F64.atol, true, report,
                             sizeof report));
    tg_release(wrong);
    tg_release(s);
    tg_release(right);
    tg_release(g);
    tg_release(x);
}

/* -------------------------------------- PyTorch's conventions, exactly */

/* f(x) with g = 1 for every element: dx is f' (the convention) itself. */
static void unary_slopes(unary_fn f, tg_tensor *x, tg_tensor *expected)
{
    requires_grad(x);
    tg_tensor *out = f(x);
    tg_tensor *ones = tg_ones_like(out);
    backward_with(out, ones);
    assert_grad_exact(x, expected);
    tg_release(ones);
    tg_release(out);
    tg_release(x);
    tg_release(expected);
    cr_assert_eq(tg_tape_size(), 0);
}

/* f(a, b) with g = 1: da and db. */
static void binary_slopes(binary_fn f, tg_tensor *a, tg_tensor *b,
                          tg_tensor *da, tg_tensor *db)
{
    requires_grad(a);
    requires_grad(b);
    tg_tensor *out = f(a, b);
    tg_tensor *ones = tg_ones_like(out);
    backward_with(out, ones);
    assert_grad_exact(a, da);
    assert_grad_exact(b, db);
    tg_release(ones);
    tg_release(out);
    tg_release(a);
    tg_release(b);
    tg_release(da);
    tg_release(db);
    cr_assert_eq(tg_tape_size(), 0);
}

TG_TEST(grad_elementwise, relu_and_abs_at_zero_and_nan)
{
    /* torch: relu'(x) for x = -1, 0, -0, 1, NaN is 0, 0, 0, 1, 1 (NaN
     * passes: threshold_backward zeroes only where out <= 0); abs' is
     * sgn: -1, 0, 0, 1, and 0 at NaN. */
    unary_slopes(tg_relu, VEC64(-1, 0, -0.0, 1, NAN), VEC64(0, 0, 0, 1, 1));
    unary_slopes(tg_abs, VEC64(-1, 0, -0.0, 1, NAN), VEC64(-1, 0, 0, 1, 0));
}

TG_TEST(grad_elementwise, relu_zeroes_an_infinite_gradient_exactly)
{
    /* where(out <= 0, 0, g), not g * mask: an inf gradient gives 0, not
     * NaN, where relu is off (as torch) */
    tg_tensor *x = VEC64(-1, 2);
    requires_grad(x);
    tg_tensor *out = tg_relu(x);
    tg_tensor *g = VEC64(INFINITY, INFINITY);
    backward_with(out, g);
    tg_tensor *e = VEC64(0, INFINITY);
    assert_grad_exact(x, e);
    tg_release(e);
    tg_release(g);
    tg_release(out);
    tg_release(x);
}

TG_TEST(grad_elementwise, maximum_and_minimum_split_ties)
{
    /* torch.maximum(a, b) for a = 1, 2, 3, NaN, 1 and b = 1, 3, 2, 1, NaN:
     * da = 0.5, 0, 1, 1, 1 and db = 0.5, 1, 0, 1, 1 (a NaN on either side
     * gives both the whole gradient); minimum mirrors the 0 and 1. */
    binary_slopes(tg_maximum, VEC64(1, 2, 3, NAN, 1), VEC64(1, 3, 2, 1, NAN),
                  VEC64(0.5, 0, 1, 1, 1), VEC64(0.5, 1, 0, 1, 1));
    binary_slopes(tg_minimum, VEC64(1, 2, 3, NAN, 1), VEC64(1, 3, 2, 1, NAN),
                  VEC64(0.5, 1, 0, 1, 1), VEC64(0.5, 0, 1, 1, 1));
}

TG_TEST(grad_elementwise, maximum_tie_through_broadcasting)
{
    /* b = 2 is broadcast over a = (2, 2, 5): ties give each side 1/2 of
     * g, and b collects its share from every element */
    tg_tensor *a = VEC64(2, 2, 5);
    tg_tensor *b = tg_scalar(2.0, TG_FLOAT64);
    binary_slopes(tg_maximum, a, b, VEC64(0.5, 0.5, 1),
                  tg_scalar(1.0, TG_FLOAT64));
}

TG_TEST(grad_elementwise, clamp_passes_at_the_bounds)
{
    /* torch: x.clamp(0, 1) for x = -1, 0, 0.5, 1, 2, NaN: 0, 1, 1, 1, 0, 0
     * (the bounds are inside); clamp(min=0): 0, 1, 1, 1, 1, 0 (NaN gets
     * nothing even with one side open); lo > hi: all 0. */
    tg_tensor *x = VEC64(-1, 0, 0.5, 1, 2, NAN);
    tg_tensor *e = VEC64(0, 1, 1, 1, 0, 0);
    requires_grad(x);
    tg_tensor *out = tg_clamp(x, 0, 1);
    tg_tensor *ones = tg_ones_like(out);
    backward_with(out, ones);
    assert_grad_exact(x, e);
    tg_release(out);
    tg_release(e);

    tg_clear_grad(x);
    out = tg_clamp(x, 0, INFINITY);
    backward_with(out, ones);
    e = VEC64(0, 1, 1, 1, 1, 0);
    assert_grad_exact(x, e);
    tg_release(out);
    tg_release(e);

    tg_clear_grad(x);
    out = tg_clamp(x, -INFINITY, 0.5);
    backward_with(out, ones);
    e = VEC64(1, 1, 1, 0, 0, 0);
    assert_grad_exact(x, e);
    tg_release(out);
    tg_release(e);

    tg_clear_grad(x);
    out = tg_clamp(x, 1, 0);
    backward_with(out, ones);
    e = tg_zeros_like(x);
    assert_grad_exact(x, e);
    tg_release(out);
    tg_release(e);
    tg_release(ones);
    tg_release(x);
    cr_assert_eq(tg_tape_size(), 0);
}

TG_TEST(grad_elementwise, pow_at_zero_and_negative_bases)
{
    /* torch, a ** b for a = 0, 0, 0, 0, -2, -2, 2 and b = 2, 0.5, 0, -1,
     * 0.5, 2, 0:
     *   da = 0, inf, 0 (b == 0), -inf, NaN, -4, 0 (b == 0)
     *   db = 0, 0 (a == 0, b >= 0), 0, -inf, NaN, NaN (ln -2), ln 2 */
    binary_slopes(tg_pow, VEC64(0, 0, 0, 0, -2, -2, 2),
                  VEC64(2, 0.5, 0, -1, 0.5, 2, 0),
                  VEC64(0, INFINITY, 0, -INFINITY, NAN, -4, 0),
                  VEC64(0, 0, 0, -INFINITY, NAN, NAN, log(2.0)));
}

TG_TEST(grad_elementwise, pow_scalar_at_zero)
{
    /* torch: x ** 0 has gradient 0 everywhere (a zero tensor, not none),
     * x ** 0.5 at 0 is inf, x ** -1 at 0 is -inf, x ** 2 at 0 is 0,
     * x ** 1 at 0 is 1 (1 * 0^0) */
    unary_slopes(pow2, VEC64(0, -1), VEC64(0, -2));
    unary_slopes(pow05, VEC64(0, 1), VEC64(INFINITY, 0.5));
    unary_slopes(powm1, VEC64(0, 1), VEC64(-INFINITY, -1));

    tg_tensor *x = VEC64(0, 1, -2);
    requires_grad(x);
    tg_tensor *p0 = tg_pow_scalar(x, 0.0);
    tg_tensor *p1 = tg_pow_scalar(x, 1.0);
    tg_tensor *ones = tg_ones_like(x);
    backward_with(p0, ones);
    tg_tensor *zeros = tg_zeros_like(x);
    assert_grad_exact(x, zeros); // present, and zero
    backward_with(p1, ones);     // accumulates: 0 + 1
    assert_grad_exact(x, ones);
    tg_release(zeros);
    tg_release(ones);
    tg_release(p0);
    tg_release(p1);
    tg_release(x);
    cr_assert_eq(tg_tape_size(), 0);
}

TG_TEST(grad_elementwise, domain_edges_of_the_unary_ops)
{
    /* torch: sqrt' and log' at 0 are inf, rsqrt' at 0 is -inf, log' at -1
     * is -1 (1 / x, though log(-1) is NaN) */
    unary_slopes(tg_sqrt, VEC64(0, 1), VEC64(INFINITY, 0.5));
    unary_slopes(tg_rsqrt, VEC64(0, 1), VEC64(-INFINITY, -0.5));
    unary_slopes(tg_log, VEC64(0, -1), VEC64(INFINITY, -1));
}

/* s / x, PyTorch's __rtruediv__: the reference catches the classic sign
 * slip (d/dx s/x = +s/x^2), and a few slopes match torch:
 * x = torch.tensor([2., -0.5, 4.], requires_grad=True); (2.5 / x).sum()
 * .backward() gives x.grad = [-0.625, -10, -0.15625]. */
TG_TEST(grad_elementwise, rdiv_scalar_sign_and_slopes)
{
    tg_tensor *x = tg_test_load_ref("grad_elementwise_unary_x_f64");
    tg_tensor *g = tg_test_load_ref("grad_elementwise_unary_g_f64");
    requires_grad(x);
    tg_tensor *out = tg_rdiv_scalar(x, 2.5);
    backward_with(out, g);
    tg_tensor *right = tg_test_load_ref("grad_elementwise_rdiv_scalar_dx_f64");
    tg_tensor *flipped = tg_neg(right);
    char report[1024];
    cr_assert(tg_test_close(x->grad, right, F64.rtol, F64.atol, true, report,
                            sizeof report),
              "%s", report);
    cr_assert(!tg_test_close(x->grad, flipped, F64.rtol, F64.atol, true,
                             report, sizeof report));
    tg_release(flipped);
    tg_release(right);
    tg_release(out);
    tg_release(x);
    tg_release(g);

    tg_tensor *v = VEC64(2, -0.5, 4);
    requires_grad(v);
    tg_tensor *y = tg_rdiv_scalar(v, 2.5);
    tg_tensor *loss = tg_sum(y, NULL, 0, false);
    cr_assert_eq(tg_backward(loss), 0);
    const double *dv = tg_data_f64(v->grad);
    cr_assert(dv[0] == -0.625 && dv[1] == -10.0 && dv[2] == -0.15625,
              "%g %g %g", dv[0], dv[1], dv[2]);
    tg_release(loss);
    tg_release(y);
    tg_release(v);
    cr_assert_eq(tg_tape_size(), 0);
}

TG_TEST(grad_elementwise, div_by_zero)
{
    /* torch: a / b for a = 1, 0, 1 and b = 0, 0, 2: da = inf, inf, 0.5
     * and db = -inf, NaN (0/0), -0.25 */
    binary_slopes(tg_div, VEC64(1, 0, 1), VEC64(0, 0, 2),
                  VEC64(INFINITY, INFINITY, 0.5),
                  VEC64(-INFINITY, NAN, -0.25));
}

TG_TEST(grad_elementwise, saturated_activations_have_zero_slope)
{
    /* sigmoid(-800) = 0 and tanh(20) = 1 in float64: both slopes are 0,
     * not NaN; at 0 they are 1/4 and 1 (torch) */
    unary_slopes(tg_sigmoid, VEC64(0, -800, 800), VEC64(0.25, 0, 0));
    unary_slopes(tg_tanh, VEC64(0, 20, -20), VEC64(1, 0, 0));
}

TG_TEST(grad_elementwise, gelu_slopes_match_torch)
{
    /* torch 1.13, float64, gelu'(x) at x = -1, 0, 2; exact and tanh. The
     * C code evaluates the same formulas in another arrangement, so
     * within a few float64 roundings. */
    const double exact[] = {-0.08331547058768635, 0.5, 1.085231801078197};
    const double approx[] = {-0.08296408384578252, 0.5, 1.0860992566236183};
    for (int k = 0; k < 2; k++) {
        tg_tensor *x = VEC64(-1, 0, 2);
        requires_grad(x);
        tg_tensor *out = tg_gelu(x, k == 0 ? TG_GELU_EXACT : TG_GELU_TANH);
        tg_tensor *ones = tg_ones_like(out);
        backward_with(out, ones);
        tg_tensor *e = vec64(k == 0 ? exact : approx, 3);
        tg_assert_close(x->grad, e, 1e-14, 0);
        tg_release(e);
        tg_release(ones);
        tg_release(out);
        tg_release(x);
    }
    cr_assert_eq(tg_tape_size(), 0);
}

TG_TEST(grad_elementwise, gelu_slope_in_the_tails)
{
    /* Far out, gelu' is 0 (left) or 1 (right), with no NaN from inf / inf
     * or 0 * inf in either form; float32 too */
    for (int k = 0; k < 2; k++) {
        for (int d = 0; d < 2; d++) {
            tg_dtype dtype = d == 0 ? TG_FLOAT64 : TG_FLOAT32;
            tg_tensor *x64 = VEC64(-40, -12, 12, 40);
            tg_tensor *x = tg_to_dtype(x64, dtype);
            tg_release(x64);
            requires_grad(x);
            tg_tensor *out = tg_gelu(x, k == 0 ? TG_GELU_EXACT : TG_GELU_TANH);
            tg_tensor *ones = tg_ones_like(out);
            backward_with(out, ones);
            tg_tensor *e64 = VEC64(0, 0, 1, 1);
            tg_tensor *e = tg_to_dtype(e64, dtype);
            tg_assert_close(x->grad, e, 0, 1e-20);
            tg_release(e64);
            tg_release(e);
            tg_release(ones);
            tg_release(out);
            tg_release(x);
        }
    }
    cr_assert_eq(tg_tape_size(), 0);
}

TG_TEST(grad_elementwise, silu_slopes_match_torch)
{
    /* torch 1.13, float64, silu'(x) at x = -1, 0, 2, -20, 30: the same
     * formula, s (1 + x (1 - s)), so within a few float64 roundings */
    tg_tensor *x = VEC64(-1, 0, 2, -20, 30);
    requires_grad(x);
    tg_tensor *out = tg_silu(x);
    tg_tensor *ones = tg_ones_like(out);
    backward_with(out, ones);
    tg_tensor *e = VEC64(0.07232948812851325, 0.5, 1.0907842487848955,
                         -3.9161918660646786e-08, 1.000000000002711);
    tg_assert_close(x->grad, e, 1e-14, 0);
    tg_release(e);
    tg_release(ones);
    tg_release(out);
    tg_release(x);
    cr_assert_eq(tg_tape_size(), 0);
}

TG_TEST(grad_elementwise, silu_slope_at_the_ends)
{
    /* silu'(x) -> 0 as x -> -inf and -> 1 as x -> +inf: torch 1.13 gives
     * -0 at -1000 and 1 at 1000 in float32 and float64, NaN at NaN, but
     * NaN at +-inf too (s (1 + x (1 - s)) meets inf * 0); here the limits
     * -0 and 1 */
    for (int d = 0; d < 2; d++) {
        tg_dtype dtype = d == 0 ? TG_FLOAT64 : TG_FLOAT32;
        tg_tensor *x64 = VEC64(-INFINITY, -1000, 1000, INFINITY, NAN);
        tg_tensor *x = tg_to_dtype(x64, dtype);
        tg_release(x64);
        requires_grad(x);
        tg_tensor *out = tg_silu(x);
        tg_tensor *ones = tg_ones_like(out);
        backward_with(out, ones);
        tg_tensor *e64 = VEC64(-0.0, -0.0, 1, 1, NAN);
        tg_tensor *e = tg_to_dtype(e64, dtype);
        assert_grad_exact(x, e);
        tg_release(e64);
        tg_release(e);
        tg_release(ones);
        tg_release(out);
        tg_release(x);
    }
    cr_assert_eq(tg_tape_size(), 0);
}

TG_TEST(grad_elementwise, where_routes_to_the_chosen_side)
{
    /* torch: where([T, F], a, b) gives da = 1, 0 and db = 0, 1; a NaN in
     * the unchosen side does not leak into the gradient */
    tg_tensor *a = VEC64(1, NAN);
    tg_tensor *b = VEC64(NAN, 4);
    tg_tensor *cond = tg_from_array((const int64_t[]){1, 0}, (int64_t[]){2},
                                    1, TG_INT64);
    requires_grad(a);
    requires_grad(b);
    tg_tensor *out = tg_where(cond, a, b);
    tg_tensor *ones = tg_ones_like(out);
    backward_with(out, ones);
    tg_tensor *da = VEC64(1, 0), *db = VEC64(0, 1);
    assert_grad_exact(a, da);
    assert_grad_exact(b, db);
    tg_release(da);
    tg_release(db);
    tg_release(ones);
    tg_release(out);
    tg_release(cond);
    tg_release(a);
    tg_release(b);
    cr_assert_eq(tg_tape_size(), 0);
}

/* ------------------------------------------------------- what records */

TG_TEST(grad_elementwise, comparisons_and_float_conditions_record_nothing)
{
    tg_tensor *x = VEC64(1, 2, 3);
    tg_tensor *y = VEC64(3, 2, 1);
    requires_grad(x);
    binary_fn cmp[] = {tg_eq, tg_ne, tg_lt, tg_le, tg_gt, tg_ge};
    for (size_t i = 0; i < sizeof cmp / sizeof *cmp; i++) {
        tg_tensor *c = cmp[i](x, y);
        cr_assert_not_null(c);
        cr_assert_eq(c->dtype, TG_INT64);
        cr_assert(!c->requires_grad);
        cr_assert_null(tg_grad_fn_name(c));
        tg_release(c);
    }
    tg_tensor *c = tg_gt_scalar(x, 1.5);
    cr_assert_null(tg_grad_fn_name(c));
    tg_release(c);
    cr_assert_eq(tg_tape_size(), 0);

    /* A float condition that requires grad gets none, and makes nothing
     * require grad when a and b do not (where is not differentiable in
     * cond). */
    tg_tensor *out = tg_where(x, y, y);
    cr_assert(!out->requires_grad);
    cr_assert_null(tg_grad_fn_name(out));
    tg_release(out);
    out = tg_where(x, x, y); // x as a value: one node, grad only to x
    cr_assert_str_eq(tg_grad_fn_name(out), "WhereBackward0");
    tg_tensor *ones = tg_ones_like(out);
    backward_with(out, ones);
    assert_grad_exact(x, ones); // x != 0 everywhere: all from a
    tg_release(ones);
    tg_release(out);
    tg_release(x);
    tg_release(y);
    cr_assert_eq(tg_tape_size(), 0);
}

TG_TEST(grad_elementwise, no_grad_records_nothing)
{
    tg_tensor *x = VEC64(0.5, 1.5);
    requires_grad(x);
    tg_no_grad_begin();
    for (size_t i = 0; i < NUNARY; i++) {
        tg_tensor *out = UNARY[i].f(x);
        cr_assert_not_null(out);
        cr_assert(!out->requires_grad, "%s", UNARY[i].name);
        tg_release(out);
    }
    for (size_t i = 0; i < NBINARY; i++) {
        tg_tensor *out = BINARY[i].f(x, x);
        cr_assert(!out->requires_grad, "%s", BINARY[i].name);
        tg_release(out);
    }
    tg_no_grad_end();
    cr_assert_eq(tg_tape_size(), 0);
    tg_release(x);
}

TG_TEST(grad_elementwise, same_tensor_as_both_operands)
{
    /* d/dx f(x, x), both paths added: x - x -> 1 - 1 = 0; x / x ->
     * 1/x - x/x^2 = 0; x ** x -> x x^(x-1) + x^x ln x = x^x (1 + ln x);
     * maximum(x, x) and minimum(x, x) -> 1/2 + 1/2 (a tie) */
    const double v0 = 0.5, v1 = 2;
    const struct {
        binary_fn f;
        double d[2];
    } cases[] = {
        {tg_sub, {0, 0}},
        {tg_div, {0, 0}},
        {tg_pow, {pow(v0, v0) * (1 + log(v0)), pow(v1, v1) * (1 + log(v1))}},
        {tg_maximum, {1, 1}},
        {tg_minimum, {1, 1}},
    };
    tg_tensor *x = vec64((const double[]){v0, v1}, 2);
    requires_grad(x);
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        tg_clear_grad(x);
        tg_tensor *out = cases[i].f(x, x);
        tg_tensor *ones = tg_ones_like(out);
        backward_with(out, ones);
        tg_tensor *e = vec64(cases[i].d, 2);
        tg_assert_close(x->grad, e, 1e-14, 0);
        tg_release(e);
        tg_release(ones);
        tg_release(out);
    }
    tg_release(x);
    cr_assert_eq(tg_tape_size(), 0);
}

TG_TEST(grad_elementwise, gradients_take_each_input_dtype)
{
    /* float32 a with float64 b: the op computes in float64, and each
     * gradient comes back in its input's dtype, equal to the all-float64
     * gradient (a's rounded once). One exception, as in PyTorch: pow's db
     * = g * out * ln(a) takes ln of the float32 a in float32, so b's
     * gradient is within float32 rounding (rtol 1e-6) of the float64 one. */
    for (size_t i = 0; i < NBINARY; i++) {
        const struct binary_case *c = &BINARY[i];
        tg_tensor *a32 = load("grad_elementwise_%s_a_%s", c->inputs, "f32");
        tg_tensor *b64 = load("grad_elementwise_%s_b_%s", c->inputs, "f64");
        tg_tensor *a64 = tg_to_dtype(a32, TG_FLOAT64);
        tg_tensor *g = tg_test_load_ref("grad_elementwise_binary_g_f64");
        tg_tensor *b64c = tg_clone(b64);
        requires_grad(a32);
        requires_grad(b64);
        requires_grad(a64);
        requires_grad(b64c);
        tg_tensor *mixed = c->f(a32, b64);
        tg_tensor *pure = c->f(a64, b64c);
        cr_assert_eq(mixed->dtype, TG_FLOAT64);
        backward_with(mixed, g);
        backward_with(pure, g);
        cr_assert_eq(a32->grad->dtype, TG_FLOAT32, "%s", c->name);
        cr_assert_eq(b64->grad->dtype, TG_FLOAT64, "%s", c->name);
        tg_tensor *da = tg_to_dtype(a64->grad, TG_FLOAT32);
        tg_assert_close(a32->grad, da, 0, 0);
        tg_assert_close(b64->grad, b64c->grad, c->f == tg_pow ? 1e-6 : 0, 0);
        tg_release(da);
        tg_release(mixed);
        tg_release(pure);
        tg_release(a32);
        tg_release(b64);
        tg_release(a64);
        tg_release(b64c);
        tg_release(g);
    }
    cr_assert_eq(tg_tape_size(), 0);
}

TG_TEST(grad_elementwise, a_chain_of_ops)
{
    /* L = sum(sigmoid(x) * exp(-x)), with sigmoid(x) e^-x = 1 / (e^x + 1)
     * so dL/dx = -e^x / (e^x + 1)^2 = -sigmoid(x) (1 - sigmoid(x)) */
    const double v[] = {-2, -0.5, 0, 0.75, 3};
    tg_tensor *x = vec64(v, 5);
    requires_grad(x);
    tg_tensor *s = tg_sigmoid(x), *nx = tg_neg(x);
    tg_tensor *e = tg_exp(nx);
    tg_tensor *p = tg_mul(s, e);
    tg_tensor *ones = tg_ones_like(p);
    backward_with(p, ones);
    double want[5];
    for (int i = 0; i < 5; i++) {
        double sg = 1 / (1 + exp(-v[i]));
        want[i] = -sg * (1 - sg);
    }
    tg_tensor *w = vec64(want, 5);
    tg_assert_close(x->grad, w, 1e-14, 1e-16);
    tg_release(w);
    tg_release(ones);
    tg_release(p);
    tg_release(e);
    tg_release(nx);
    tg_release(s);
    tg_release(x);
    cr_assert_eq(tg_tape_size(), 0);
}

/* ------------------------------------------------------------- errors */

TG_TEST(grad_elementwise, silu_saves_its_input)
{
    /* silu saves x (and recomputes sigmoid(x) in backward): changing x in
     * place before backward is caught by the version counter */
    tg_tensor *x = VEC64(0.5, -1.5);
    requires_grad(x);
    tg_tensor *y = tg_silu(x);
    tg_tensor *ones = tg_ones_like(y);
    tg_no_grad_begin();
    cr_assert_eq(tg_fill_(x, 2.0), 0);
    tg_no_grad_end();
    cr_assert_eq(tg_backward_ex(y, &(tg_backward_options){.grad = ones}), -1);
    tg_assert_error("tg_backward: ", "saved by SiluBackward0",
                    "modified in place");
    cr_assert_null(x->grad);
    tg_release(ones);
    tg_release(y);
    tg_release(x);
    cr_assert_eq(tg_tape_size(), 0);
}

TG_TEST(grad_elementwise, modified_saved_output_is_caught)
{
    /* exp saves its output: changing it in place before backward is an
     * error naming the op, not a silently wrong gradient */
    tg_tensor *x = VEC64(0.5, 1.5);
    requires_grad(x);
    tg_tensor *y = tg_exp(x);
    tg_tensor *ones = tg_ones_like(y);
    tg_no_grad_begin(); // in-place writes into the graph only here
    cr_assert_eq(tg_fill_(y, 2.0), 0);
    tg_no_grad_end();
    int rc = tg_backward_ex(y, &(tg_backward_options){.grad = ones});
    cr_assert_eq(rc, -1);
    tg_assert_error("tg_backward: ", "saved by ExpBackward0",
                    "modified in place", "\n  rule: ", "\n  hint: ");
    cr_assert_null(x->grad);
    tg_release(ones);
    tg_release(y);
    tg_release(x);
    cr_assert_eq(tg_tape_size(), 0);
}

TG_TEST(grad_elementwise, null_arguments_record_nothing)
{
    tg_tensor *x = VEC64(1);
    requires_grad(x);
    cr_assert_null(tg_sub(x, NULL));
    cr_assert_null(tg_pow(NULL, x));
    cr_assert_null(tg_pow_scalar(NULL, 2.0));
    cr_assert_null(tg_where(NULL, x, x));
    cr_assert_null(tg_clamp(NULL, 0, 1));
    cr_assert_null(tg_gelu(NULL, TG_GELU_EXACT));
    cr_assert_null(tg_silu(NULL));
    cr_assert_null(tg_maximum(x, NULL));
    cr_assert_eq(tg_tape_size(), 0);
    tg_release(x);
}

/* relu and its gradient on contiguous vectors long enough for the
 * vectorised loops (67 elements: whole vectors of every width and a
 * tail) and on a strided view of them, against the rule element by
 * element: out = x < 0 ? 0 : x (NaN stays NaN, -0 stays -0), dx = out <= 0
 * ? 0 : g (an infinite g gives 0 where relu is off). */
static double relu_pattern(int64_t i)
{
    static const double v[] = {-1.5, 0.0, -0.0, 2.5, NAN, INFINITY,
                               -INFINITY, 1e-30, -1e-30};
    return v[i % 9] * (v[i % 9] == 0 || isinf(v[i % 9]) ? 1 : 1 + i);
}

static void check_relu_values(const tg_tensor *x, const tg_tensor *g,
                              const char *what)
{
    tg_tensor *xl = tg_detach(x);
    requires_grad(xl);
    tg_tensor *out = tg_relu(xl);
    backward_with(out, g);
    cr_assert_not_null(xl->grad, "%s: no gradient", what);
    int64_t n = x->numel;
    double *vx = malloc((size_t)n * sizeof *vx);
    double *vg = malloc((size_t)n * sizeof *vg);
    double *vo = malloc((size_t)n * sizeof *vo);
    double *vd = malloc((size_t)n * sizeof *vd);
    cr_assert(vx && vg && vo && vd);
    cr_assert_eq(tg_to_f64_array(x, vx), 0);
    cr_assert_eq(tg_to_f64_array(g, vg), 0);
    cr_assert_eq(tg_to_f64_array(out, vo), 0);
    cr_assert_eq(tg_to_f64_array(xl->grad, vd), 0);
    for (int64_t i = 0; i < n; i++) {
        double o = vx[i] < 0 ? 0.0 : vx[i];
        double d = o <= 0 ? 0.0 : vg[i];
        bool same_o = isnan(o) ? isnan(vo[i])
                               : vo[i] == o && signbit(vo[i]) == signbit(o);
        cr_assert(same_o, "%s: relu(%g) at %lld gave %g, expected %g", what,
                  vx[i], (long long)i, vo[i], o);
        cr_assert(vd[i] == d || (isnan(d) && isnan(vd[i])),
                  "%s: gradient at %lld (x %g, g %g) is %g, expected %g",
                  what, (long long)i, vx[i], vg[i], vd[i], d);
    }
    free(vd);
    free(vo);
    free(vg);
    free(vx);
    tg_release(out);
    tg_release(xl);
}

TG_TEST(grad_elementwise, relu_loops_follow_the_rule_on_long_vectors)
{
    enum { N = 67 };
    for (int d = 0; d < 2; d++) {
        tg_dtype dtype = d ? TG_FLOAT64 : TG_FLOAT32;
        double vx[N], vg[N];
        for (int64_t i = 0; i < N; i++) {
            vx[i] = relu_pattern(i);
            vg[i] = i % 5 == 0 ? INFINITY : (double)(i + 1);
        }
        tg_tensor *x64 = tg_from_array(vx, TG_SHAPE(N), TG_FLOAT64);
        tg_tensor *g64 = tg_from_array(vg, TG_SHAPE(N), TG_FLOAT64);
        tg_tensor *x = tg_to_dtype(x64, dtype);
        tg_tensor *g = tg_to_dtype(g64, dtype);
        check_relu_values(x, g, d ? "float64" : "float32");
        tg_tensor *xs = tg_test_non_contiguous(x, true);
        tg_tensor *gs = tg_test_non_contiguous(g, true);
        check_relu_values(xs, gs, d ? "float64 strided" : "float32 strided");
        tg_release(gs);
        tg_release(xs);
        tg_release(g);
        tg_release(x);
        tg_release(g64);
        tg_release(x64);
    }
    cr_assert_eq(tg_tape_size(), 0);
}
