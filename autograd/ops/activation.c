/*
 * autograd/ops/activation.c - the activation functions: tanh, sigmoid,
 * relu, gelu (exact and tanh-approximated) and silu, forward and backward.
 *
 * Each forward is one loop per compute dtype run through tg_unary_apply.
 * tanh, sigmoid and relu differentiate through their output (saved), gelu
 * and silu through their input with a loop of their own. Not here: softmax
 * and log_softmax (softmax.c, they reduce over a dim) and the plain maths
 * functions (unary.c).
 *
 * Dtypes: relu keeps int64; tanh, sigmoid and gelu turn int64 into float32
 * first, as torch.tanh does (PyTorch has no int64 gelu at all); silu
 * refuses int64, as torch.nn.functional.silu does.
 *
 * The formulas are arranged so that no input, however large, gives NaN
 * where the true value is finite: see sigmoid, the gelu tails and silu
 * below. docs/adding-an-op.md walks through silu as the model of an op.
 */
#include "../internal.h"
#include "../kernels/activation_fast.h"

#include <math.h>

static const double SQRT1_2 = 0.70710678118654752440;       // 1 / sqrt(2)
static const double SQRT_2_OVER_PI = 0.79788456080286535588; // sqrt(2 / pi)
static const double RSQRT_2PI = 0.39894228040143267794;      // 1 / sqrt(2 pi)

/* Records op for out = f(x) with out saved: the derivatives of tanh,
 * sigmoid and relu are simplest in terms of their output. */
static tg_tensor *record_saving_out(const tg_op *op, tg_tensor *out,
                                    const tg_tensor *x)
{
    tg_node *node = tg_record(op, &out, TG_INPUTS(x));
    if (node)
        tg_node_save(node, out);
    return out;
}

/* --------------------------------------------------------------- tanh */
/* out = tanh(x) = (e^x - e^-x) / (e^x + e^-x), saturating to +-1.
 * The reference kernel is C's tanh. On float32 the fast kernels run
 * autograd/kernels/activation_fast.c instead: the same function computed
 * in double and rounded once, in a loop the compiler vectorises (C's
 * tanhf is a call per element, and the slower of the two). */
TG_UNARY_LOOP(tanh_f32_ref, float, float, tanhf(a))
TG_UNARY_LOOP(tanh_f64, double, double, tanh(a))

static const tg_elementwise_kernel tanh_kernel = {tg_tanh_f32_fast,
                                                  tanh_f64, NULL, false};
static const tg_elementwise_kernel tanh_ref_kernel = {tanh_f32_ref, tanh_f64,
                                                      NULL, false};

/* forward: out = tanh(x), so dx = g * (1 - tanh(x)^2) = g * (1 - out^2).
 * The fast kernels take it in one loop (the same operations on the same
 * values as the three ops below: the same bits), the reference kernels as
 * written. saved: out */
TG_BINARY_LOOP_CLONES(tanh_grad_f32, float, float, b * (1.0f - a * a))
TG_BINARY_LOOP_CLONES(tanh_grad_f64, double, double, b * (1.0 - a * a))
static const tg_elementwise_kernel tanh_grad_kernel = {
    tanh_grad_f32, tanh_grad_f64, NULL, false};

static int tanh_backward(tg_node *node, const tg_tensor *g, tg_tensor **grads)
{
    const tg_tensor *out = tg_node_saved(node, 0);
    if (!tg_use_reference_kernels()) {
        grads[0] = tg_binary_apply("tg_tanh", &tanh_grad_kernel, out, g,
                                   NULL);
        return grads[0] ? 0 : -1;
    }
    tg_tensor *sq = tg_mul(out, out);
    tg_tensor *slope = tg_rsub_scalar(sq, 1.0);
    grads[0] = tg_mul(g, slope);
    tg_release(sq);
    tg_release(slope);
    return grads[0] ? 0 : -1;
}
static const tg_op tanh_op = {"TanhBackward0", tanh_backward, 0};

