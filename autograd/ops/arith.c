/*
 * autograd/ops/arith.c - add, sub, mul, div, pow, maximum, minimum and
 * their scalar forms, forward and backward.
 *
 * Each op broadcasts its operands (NumPy rules) and promotes types as
 * PyTorch through tg_binary_apply. The loops below are the whole kernel;
 * TG_BINARY_LOOP gives them a contiguous branch that the compiler
 * vectorises. Every backward gets dL/dout with out's (broadcast) shape and
 * sums it back to each operand's shape with tg_sum_to_shape.
 *
 * The _scalar forms (and rsub) call the tensor op with a 0-d tensor that
 * needs no gradient (tg_scalar_apply), so they record the tensor op's node:
 * x - 2 is SubBackward0 and 2 - x too (PyTorch names the latter
 * RsubBackward1); 2 / x is DivBackward0, as in PyTorch. pow_scalar is the exception: it records its own
 * PowBackward0, as PyTorch's x ** 2 does, and tg_pow records PowBackward1.
 *
 * Not here: the comparisons, where and clamp (compare.c).
 */
#include "../internal.h"

#include <math.h>

/* ---------------------------------------------------------------- add */
/* out = a + b */
TG_BINARY_LOOP_CLONES(add_f32, float, float, a + b)
TG_BINARY_LOOP_CLONES(add_f64, double, double, a + b)
TG_BINARY_LOOP(add_i64, int64_t, int64_t, (int64_t)((uint64_t)a + (uint64_t)b))
static const tg_elementwise_kernel add_kernel = {add_f32, add_f64, add_i64,
                                                 false};

/* forward: out = a + b, so da = g, db = g (summed over broadcast dims) */
static int add_backward(tg_node *node, const tg_tensor *g, tg_tensor **grads)
{
    for (int i = 0; i < 2; i++)
        if (tg_node_needs_grad(node, i) &&
            !(grads[i] = tg_sum_to_input(node, g, i)))
            return -1;
    return 0;
}
static const tg_op add_op = {"AddBackward0", add_backward, 0};

tg_tensor *tg_add(const tg_tensor *a, const tg_tensor *b)
{
    tg_tensor *out = tg_binary_apply("tg_add", &add_kernel, a, b, NULL);
    tg_record(&add_op, &out, TG_INPUTS(a, b));
    return out;
}

tg_tensor *tg_add_scalar(const tg_tensor *a, double s)
{
    return tg_scalar_apply(tg_add, a, s, false);
}

/* acc = acc + g, elementwise: operands {acc, acc, g} (the loops read each
 * element before they write it). */
void tg_add_into(tg_tensor *acc, const tg_tensor *g)
{
    tg_loop_fn loop = acc->dtype == TG_FLOAT32 ? add_kernel.f32
                                               : add_kernel.f64;
    tg_tensor *ops[3] = {acc, acc, (tg_tensor *)g};
    tg_elementwise_run(loop, NULL, acc->shape, acc->ndim, 3, ops);
}

/* ---------------------------------------------------------------- sub */
/* out = a - b */
TG_BINARY_LOOP_CLONES(sub_f32, float, float, a - b)
TG_BINARY_LOOP_CLONES(sub_f64, double, double, a - b)
TG_BINARY_LOOP(sub_i64, int64_t, int64_t, (int64_t)((uint64_t)a - (uint64_t)b))
static const tg_elementwise_kernel sub_kernel = {sub_f32, sub_f64, sub_i64,
                                                 false};

/* forward: out = a - b, so da = g and db = -g (each summed over its
 * broadcast dims). saved: nothing */
static int sub_backward(tg_node *node, const tg_tensor *g, tg_tensor **grads)
{
    if (tg_node_needs_grad(node, 0) &&
        !(grads[0] = tg_sum_to_input(node, g, 0)))
        return -1;
    if (tg_node_needs_grad(node, 1)) {
        tg_tensor *gb = tg_sum_to_input(node, g, 1);
        grads[1] = tg_neg(gb);
        tg_release(gb);
        if (!grads[1])
            return -1;
    }
    return 0;
}
static const tg_op sub_op = {"SubBackward0", sub_backward, 0};

