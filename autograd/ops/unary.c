/*
 * autograd/ops/unary.c - neg, exp, log, sqrt, rsqrt and abs: the
 * elementwise functions of one tensor that are plain maths, forward and
 * backward.
 *
 * Each forward is one loop per compute dtype run through tg_unary_apply,
 * which handles any layout (views, broadcast strides) and gives a new
 * contiguous result of x's shape. Each backward is a line or two of public
 * ops on dL/dout (x's shape, so nothing to sum); where the derivative is
 * best written with the output (exp, sqrt, rsqrt) the output is saved
 * rather than x. The squashing functions used as activations (tanh,
 * sigmoid, relu, gelu) are in activation.c.
 *
 * Dtypes, as PyTorch: neg and abs keep int64 (they are exact on integers);
 * exp, log, sqrt and rsqrt have no int64 loop, so an int64 input is
 * converted to float32 first and the result is float32.
 */
#include "../internal.h"

#include <math.h>

/* Records op for out = f(x), saving out when keep_out, else x. */
static tg_tensor *record_unary(const tg_op *op, tg_tensor *out,
                               const tg_tensor *x, bool keep_out)
{
    tg_node *node = tg_record(op, &out, TG_INPUTS(x));
    if (node)
        tg_node_save(node, keep_out ? out : x);
    return out;
}

/* ---------------------------------------------------------------- neg */
/* out = -x. In int64, -INT64_MIN wraps to INT64_MIN (two's complement, as
 * PyTorch); the negation is done in unsigned arithmetic, where wrapping is
 * defined. */
TG_UNARY_LOOP(neg_f32, float, float, -a)
TG_UNARY_LOOP(neg_f64, double, double, -a)
TG_UNARY_LOOP(neg_i64, int64_t, int64_t, (int64_t)(UINT64_C(0) - (uint64_t)a))
static const tg_elementwise_kernel neg_kernel = {neg_f32, neg_f64, neg_i64,
                                                 false};

/* forward: out = -x, so dx = -g. saved: nothing */
static int neg_backward(tg_node *node, const tg_tensor *g, tg_tensor **grads)
{
    (void)node;
    grads[0] = tg_neg(g);
    return grads[0] ? 0 : -1;
}
static const tg_op neg_op = {"NegBackward0", neg_backward, 0};

tg_tensor *tg_neg(const tg_tensor *x)
{
    tg_tensor *out = tg_unary_apply("tg_neg", &neg_kernel, x, NULL);
    tg_record(&neg_op, &out, TG_INPUTS(x));
    return out;
}

/* ---------------------------------------------------------------- exp */
/* out = e^x. Overflows to inf above ~88.7 (float32) or ~709.8 (float64),
 * goes to 0 below about -103 / -745, through subnormals. */
TG_UNARY_LOOP(exp_f32, float, float, expf(a))
TG_UNARY_LOOP(exp_f64, double, double, exp(a))
static const tg_elementwise_kernel exp_kernel = {exp_f32, exp_f64, NULL,
                                                 false};

/* forward: out = e^x, so dx = g * e^x = g * out. saved: out */
static int exp_backward(tg_node *node, const tg_tensor *g, tg_tensor **grads)
{
    grads[0] = tg_mul(g, tg_node_saved(node, 0));
    return grads[0] ? 0 : -1;
}
static const tg_op exp_op = {"ExpBackward0", exp_backward, 0};

tg_tensor *tg_exp(const tg_tensor *x)
{
    return record_unary(&exp_op,
                        tg_unary_apply("tg_exp", &exp_kernel, x, NULL), x,
                        true);
}

/* ---------------------------------------------------------------- log */
/* out = ln(x): -inf at 0, NaN for x < 0 (no error: as PyTorch, a domain
 * error is a value, not a failure). */
TG_UNARY_LOOP(log_f32, float, float, logf(a))
TG_UNARY_LOOP(log_f64, double, double, log(a))
static const tg_elementwise_kernel log_kernel = {log_f32, log_f64, NULL,
                                                 false};

/* forward: out = ln(x), so dx = g / x (inf at x = 0, as PyTorch).
 * saved: x */
static int log_backward(tg_node *node, const tg_tensor *g, tg_tensor **grads)
{
    grads[0] = tg_div(g, tg_node_saved(node, 0));
    return grads[0] ? 0 : -1;
}
static const tg_op log_op = {"LogBackward0", log_backward, 0};

tg_tensor *tg_log(const tg_tensor *x)
{
    return record_unary(&log_op,
                        tg_unary_apply("tg_log", &log_kernel, x, NULL), x,
                        false);
}