tg_tensor *tg_tanh(const tg_tensor *x)
{
    /* chosen here, on the calling thread: the kernels setting is the
     * thread's own */
    const tg_elementwise_kernel *k =
        tg_use_reference_kernels() ? &tanh_ref_kernel : &tanh_kernel;
    return record_saving_out(&tanh_op, tg_unary_apply("tg_tanh", k, x, NULL),
                             x);
}

/* ------------------------------------------------------------ sigmoid */
/* out = 1 / (1 + e^-x).
 * The textbook form is fine for x >= 0, where e^-x <= 1. For x < 0, e^-x
 * overflows (to inf at x = -89 in float32) and the result leans on 1/inf;
 * the equal form e^x / (1 + e^x) keeps every quantity in [0, 1] and gives
 * the tiny true value (e^-100 ~ 3.7e-44, a float32 subnormal) instead of
 * 0. NaN takes the second branch and stays NaN. */
static float sigmoid_f(float x)
{
    if (x >= 0)
        return 1.0f / (1.0f + expf(-x));
    float e = expf(x);
    return e / (1.0f + e);
}

static double sigmoid_d(double x)
{
    if (x >= 0)
        return 1.0 / (1.0 + exp(-x));
    double e = exp(x);
    return e / (1.0 + e);
}

/* s = sigmoid(x) and s1 = 1 - s, for the slopes of gelu's tanh form and of
 * silu. 1 - s computed as a difference would lose every digit once s is
 * near 1 (x > 37 in float64); each is a quotient of positive numbers here,
 * with the e^-|x| <= 1 of sigmoid_d. */
static void sigmoid_split(double x, double *s, double *s1)
{
    if (x >= 0) {
        double e = exp(-x);
        *s = 1.0 / (1.0 + e);
        *s1 = e / (1.0 + e);
    } else {
        double e = exp(x);
        *s = e / (1.0 + e);
        *s1 = 1.0 / (1.0 + e);
    }
}

TG_UNARY_LOOP(sigmoid_f32, float, float, sigmoid_f(a))
TG_UNARY_LOOP(sigmoid_f64, double, double, sigmoid_d(a))
static const tg_elementwise_kernel sigmoid_kernel = {sigmoid_f32, sigmoid_f64,
                                                     NULL, false};

/* forward: out = 1 / (1 + e^-x), so dx = g * out * (1 - out), computed
 * as PyTorch's g * (1 - out) * out. saved: out */
static int sigmoid_backward(tg_node *node, const tg_tensor *g,
                            tg_tensor **grads)
{
    const tg_tensor *out = tg_node_saved(node, 0);
    tg_tensor *rest = tg_rsub_scalar(out, 1.0);
    tg_tensor *gr = tg_mul(g, rest);
    grads[0] = tg_mul(gr, out);
    tg_release(rest);
    tg_release(gr);
    return grads[0] ? 0 : -1;
}
static const tg_op sigmoid_op = {"SigmoidBackward0", sigmoid_backward, 0};

tg_tensor *tg_sigmoid(const tg_tensor *x)
{
    return record_saving_out(
        &sigmoid_op, tg_unary_apply("tg_sigmoid", &sigmoid_kernel, x, NULL),
        x);
}

/* --------------------------------------------------------------- relu */
/* out = max(x, 0). Written as x < 0 ? 0 : x so that NaN stays NaN and -0
 * stays -0, as torch.relu. */
/* The float loops run on every activation of a training step: their
 * contiguous loops get a copy for each CPU width (TG_UNARY_LOOP_CLONES). */
TG_UNARY_LOOP_CLONES(relu_f32, float, float, a < 0 ? 0.0f : a)
TG_UNARY_LOOP_CLONES(relu_f64, double, double, a < 0 ? 0.0 : a)
TG_UNARY_LOOP(relu_i64, int64_t, int64_t, a < 0 ? 0 : a)
static const tg_elementwise_kernel relu_kernel = {relu_f32, relu_f64,
                                                  relu_i64, false};