tg_tensor *tg_sub(const tg_tensor *a, const tg_tensor *b)
{
    tg_tensor *out = tg_binary_apply("tg_sub", &sub_kernel, a, b, NULL);
    tg_record(&sub_op, &out, TG_INPUTS(a, b));
    return out;
}

tg_tensor *tg_sub_scalar(const tg_tensor *a, double s)
{
    return tg_scalar_apply(tg_sub, a, s, false);
}

tg_tensor *tg_rsub_scalar(const tg_tensor *a, double s)
{
    return tg_scalar_apply(tg_sub, a, s, true);
}

/* ---------------------------------------------------------------- mul */
/* out = a * b */
TG_BINARY_LOOP_CLONES(mul_f32, float, float, a * b)
TG_BINARY_LOOP_CLONES(mul_f64, double, double, a * b)
TG_BINARY_LOOP(mul_i64, int64_t, int64_t, (int64_t)((uint64_t)a * (uint64_t)b))
static const tg_elementwise_kernel mul_kernel = {mul_f32, mul_f64, mul_i64,
                                                 false};

/* forward: out = a * b, so da = g * b, db = g * a (each summed over its
 * broadcast dims). saved: a, b */
static int mul_backward(tg_node *node, const tg_tensor *g, tg_tensor **grads)
{
    for (int i = 0; i < 2; i++) {
        if (!tg_node_needs_grad(node, i))
            continue;
        tg_tensor *full = tg_mul(g, tg_node_saved(node, 1 - i));
        grads[i] = tg_sum_to_input(node, full, i);
        tg_release(full);
        if (!grads[i])
            return -1;
    }
    return 0;
}
static const tg_op mul_op = {"MulBackward0", mul_backward, 0};

tg_tensor *tg_mul(const tg_tensor *a, const tg_tensor *b)
{
    tg_tensor *out = tg_binary_apply("tg_mul", &mul_kernel, a, b, NULL);
    tg_node *node = tg_record(&mul_op, &out, TG_INPUTS(a, b));
    if (node) {
        tg_node_save(node, a);
        tg_node_save(node, b);
    }
    return out;
}

tg_tensor *tg_mul_scalar(const tg_tensor *a, double s)
{
    return tg_scalar_apply(tg_mul, a, s, false);
}

/* ---------------------------------------------------------------- div */
/* out = a / b, true division: int64 operands are divided in float32, as
 * PyTorch's torch.div without rounding_mode. */
TG_BINARY_LOOP_CLONES(div_f32, float, float, a / b)
TG_BINARY_LOOP_CLONES(div_f64, double, double, a / b)
static const tg_elementwise_kernel div_kernel = {div_f32, div_f64, NULL,
                                                 false};

/* forward: out = a / b, so
 *   da = g / b
 *   db = -g * a / b^2 = -g * out / b   (PyTorch's -g * ((a / b) / b))
 * each summed over its broadcast dims. saved: b, and out when b needs a
 * gradient */
static int div_backward(tg_node *node, const tg_tensor *g, tg_tensor **grads)
{
    const tg_tensor *b = tg_node_saved(node, 0);
    if (tg_node_needs_grad(node, 0)) {
        tg_tensor *full = tg_div(g, b);
        grads[0] = tg_sum_to_input(node, full, 0);
        tg_release(full);
        if (!grads[0])
            return -1;
    }
    if (tg_node_needs_grad(node, 1)) {
        const tg_tensor *out = tg_node_saved(node, 1);
        tg_tensor *q = tg_div(out, b);
        tg_tensor *gq = tg_mul(g, q);
        tg_tensor *full = tg_neg(gq);
        grads[1] = tg_sum_to_input(node, full, 1);
        tg_release(q);
        tg_release(gq);
        tg_release(full);
        if (!grads[1])
            return -1;
    }
    return 0;
}
static const tg_op div_op = {"DivBackward0", div_backward, 0};

tg_tensor *tg_div(const tg_tensor *a, const tg_tensor *b)
{
    tg_tensor *out = tg_binary_apply("tg_div", &div_kernel, a, b, NULL);
    tg_node *node = tg_record(&div_op, &out, TG_INPUTS(a, b));
    if (node) {
        tg_node_save(node, b);
        if (tg_node_needs_grad(node, 1))
            tg_node_save(node, out);
    }
    return out;
}

