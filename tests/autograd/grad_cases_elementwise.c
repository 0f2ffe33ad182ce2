/*
 * tests/autograd/grad_cases_elementwise.c - gradcheck cases for the
 * elementwise ops (arith.c, unary.c, activation.c, compare.c).
 *
 * Ranges keep every input away from kinks and domain edges, where finite
 * differences and the (PyTorch) subgradient disagree: log, sqrt, rsqrt and
 * pow bases on [0.5, 2); divisors and abs / relu inputs of magnitude
 * [0.1, 2) with a random sign; maximum and minimum get continuous random
 * numbers (no ties); clamp's bounds are far (in eps terms) from every drawn
 * value. test_grad_elementwise.c pins the values AT the kinks instead.
 */
#include "grad_cases.h"

#include <math.h>

/* One case function: f(x) = expr, with x the inputs. */
#define CASE_FN(name, expr)                                                 \
    static tg_tensor *name(const tg_tensor *const *x, int n, void *user)          \
    {                                                                       \
        (void)n, (void)user;                                                \
        return expr;                                                        \
    }

CASE_FN(f_add, tg_add(x[0], x[1]))
CASE_FN(f_mul, tg_mul(x[0], x[1]))
CASE_FN(f_sub, tg_sub(x[0], x[1]))
CASE_FN(f_div, tg_div(x[0], x[1]))
CASE_FN(f_pow, tg_pow(x[0], x[1]))
CASE_FN(f_maximum, tg_maximum(x[0], x[1]))
CASE_FN(f_minimum, tg_minimum(x[0], x[1]))
CASE_FN(f_sub_scalar, tg_sub_scalar(x[0], 1.5))
CASE_FN(f_rsub_scalar, tg_rsub_scalar(x[0], 1.5))
CASE_FN(f_div_scalar, tg_div_scalar(x[0], -0.75))
CASE_FN(f_rdiv_scalar, tg_rdiv_scalar(x[0], 2.5))
CASE_FN(f_pow_2, tg_pow_scalar(x[0], 2.0))
CASE_FN(f_pow_half, tg_pow_scalar(x[0], 0.5))
CASE_FN(f_pow_m1, tg_pow_scalar(x[0], -1.0))
CASE_FN(f_pow_3, tg_pow_scalar(x[0], 3.0)) // odd: negative bases too
CASE_FN(f_neg, tg_neg(x[0]))
CASE_FN(f_exp, tg_exp(x[0]))
CASE_FN(f_log, tg_log(x[0]))
CASE_FN(f_sqrt, tg_sqrt(x[0]))
CASE_FN(f_rsqrt, tg_rsqrt(x[0]))
CASE_FN(f_abs, tg_abs(x[0]))
CASE_FN(f_tanh, tg_tanh(x[0]))
CASE_FN(f_sigmoid, tg_sigmoid(x[0]))
CASE_FN(f_relu, tg_relu(x[0]))
CASE_FN(f_gelu, tg_gelu(x[0], TG_GELU_EXACT))
CASE_FN(f_gelu_tanh, tg_gelu(x[0], TG_GELU_TANH))
CASE_FN(f_silu, tg_silu(x[0]))
CASE_FN(f_clamp, tg_clamp(x[0], -0.55, 0.45))
CASE_FN(f_clamp_lo, tg_clamp(x[0], -0.3, INFINITY))
CASE_FN(f_clamp_hi, tg_clamp(x[0], -INFINITY, 0.2))

/* where(x[2] > 0, x[0], x[1]): x[2] is a no-grad input that only makes
 * the condition, so the mask is fixed while a and b are perturbed. */
static tg_tensor *f_where(const tg_tensor *const *x, int n, void *user)
{
    (void)n, (void)user;
    tg_tensor *cond = tg_gt_scalar(x[2], 0.0);
    tg_tensor *out = tg_where(cond, x[0], x[1]);
    tg_release(cond);
    return out;
}