/* forward: out = max(x, 0), so dx = g where out > 0 and 0 elsewhere:
 * relu'(0) = 0, the subgradient PyTorch picks. Written as PyTorch's
 * threshold_backward, out <= 0 ? 0 : g, so a NaN input passes g on (NaN
 * <= 0 is false) and an infinite g stays out of the zeroed places (no
 * 0 * inf). saved: out */
TG_BINARY_LOOP_CLONES(relu_grad_f32, float, float, a <= 0 ? 0.0f : b)
TG_BINARY_LOOP_CLONES(relu_grad_f64, double, double, a <= 0 ? 0.0 : b)
static const tg_elementwise_kernel relu_grad_kernel = {
    relu_grad_f32, relu_grad_f64, NULL, false};

/* The same as tg_where(tg_le_scalar(out, 0), 0, g), the plain form kept
 * for the reference kernels, in one loop and one allocation instead of
 * four. */
static int relu_backward(tg_node *node, const tg_tensor *g, tg_tensor **grads)
{
    const tg_tensor *out = tg_node_saved(node, 0);
    if (!tg_use_reference_kernels()) {
        grads[0] = tg_binary_apply("tg_relu", &relu_grad_kernel, out, g,
                                   NULL);
        return grads[0] ? 0 : -1;
    }
    tg_tensor *off = tg_le_scalar(out, 0.0);
    tg_tensor *zero = tg_scalar(0.0, g->dtype);
    grads[0] = tg_where(off, zero, g);
    tg_release(off);
    tg_release(zero);
    return grads[0] ? 0 : -1;
}
static const tg_op relu_op = {"ReluBackward0", relu_backward, 0};

tg_tensor *tg_relu(const tg_tensor *x)
{
    return record_saving_out(
        &relu_op, tg_unary_apply("tg_relu", &relu_kernel, x, NULL), x);
}

/* --------------------------------------------------------------- gelu */
/* Exact:  out = x * Phi(x) = 0.5 * x * (1 + erf(x / sqrt(2)))
 * Tanh:   out = 0.5 * x * (1 + tanh(u)),  u = sqrt(2/pi) * (x + 0.044715 x^3)
 *
 * Both forms cancel catastrophically for negative x: 1 + erf(-3.5) is
 * 1 - 0.9999993, and in float32 that leaves one or two correct digits
 * (PyTorch's float32 gelu(-5) is off by 4%). The same quantities without
 * the subtraction:
 *     1 + erf(z)  = erfc(-z)
 *     1 + tanh(u) = 2 / (1 + e^(-2u)),  so the tanh form is x / (1 + e^(-2u))
 * For very negative x, e^(-2u) overflows to inf and x / inf gives -0, the
 * correctly rounded limit.
 * float32 inputs are evaluated in double and rounded once: in the tails
 * the result's relative error is about (argument's relative error) * z^2,
 * and a float32 argument would cost several ulp. */
static double gelu_exact(double x)
{
    return 0.5 * x * erfc(-x * SQRT1_2);
}

static double gelu_tanh(double x)
{
    double u = SQRT_2_OVER_PI * (x + 0.044715 * x * x * x);
    return x / (1.0 + exp(-2.0 * u));
}

TG_UNARY_LOOP(gelu_exact_f32, float, float, gelu_exact((double)a))
TG_UNARY_LOOP(gelu_exact_f64, double, double, gelu_exact(a))
TG_UNARY_LOOP(gelu_tanh_f32, float, float, gelu_tanh((double)a))
TG_UNARY_LOOP(gelu_tanh_f64, double, double, gelu_tanh(a))
static const tg_elementwise_kernel gelu_exact_kernel = {
    gelu_exact_f32, gelu_exact_f64, NULL, false};
static const tg_elementwise_kernel gelu_tanh_kernel = {
    gelu_tanh_f32, gelu_tanh_f64, NULL, false};