tg_tensor *tg_div_scalar(const tg_tensor *a, double s)
{
    return tg_scalar_apply(tg_div, a, s, false);
}

/* s / a: tg_div with the 0-d s first, so its backward is div's db,
 *   da = -g * out / a = -g * s / a^2
 * (PyTorch records DivBackward0 for 2 / x as well). */
tg_tensor *tg_rdiv_scalar(const tg_tensor *a, double s)
{
    return tg_scalar_apply(tg_div, a, s, true);
}

/* ---------------------------------------------------------------- pow */
/* out = a ** b. For int64, exponentiation by squaring; negative exponents
 * are rejected before the kernel runs. */
static int64_t ipow(int64_t base, int64_t e)
{
    uint64_t result = 1, b = (uint64_t)base;
    while (e > 0) {
        if (e & 1)
            result *= b;
        b *= b;
        e >>= 1;
    }
    return (int64_t)result;
}

TG_BINARY_LOOP(pow_f32, float, float, powf(a, b))
TG_BINARY_LOOP(pow_f64, double, double, pow(a, b))
TG_BINARY_LOOP(pow_i64, int64_t, int64_t, ipow(a, b))
static const tg_elementwise_kernel pow_kernel = {pow_f32, pow_f64, pow_i64,
                                                 false};

/* The flat index of the first negative element of an int64 tensor, or -1. */
static int64_t first_negative_int(const tg_tensor *t)
{
    if (t->dtype != TG_INT64)
        return -1;
    for (int64_t i = 0; i < t->numel; i++)
        if (tg_read_flat(t, i) < 0)
            return i;
    return -1;
}

/* forward: out = a ** b, so
 *   da = g * b * a^(b - 1), and 0 where b == 0
 *   db = g * out * ln(a),   and 0 where a == 0 and b >= 0
 * each summed over its broadcast dims. The two zeros are PyTorch's
 * conventions (PowBackward1): a^0 is the constant 1 even at a = 0, where
 * the formula would give 0 * 0^-1 = NaN; and a^b ln a -> 0 as a -> 0+ for
 * b > 0, where the formula gives 0 * -inf = NaN. Elsewhere the formulas
 * stand: at a = 0, da is +-inf for 0 < b < 1 or b < 0, db is -inf for
 * b < 0; a < 0 gives NaN in db (and in da for fractional b).
 * saved: a, b, and out when b needs a gradient */
static int pow_backward(tg_node *node, const tg_tensor *g, tg_tensor **grads)
{
    const tg_tensor *a = tg_node_saved(node, 0);
    const tg_tensor *b = tg_node_saved(node, 1);
    tg_tensor *zero = tg_scalar(0.0, g->dtype);
    int rc = 0;
    if (tg_node_needs_grad(node, 0)) {
        tg_tensor *bm1 = tg_sub_scalar(b, 1.0);
        tg_tensor *p = tg_pow(a, bm1);
        tg_tensor *slope = tg_mul(b, p);
        tg_tensor *gs = tg_mul(g, slope);
        tg_tensor *b0 = tg_eq_scalar(b, 0.0);
        tg_tensor *full = tg_where(b0, zero, gs);
        grads[0] = tg_sum_to_input(node, full, 0);
        tg_release(bm1);
        tg_release(p);
        tg_release(slope);
        tg_release(gs);
        tg_release(b0);
        tg_release(full);
        if (!grads[0])
            rc = -1;
    }
    if (rc == 0 && tg_node_needs_grad(node, 1)) {
        const tg_tensor *out = tg_node_saved(node, 2);
        tg_tensor *ln = tg_log(a);
        tg_tensor *slope = tg_mul(out, ln);
        tg_tensor *a0 = tg_eq_scalar(a, 0.0);
        tg_tensor *bpos = tg_ge_scalar(b, 0.0);
        tg_tensor *limit = tg_mul(a0, bpos); // int64 0/1: a == 0 and b >= 0
        tg_tensor *safe = tg_where(limit, zero, slope);
        tg_tensor *full = tg_mul(g, safe);
        grads[1] = tg_sum_to_input(node, full, 1);
        tg_release(ln);
        tg_release(slope);
        tg_release(a0);
        tg_release(bpos);
        tg_release(limit);
        tg_release(safe);
        tg_release(full);
        if (!grads[1])
            rc = -1;
    }
    tg_release(zero);
    return rc;
}
static const tg_op pow_op = {"PowBackward1", pow_backward, 0};