/* A chain through several ops: sigmoid(a) * log(b) - tanh(a) / b. */
static tg_tensor *f_chain(const tg_tensor *const *x, int n, void *user)
{
    (void)n, (void)user;
    tg_tensor *s = tg_sigmoid(x[0]), *l = tg_log(x[1]), *t = tg_tanh(x[0]);
    tg_tensor *sl = tg_mul(s, l), *tb = tg_div(t, x[1]);
    tg_tensor *out = tg_sub(sl, tb);
    tg_release(s);
    tg_release(l);
    tg_release(t);
    tg_release(sl);
    tg_release(tb);
    return out;
}

/* Value ranges of an input (tg_case_input's lo, hi, signed_mag). */
#define POS .lo = 0.5, .hi = 2.0                      // log, sqrt, pow bases
#define MAG .lo = 0.1, .hi = 2.0, .signed_mag = true // +-[0.1, 2): not near 0

const tg_grad_case tg_grad_cases_elementwise[] = {
    /* add, mul */
    {"add (2,3)+(2,3)", f_add, 2, {{2, {2, 3}}, {2, {2, 3}}}},
    {"add (2,3)+(3,) broadcast", f_add, 2, {{2, {2, 3}}, {1, {3}}}},
    {"add (4,1,3)+(2,1) broadcast both", f_add, 2,
     {{3, {4, 1, 3}}, {2, {2, 1}}}},
    {"add (3,4)T + (3,4) strided", f_add, 2,
     {{2, {3, 4}, TG_TRANSPOSED}, {2, {3, 4}, TG_STRIDED}}},
    {"add with a scalar tensor", f_add, 2, {{2, {2, 3}}, {0, {0}}}},
    {"mul (2,3)*(2,3)", f_mul, 2, {{2, {2, 3}}, {2, {2, 3}}}},
    {"mul (2,3)*(3,) broadcast", f_mul, 2, {{2, {2, 3}}, {1, {3}}}},
    {"mul (3,1)*(1,4) outer", f_mul, 2, {{2, {3, 1}}, {2, {1, 4}}}},
    {"mul (3,4)T * (3,4) strided", f_mul, 2,
     {{2, {3, 4}, TG_TRANSPOSED}, {2, {3, 4}, TG_STRIDED}}},
    {"mul, b needs no grad", f_mul, 2,
     {{2, {2, 3}}, {2, {2, 3}, .no_grad = true}}},

    /* sub */
    {"sub (2,3)-(2,3)", f_sub, 2, {{2, {2, 3}}, {2, {2, 3}}}},
    {"sub (3,)-(2,3) broadcast a", f_sub, 2, {{1, {3}}, {2, {2, 3}}}},
    {"sub (4,1,3)-(2,1) broadcast both", f_sub, 2,
     {{3, {4, 1, 3}}, {2, {2, 1}}}},
    {"sub (3,4)T - (3,4) strided", f_sub, 2,
     {{2, {3, 4}, TG_TRANSPOSED}, {2, {3, 4}, TG_STRIDED}}},
    {"sub 0-d - (2,3)", f_sub, 2, {{0, {0}}, {2, {2, 3}}}},
    {"sub, a needs no grad", f_sub, 2,
     {{2, {2, 3}, .no_grad = true}, {2, {2, 3}}}},
    {"sub_scalar x - 1.5", f_sub_scalar, 1, {{2, {2, 3}}}},
    {"rsub_scalar 1.5 - x", f_rsub_scalar, 1,
     {{2, {3, 4}, TG_TRANSPOSED}}},

    /* div */
    {"div (2,3)/(2,3)", f_div, 2, {{2, {2, 3}}, {2, {2, 3}, MAG}}},
    {"div (2,3)/(3,) broadcast", f_div, 2,
     {{2, {2, 3}}, {1, {3}, MAG}}},
    {"div (3,1)/(1,4) outer", f_div, 2,
     {{2, {3, 1}}, {2, {1, 4}, MAG}}},
    {"div (3,4)T / (3,4) strided", f_div, 2,
     {{2, {3, 4}, TG_TRANSPOSED}, {2, {3, 4}, TG_STRIDED, MAG}}},
    {"div 0-d / 0-d", f_div, 2, {{0, {0}}, {0, {0}, MAG}}},
    {"div, a needs no grad", f_div, 2,
     {{2, {2, 3}, .no_grad = true}, {2, {2, 3}, MAG}}},
    {"div_scalar x / -0.75", f_div_scalar, 1, {{2, {2, 3}, TG_STRIDED}}},
    {"rdiv_scalar 2.5 / x", f_rdiv_scalar, 1, {{2, {2, 3}, MAG}}},
    {"rdiv_scalar 2.5 / x transposed", f_rdiv_scalar, 1,
     {{2, {3, 4}, TG_TRANSPOSED, MAG}}},

    /* pow: bases in [0.5, 2), exponents in [-1, 1) */
    {"pow (2,3)**(2,3)", f_pow, 2, {{2, {2, 3}, POS}, {2, {2, 3}}}},
    {"pow (2,3)**(3,) broadcast", f_pow, 2, {{2, {2, 3}, POS}, {1, {3}}}},
    {"pow (3,1)**(1,4) outer", f_pow, 2, {{2, {3, 1}, POS}, {2, {1, 4}}}},
    {"pow (3,4)T ** (3,4) strided", f_pow, 2,
     {{2, {3, 4}, TG_TRANSPOSED, POS}, {2, {3, 4}, TG_STRIDED}}},
    {"pow (2,3) ** 0-d", f_pow, 2, {{2, {2, 3}, POS}, {0, {0}}}},
    {"pow, exponent needs no grad", f_pow, 2,
     {{2, {2, 3}, POS}, {2, {2, 3}, .no_grad = true}}},
    {"pow, base needs no grad", f_pow, 2,
     {{2, {2, 3}, POS, .no_grad = true}, {2, {2, 3}}}},
    {"pow_scalar x ** 2", f_pow_2, 1, {{2, {2, 3}}}},
    {"pow_scalar x ** 0.5", f_pow_half, 1, {{2, {2, 3}, POS}}},
    {"pow_scalar x ** -1", f_pow_m1, 1,
     {{2, {3, 4}, TG_TRANSPOSED, MAG}}},
    {"pow_scalar x ** 3, 0-d", f_pow_3, 1, {{0, {0}, MAG}}},

    /* maximum, minimum */
    {"maximum (2,3),(2,3)", f_maximum, 2, {{2, {2, 3}}, {2, {2, 3}}}},
    {"maximum (4,1,3),(2,1) broadcast both", f_maximum, 2,
     {{3, {4, 1, 3}}, {2, {2, 1}}}},
    {"maximum (3,4)T,(3,4) strided", f_maximum, 2,
     {{2, {3, 4}, TG_TRANSPOSED}, {2, {3, 4}, TG_STRIDED}}},
    {"maximum (2,3), 0-d", f_maximum, 2, {{2, {2, 3}}, {0, {0}}}},
    {"minimum (2,3),(2,3)", f_minimum, 2, {{2, {2, 3}}, {2, {2, 3}}}},
    {"minimum (3,),(2,3) broadcast", f_minimum, 2, {{1, {3}}, {2, {2, 3}}}},
    {"minimum (3,4)T,(3,4) strided", f_minimum, 2,
     {{2, {3, 4}, TG_TRANSPOSED}, {2, {3, 4}, TG_STRIDED}}},
    {"minimum, b needs no grad", f_minimum, 2,
     {{2, {2, 3}}, {2, {2, 3}, .no_grad = true}}},

    /* unary maths */
    {"neg (2,3)", f_neg, 1, {{2, {2, 3}}}},
    {"neg (3,4)T", f_neg, 1, {{2, {3, 4}, TG_TRANSPOSED}}},
    {"exp (2,3)", f_exp, 1, {{2, {2, 3}}}},
    {"exp (3,4) strided", f_exp, 1, {{2, {3, 4}, TG_STRIDED}}},
    {"exp 0-d", f_exp, 1, {{0, {0}}}},
    {"log (2,3)", f_log, 1, {{2, {2, 3}, POS}}},
    {"log (3,4)T", f_log, 1, {{2, {3, 4}, TG_TRANSPOSED, POS}}},
    {"sqrt (2,3)", f_sqrt, 1, {{2, {2, 3}, POS}}},
    {"sqrt (3,4) strided", f_sqrt, 1, {{2, {3, 4}, TG_STRIDED, POS}}},
    {"rsqrt (2,3)", f_rsqrt, 1, {{2, {2, 3}, POS}}},
    {"rsqrt 0-d", f_rsqrt, 1, {{0, {0}, POS}}},
    {"abs (2,3)", f_abs, 1, {{2, {2, 3}, MAG}}},
    {"abs (3,4)T", f_abs, 1, {{2, {3, 4}, TG_TRANSPOSED, MAG}}},

    /* activations */
    {"tanh (2,3)", f_tanh, 1, {{2, {2, 3}, .lo = -3.0, .hi = 3.0}}},
    {"tanh (3,4)T", f_tanh, 1, {{2, {3, 4}, TG_TRANSPOSED}}},
    {"sigmoid (2,3)", f_sigmoid, 1, {{2, {2, 3}, .lo = -4.0, .hi = 4.0}}},
    {"sigmoid (3,4) strided", f_sigmoid, 1, {{2, {3, 4}, TG_STRIDED}}},
    {"sigmoid 0-d", f_sigmoid, 1, {{0, {0}}}},
    {"relu (2,3)", f_relu, 1, {{2, {2, 3}, MAG}}},
    {"relu (3,4)T", f_relu, 1, {{2, {3, 4}, TG_TRANSPOSED, MAG}}},
    {"gelu (2,3)", f_gelu, 1, {{2, {2, 3}, .lo = -4.0, .hi = 4.0}}},
    {"gelu (3,4)T", f_gelu, 1, {{2, {3, 4}, TG_TRANSPOSED}}},
    {"gelu tanh (2,3)", f_gelu_tanh, 1, {{2, {2, 3}, .lo = -4.0, .hi = 4.0}}},
    {"gelu tanh (3,4) strided", f_gelu_tanh, 1, {{2, {3, 4}, TG_STRIDED}}},
    {"silu (2,3)", f_silu, 1, {{2, {2, 3}, .lo = -6.0, .hi = 6.0}}},
    {"silu (3,4)T", f_silu, 1, {{2, {3, 4}, TG_TRANSPOSED}}},
    {"silu (3,4) strided", f_silu, 1, {{2, {3, 4}, TG_STRIDED}}},

    /* where, clamp */
    {"where (2,3): cond, a, b same shape", f_where, 3,
     {{2, {2, 3}}, {2, {2, 3}}, {2, {2, 3}, .no_grad = true}}},
    {"where cond (2,1,4), a (3,1), b (4,)", f_where, 3,
     {{2, {3, 1}}, {1, {4}}, {3, {2, 1, 4}, .no_grad = true}}},
    {"where a (3,4)T, b (3,4) strided", f_where, 3,
     {{2, {3, 4}, TG_TRANSPOSED},
      {2, {3, 4}, TG_STRIDED},
      {2, {3, 4}, .no_grad = true}}},
    {"where a 0-d, b (2,3)", f_where, 3,
     {{0, {0}}, {2, {2, 3}}, {2, {2, 3}, .no_grad = true}}},
    {"clamp (4,5) to [-0.55, 0.45]", f_clamp, 1, {{2, {4, 5}}}},
    {"clamp (4,5)T to [-0.3, inf)", f_clamp_lo, 1,
     {{2, {4, 5}, TG_TRANSPOSED}}},
    {"clamp (4,5) strided to (-inf, 0.2]", f_clamp_hi, 1,
     {{2, {4, 5}, TG_STRIDED}}},

    /* several ops in one graph */
    {"sigmoid(a) log(b) - tanh(a) / b", f_chain, 2,
     {{2, {2, 3}}, {1, {3}, POS}}},
};
const size_t tg_grad_cases_elementwise_count =
    sizeof tg_grad_cases_elementwise / sizeof *tg_grad_cases_elementwise;