/* forward (exact): out = x * Phi(x), so
 *   dx = g * (Phi(x) + x * phi(x)),  phi(x) = e^(-x^2/2) / sqrt(2 pi)
 * forward (tanh): out = 0.5 x (1 + tanh(u)), u = sqrt(2/pi) (x + k x^3),
 * k = 0.044715, so with t = tanh(u)
 *   dx = g * (0.5 (1 + t) + 0.5 x (1 - t^2) sqrt(2/pi) (1 + 3 k x^2))
 * These are PyTorch's GeluBackward0 formulas. As in the forward, the
 * cancelling sums are rewritten: Phi(x) = 0.5 erfc(-x / sqrt 2), and with
 * s = 1 / (1 + e^(-2u)) (so 0.5 (1 + t) = s and 1 - t^2 = 4 s (1 - s))
 *   dx = g * (s + 2 x s (1 - s) sqrt(2/pi) (1 + 3 k x^2)),
 * where s and 1 - s are both formed without a subtraction. float32 inputs
 * are evaluated in double and rounded once.
 * saved: x; ctx: the approximation */
static double gelu_exact_slope(double x)
{
    return 0.5 * erfc(-x * SQRT1_2) + x * exp(-0.5 * x * x) * RSQRT_2PI;
}

static double gelu_tanh_slope(double x)
{
    double u = SQRT_2_OVER_PI * (x + 0.044715 * x * x * x);
    double s, s1; // s = 1 / (1 + e^(-2u)) = sigmoid(2u) and s1 = 1 - s
    sigmoid_split(2.0 * u, &s, &s1);
    double du = SQRT_2_OVER_PI * (1.0 + 3.0 * 0.044715 * x * x);
    return s + 2.0 * x * s * s1 * du;
}

TG_UNARY_LOOP(gelu_exact_slope_f32, float, float,
              gelu_exact_slope((double)a))
TG_UNARY_LOOP(gelu_exact_slope_f64, double, double, gelu_exact_slope(a))
TG_UNARY_LOOP(gelu_tanh_slope_f32, float, float, gelu_tanh_slope((double)a))
TG_UNARY_LOOP(gelu_tanh_slope_f64, double, double, gelu_tanh_slope(a))
static const tg_elementwise_kernel gelu_exact_slope_kernel = {
    gelu_exact_slope_f32, gelu_exact_slope_f64, NULL, false};
static const tg_elementwise_kernel gelu_tanh_slope_kernel = {
    gelu_tanh_slope_f32, gelu_tanh_slope_f64, NULL, false};

typedef struct gelu_ctx {
    tg_gelu_approx approx;
} gelu_ctx;

static int gelu_backward(tg_node *node, const tg_tensor *g, tg_tensor **grads)
{
    bool exact = ((gelu_ctx *)tg_node_ctx(node))->approx == TG_GELU_EXACT;
    tg_tensor *slope = tg_unary_apply(
        "tg_gelu", exact ? &gelu_exact_slope_kernel : &gelu_tanh_slope_kernel,
        tg_node_saved(node, 0), NULL);
    grads[0] = tg_mul(g, slope);
    tg_release(slope);
    return grads[0] ? 0 : -1;
}
static const tg_op gelu_op = {"GeluBackward0", gelu_backward,
                              sizeof(gelu_ctx)};

tg_tensor *tg_gelu(const tg_tensor *x, tg_gelu_approx approx)
{
    if (!x)
        return NULL;
    tg_check_alive("tg_gelu", x);
    if (approx != TG_GELU_EXACT && approx != TG_GELU_TANH) {
        tg_error("tg_gelu",
                 "unknown approximation %d\n"
                 "  rule: approx must be TG_GELU_EXACT (%d) or TG_GELU_TANH "
                 "(%d)",
                 (int)approx, (int)TG_GELU_EXACT, (int)TG_GELU_TANH);
        return NULL;
    }
    tg_tensor *out = tg_unary_apply(
        "tg_gelu",
        approx == TG_GELU_EXACT ? &gelu_exact_kernel : &gelu_tanh_kernel, x,
        NULL);
    tg_node *node = tg_record(&gelu_op, &out, TG_INPUTS(x));
    if (node) {
        tg_node_save(node, x);
        ((gelu_ctx *)tg_node_ctx(node))->approx = approx;
    }
    return out;
}