tg_tensor *tg_pow(const tg_tensor *a, const tg_tensor *b)
{
    if (!a || !b)
        return NULL;
    tg_check_alive("tg_pow", a);
    tg_check_alive("tg_pow", b);
    /* Shapes first, so a shape mistake is reported as one. */
    int64_t shape[TG_MAX_DIMS];
    int ndim;
    if (tg_broadcast_shape("tg_pow", a->shape, a->ndim, b->shape, b->ndim,
                           shape, &ndim) < 0)
        return NULL;
    int64_t at = a->dtype == TG_INT64 ? first_negative_int(b) : -1;
    if (at >= 0) {
        tg_error("tg_pow",
                 "cannot raise an int64 tensor to the negative int64 "
                 "power %.0f (element %lld of b, in C order)\n"
                 "  rule: integers to negative powers are not integers "
                 "(as in PyTorch)\n"
                 "  hint: convert the base first: "
                 "tg_pow(tg_to_dtype(a, TG_FLOAT32), b)",
                 tg_read_flat(b, at), (long long)at);
        return NULL;
    }
    tg_tensor *out = tg_binary_apply("tg_pow", &pow_kernel, a, b, NULL);
    tg_node *node = tg_record(&pow_op, &out, TG_INPUTS(a, b));
    if (node) {
        tg_node_save(node, a);
        tg_node_save(node, b);
        if (tg_node_needs_grad(node, 1))
            tg_node_save(node, out);
    }
    return out;
}

/* forward: out = a ** exponent (a C double), so
 *   da = g * exponent * a^(exponent - 1), and 0 when exponent == 0
 * (PyTorch's PowBackward0: x ** 0 is the constant 1). saved: a;
 * ctx: exponent */
typedef struct pow_scalar_ctx {
    double exponent;
} pow_scalar_ctx;

static int pow_scalar_backward(tg_node *node, const tg_tensor *g,
                               tg_tensor **grads)
{
    const tg_tensor *a = tg_node_saved(node, 0);
    double e = ((pow_scalar_ctx *)tg_node_ctx(node))->exponent;
    if (e == 0.0) {
        grads[0] = tg_zeros_like(a);
        return grads[0] ? 0 : -1;
    }
    tg_tensor *p = tg_pow_scalar(a, e - 1.0);
    tg_tensor *slope = tg_mul_scalar(p, e);
    grads[0] = tg_mul(g, slope);
    tg_release(p);
    tg_release(slope);
    return grads[0] ? 0 : -1;
}
static const tg_op pow_scalar_op = {"PowBackward0", pow_scalar_backward,
                                    sizeof(pow_scalar_ctx)};

tg_tensor *tg_pow_scalar(const tg_tensor *a, double exponent)
{
    /* Checked here, not left to tg_pow, so that the message names this
     * function and the exponent the caller gave. */
    if (a && exponent < 0 && tg_scalar_type(a, exponent) == TG_INT64) {
        tg_error("tg_pow_scalar",
                 "cannot raise an int64 tensor to the negative integer "
                 "power %.0f\n"
                 "  rule: integers to negative powers are not integers "
                 "(as in PyTorch)\n"
                 "  hint: convert the base first: "
                 "tg_pow_scalar(tg_to_dtype(a, TG_FLOAT32), %.0f)",
                 exponent, exponent);
        return NULL;
    }
    /* tg_pow would record PowBackward1 with the 0-d exponent as input 1;
     * this op records its own node instead. */
    tg_no_grad_begin();
    tg_tensor *out = tg_scalar_apply(tg_pow, a, exponent, false);
    tg_no_grad_end();
    tg_node *node = tg_record(&pow_scalar_op, &out, TG_INPUTS(a));
    if (node) {
        tg_node_save(node, a);
        ((pow_scalar_ctx *)tg_node_ctx(node))->exponent = exponent;
    }
    return out;
}

/* ------------------------------------------------------ maximum, minimum */
/* out = max(a, b) / min(a, b) elementwise; a NaN in either operand gives NaN,
 * as torch.maximum. */