/* --------------------------------------------------------------- sqrt */
/* out = sqrt(x), correctly rounded (IEEE 754 requires it); NaN for x < 0,
 * and sqrt(-0) = -0. */
TG_UNARY_LOOP(sqrt_f32, float, float, sqrtf(a))
TG_UNARY_LOOP(sqrt_f64, double, double, sqrt(a))
static const tg_elementwise_kernel sqrt_kernel = {sqrt_f32, sqrt_f64, NULL,
                                                  false};

/* forward: out = sqrt(x), so dx = g / (2 sqrt(x)) = g / (2 out) (inf at
 * x = 0, as PyTorch). saved: out */
static int sqrt_backward(tg_node *node, const tg_tensor *g,
                         tg_tensor **grads)
{
    tg_tensor *twice = tg_mul_scalar(tg_node_saved(node, 0), 2.0);
    grads[0] = tg_div(g, twice);
    tg_release(twice);
    return grads[0] ? 0 : -1;
}
static const tg_op sqrt_op = {"SqrtBackward0", sqrt_backward, 0};

tg_tensor *tg_sqrt(const tg_tensor *x)
{
    return record_unary(&sqrt_op,
                        tg_unary_apply("tg_sqrt", &sqrt_kernel, x, NULL), x,
                        true);
}

/* -------------------------------------------------------------- rsqrt */
/* out = 1 / sqrt(x): inf at +0, -inf at -0, 0 at inf, NaN for x < 0. Two
 * roundings, so within an ulp or so of the exact value. */
TG_UNARY_LOOP(rsqrt_f32, float, float, 1.0f / sqrtf(a))
TG_UNARY_LOOP(rsqrt_f64, double, double, 1.0 / sqrt(a))
static const tg_elementwise_kernel rsqrt_kernel = {rsqrt_f32, rsqrt_f64, NULL,
                                                   false};

/* forward: out = x^(-1/2), so dx = g * (-1/2) x^(-3/2) = -0.5 g out^3
 * (-inf at x = 0, as PyTorch). saved: out */
static int rsqrt_backward(tg_node *node, const tg_tensor *g,
                          tg_tensor **grads)
{
    tg_tensor *cube = tg_pow_scalar(tg_node_saved(node, 0), 3.0);
    tg_tensor *gc = tg_mul(g, cube);
    grads[0] = tg_mul_scalar(gc, -0.5);
    tg_release(cube);
    tg_release(gc);
    return grads[0] ? 0 : -1;
}
static const tg_op rsqrt_op = {"RsqrtBackward0", rsqrt_backward, 0};

tg_tensor *tg_rsqrt(const tg_tensor *x)
{
    return record_unary(&rsqrt_op,
                        tg_unary_apply("tg_rsqrt", &rsqrt_kernel, x, NULL),
                        x, true);
}

/* ---------------------------------------------------------------- abs */
/* out = |x|. |-0| = +0 and |NaN| is NaN; in int64, |INT64_MIN| wraps to
 * INT64_MIN as in PyTorch (computed unsigned, where wrapping is defined). */
TG_UNARY_LOOP(abs_f32, float, float, fabsf(a))
TG_UNARY_LOOP(abs_f64, double, double, fabs(a))
TG_UNARY_LOOP(abs_i64, int64_t, int64_t,
              a < 0 ? (int64_t)(UINT64_C(0) - (uint64_t)a) : a)
static const tg_elementwise_kernel abs_kernel = {abs_f32, abs_f64, abs_i64,
                                                 false};

/* forward: out = |x|, so dx = g * sign(x), with sign(0) = 0 (the
 * subgradient PyTorch picks at the kink) and sign(NaN) = 0 too, as
 * PyTorch's sgn. sign(x) is (x > 0) - (x < 0), an int64 tensor that the
 * product promotes to g's dtype. saved: x */
static int abs_backward(tg_node *node, const tg_tensor *g, tg_tensor **grads)
{
    const tg_tensor *x = tg_node_saved(node, 0);
    tg_tensor *pos = tg_gt_scalar(x, 0.0);
    tg_tensor *neg = tg_lt_scalar(x, 0.0);
    tg_tensor *sign = tg_sub(pos, neg);
    grads[0] = tg_mul(g, sign);
    tg_release(pos);
    tg_release(neg);
    tg_release(sign);
    return grads[0] ? 0 : -1;
}
static const tg_op abs_op = {"AbsBackward0", abs_backward, 0};

tg_tensor *tg_abs(const tg_tensor *x)
{
    return record_unary(&abs_op,
                        tg_unary_apply("tg_abs", &abs_kernel, x, NULL), x,
                        false);
}