/* --------------------------------------------------------------- silu */
/* out = x * sigmoid(x) (SiLU, also called swish), as
 * torch.nn.functional.silu, with sigmoid_d above: it overflows nowhere.
 * One input needs care: at x = -inf the product is -inf * 0 = NaN, while
 * x * sigmoid(x) -> 0 (from below) as x -> -inf; the limit, -0, is
 * returned (PyTorch gives NaN there).
 * float32 inputs are evaluated in double and rounded once, as in gelu:
 * silu(-100) = -3.7e-42 is a float32 subnormal, and float32 arithmetic
 * (where e^-100 is itself a subnormal with about 5 significant bits)
 * would get it wrong by several percent, or flush it to -0 as PyTorch's
 * float32 silu does. */
static double silu_value(double x)
{
    if (isinf(x) && x < 0)
        return -0.0;
    return x * sigmoid_d(x);
}

TG_UNARY_LOOP(silu_f32, float, float, silu_value((double)a))
TG_UNARY_LOOP(silu_f64, double, double, silu_value(a))
static const tg_elementwise_kernel silu_kernel = {silu_f32, silu_f64, NULL,
                                                  false};

/* forward: out = x * s with s = sigmoid(x). By the product rule, with
 * s' = s (1 - s):
 *   dx = g * (s + x s (1 - s)) = g * s * (1 + x (1 - s)),
 * PyTorch's SiluBackward0 formula. s and 1 - s come from sigmoid_split
 * (no subtraction), and at x = +-inf, where the formula meets inf * 0,
 * the limits are returned: the slope tends to 1 at +inf and to 0 (from
 * below, -0) at -inf. float32 inputs are evaluated in double and rounded
 * once.
 * saved: x. s is recomputed from it (one exp per element) rather than
 * saved too, which would keep a second tensor of x's size alive until
 * backward. */
static double silu_slope(double x)
{
    if (isinf(x))
        return x > 0 ? 1.0 : -0.0;
    double s, s1; // sigmoid(x) and 1 - sigmoid(x)
    sigmoid_split(x, &s, &s1);
    return s * (1.0 + x * s1);
}

TG_UNARY_LOOP(silu_slope_f32, float, float, silu_slope((double)a))
TG_UNARY_LOOP(silu_slope_f64, double, double, silu_slope(a))
static const tg_elementwise_kernel silu_slope_kernel = {
    silu_slope_f32, silu_slope_f64, NULL, false};

static int silu_backward(tg_node *node, const tg_tensor *g, tg_tensor **grads)
{
    tg_tensor *slope =
        tg_unary_apply("tg_silu", &silu_slope_kernel, tg_node_saved(node, 0),
                       NULL);
    grads[0] = tg_mul(g, slope);
    tg_release(slope);
    return grads[0] ? 0 : -1;
}
static const tg_op silu_op = {"SiluBackward0", silu_backward, 0};

tg_tensor *tg_silu(const tg_tensor *x)
{
    if (!x)
        return NULL;
    tg_check_alive("tg_silu", x);
    if (!tg_dtype_is_float(x->dtype)) {
        tg_error("tg_silu",
                 "cannot take silu of an %s tensor\n"
                 "  rule: x must be float32 or float64 (PyTorch has no "
                 "integer silu either)\n"
                 "  hint: convert first: tg_silu(tg_to_dtype(x, "
                 "TG_FLOAT32))",
                 tg_dtype_name(x->dtype));
        return NULL;
    }
    tg_tensor *out = tg_unary_apply("tg_silu", &silu_kernel, x, NULL);
    tg_node *node = tg_record(&silu_op, &out, TG_INPUTS(x));
    if (node)
        tg_node_save(node, x);
    return out;
}