#define TG_MAX_NAN(a, b) ((a) != (a) || (a) > (b) ? (a) : (b))
#define TG_MIN_NAN(a, b) ((a) != (a) || (a) < (b) ? (a) : (b))
TG_BINARY_LOOP(maximum_f32, float, float, b != b ? b : TG_MAX_NAN(a, b))
TG_BINARY_LOOP(maximum_f64, double, double, b != b ? b : TG_MAX_NAN(a, b))
TG_BINARY_LOOP(maximum_i64, int64_t, int64_t, a > b ? a : b)
TG_BINARY_LOOP(minimum_f32, float, float, b != b ? b : TG_MIN_NAN(a, b))
TG_BINARY_LOOP(minimum_f64, double, double, b != b ? b : TG_MIN_NAN(a, b))
TG_BINARY_LOOP(minimum_i64, int64_t, int64_t, a < b ? a : b)
static const tg_elementwise_kernel maximum_kernel = {
    maximum_f32, maximum_f64, maximum_i64, false};
static const tg_elementwise_kernel minimum_kernel = {
    minimum_f32, minimum_f64, minimum_i64, false};

/* forward: out = max(a, b) (or min(a, b)), so the gradient goes to the
 * operand that was chosen:
 *   da = g where a wins, g / 2 where a == b, 0 where a loses
 * and db the mirror image, each summed over its broadcast dims. a wins
 * maximum where a > b, minimum where a < b. Ties split the gradient
 * evenly, as PyTorch's MaximumBackward0; where a or b is NaN no comparison
 * holds, so (as in PyTorch) both operands get the whole g.
 * saved: a, b */
static int extremum_backward(tg_node *node, const tg_tensor *g,
                             tg_tensor **grads, bool is_max)
{
    const tg_tensor *a = tg_node_saved(node, 0);
    const tg_tensor *b = tg_node_saved(node, 1);
    tg_tensor *tie = tg_eq(a, b);
    tg_tensor *half = tg_mul_scalar(g, 0.5);
    tg_tensor *shared = tg_where(tie, half, g);
    tg_tensor *zero = tg_scalar(0.0, g->dtype);
    int rc = 0;
    for (int i = 0; i < 2 && rc == 0; i++) {
        if (!tg_node_needs_grad(node, i))
            continue;
        const tg_tensor *mine = i == 0 ? a : b, *other = i == 0 ? b : a;
        tg_tensor *loses = is_max ? tg_lt(mine, other) : tg_gt(mine, other);
        tg_tensor *full = tg_where(loses, zero, shared);
        grads[i] = tg_sum_to_input(node, full, i);
        tg_release(loses);
        tg_release(full);
        if (!grads[i])
            rc = -1;
    }
    tg_release(tie);
    tg_release(half);
    tg_release(shared);
    tg_release(zero);
    return rc;
}

static int maximum_backward(tg_node *node, const tg_tensor *g,
                            tg_tensor **grads)
{
    return extremum_backward(node, g, grads, true);
}

static int minimum_backward(tg_node *node, const tg_tensor *g,
                            tg_tensor **grads)
{
    return extremum_backward(node, g, grads, false);
}
static const tg_op maximum_op = {"MaximumBackward0", maximum_backward, 0};
static const tg_op minimum_op = {"MinimumBackward0", minimum_backward, 0};

/* Records op with a and b saved. */
static tg_tensor *record_extremum(const tg_op *op, tg_tensor *out,
                                  const tg_tensor *a, const tg_tensor *b)
{
    tg_node *node = tg_record(op, &out, TG_INPUTS(a, b));
    if (node) {
        tg_node_save(node, a);
        tg_node_save(node, b);
    }
    return out;
}

tg_tensor *tg_maximum(const tg_tensor *a, const tg_tensor *b)
{
    return record_extremum(
        &maximum_op,
        tg_binary_apply("tg_maximum", &maximum_kernel, a, b, NULL), a, b);
}

tg_tensor *tg_minimum(const tg_tensor *a, const tg_tensor *b)
{
    return record_extremum(
        &minimum_op,
        tg_binary_apply("tg_minimum", &minimum_kernel, a, b, NULL), a, b);
}
