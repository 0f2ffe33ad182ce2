/*
 * autograd/ops/compare.c - comparisons (eq, ne, lt, le, gt, ge and their
 * scalar forms), where and clamp, with the backward of where and clamp.
 *
 * Comparisons are not differentiable and give int64 0/1 tensors (tapegrad
 * has no bool dtype), which the tape never records. where and clamp pass
 * values through, so their backward routes the output gradient to the
 * input each value came from, and zeros elsewhere.
 *
 * Comparisons promote their operands to the common dtype first, exactly as
 * the arithmetic ops do: int64 16777217 == float32 16777216 is true, since
 * the int64 becomes that float32 (as in PyTorch).
 */
#include "../internal.h"

#include <math.h>

/* ------------------------------------------------ eq, ne, lt, le, gt, ge */
/* out = (a OP b) ? 1 : 0, int64, after broadcasting and promotion. Any
 * comparison with NaN is false except !=, which is true (IEEE 754). */
#define TG_COMPARE_OP(op, EXPR)                                             \
    TG_BINARY_LOOP(op##_f32, int64_t, float, EXPR)                          \
    TG_BINARY_LOOP(op##_f64, int64_t, double, EXPR)                         \
    TG_BINARY_LOOP(op##_i64, int64_t, int64_t, EXPR)                        \
    static const tg_elementwise_kernel op##_kernel = {op##_f32, op##_f64,   \
                                                      op##_i64, true};      \
    tg_tensor *tg_##op(const tg_tensor *a, const tg_tensor *b)              \
    {                                                                       \
        return tg_binary_apply("tg_" #op, &op##_kernel, a, b, NULL);        \
    }                                                                       \
    tg_tensor *tg_##op##_scalar(const tg_tensor *a, double s)               \
    {                                                                       \
        return tg_scalar_apply(tg_##op, a, s, false);                       \
    }

TG_COMPARE_OP(eq, a == b)
TG_COMPARE_OP(ne, a != b)
TG_COMPARE_OP(lt, a < b)
TG_COMPARE_OP(le, a <= b)
TG_COMPARE_OP(gt, a > b)
TG_COMPARE_OP(ge, a >= b)

/* -------------------------------------------------------------- where */
/* out = cond != 0 ? a : b elementwise; cond, a and b broadcast together.
 * The result dtype is the promotion of a and b (cond does not take part);
 * cond may be any dtype and NaN counts as true (it is nonzero).
 * cond is first turned into an int64 0/1 mask with tg_ne_scalar(cond, 0),
 * so one loop per value dtype suffices; the loop walks four operands
 * (out, mask, a, b) with the strided iterator. */
#define TG_WHERE_LOOP(name, T)                                              \
    static void name(char **data, const int64_t *st, int64_t n, void *ctx) \
    {                                                                       \
        (void)ctx;                                                          \
        T *out = (T *)data[0];                                              \
        const int64_t *mask = (const int64_t *)data[1];                     \
        const T *a = (const T *)data[2], *b = (const T *)data[3];           \
        for (int64_t i = 0; i < n; i++)                                     \
            out[i * st[0]] = mask[i * st[1]] ? a[i * st[2]] : b[i * st[3]]; \
    }
TG_WHERE_LOOP(where_f32, float)
TG_WHERE_LOOP(where_f64, double)
TG_WHERE_LOOP(where_i64, int64_t)

/* The broadcast of three shapes, as NumPy: aligned from the right, each
 * size equals the others or is 1. Reports all three shapes on failure. */
static int broadcast3(const tg_tensor *c, const tg_tensor *a,
                      const tg_tensor *b, int64_t *out, int *nout)
{
    const tg_tensor *t[3] = {c, a, b};
    int n = 0;
    for (int k = 0; k < 3; k++)
        n = t[k]->ndim > n ? t[k]->ndim : n;
    for (int i = 0; i < n; i++) { // dim n-1-i of the result
        int64_t size = 1;
        for (int k = 0; k < 3; k++) {
            int64_t s = i < t[k]->ndim ? t[k]->shape[t[k]->ndim - 1 - i] : 1;
            if (s == 1)
                continue;
            if (size != 1 && s != size) {
                char sc[TG_SHAPE_STR_MAX], sa[TG_SHAPE_STR_MAX],
                    sb[TG_SHAPE_STR_MAX];
                tg_error("tg_where",
                         "cannot broadcast cond %s, a %s and b %s together\n"
                         "  rule: aligned from the right, sizes must be "
                         "equal or 1, but %lld != %lld at dim %d from the "
                         "end\n"
                         "  hint: use tg_unsqueeze or tg_reshape to add "
                         "size-1 dims where the shapes should line up",
                         tg_shape_str(c, sc), tg_shape_str(a, sa),
                         tg_shape_str(b, sb), (long long)size, (long long)s,
                         -(i + 1));
                return -1;
            }
            size = s;
        }
        out[n - 1 - i] = size;
    }
    /* Valid shapes can broadcast to one too large for a tensor. */
    if (tg_shape_check("tg_where", out, n) < 0)
        return -1;
    *nout = n;
    return 0;
}

/* forward: out = cond ? a : b, so
 *   da = g where cond, 0 elsewhere;  db = 0 where cond, g elsewhere
 * each summed over its broadcast dims (as PyTorch's WhereBackward0); cond
 * gets no gradient and is not an input of the node. saved: mask, the
 * int64 0/1 form of cond */
static int where_backward(tg_node *node, const tg_tensor *g,
                          tg_tensor **grads)
{
    const tg_tensor *mask = tg_node_saved(node, 0);
    tg_tensor *zero = tg_scalar(0.0, g->dtype);
    int rc = 0;
    for (int i = 0; i < 2 && rc == 0; i++) {
        if (!tg_node_needs_grad(node, i))
            continue;
        tg_tensor *full = i == 0 ? tg_where(mask, g, zero)
                                 : tg_where(mask, zero, g);
        grads[i] = tg_sum_to_input(node, full, i);
        tg_release(full);
        if (!grads[i])
            rc = -1;
    }
    tg_release(zero);
    return rc;
}
static const tg_op where_op = {"WhereBackward0", where_backward, 0};

tg_tensor *tg_where(const tg_tensor *cond, const tg_tensor *a,
                    const tg_tensor *b)
{
    if (!cond || !a || !b)
        return NULL;
    tg_check_alive("tg_where", cond);
    tg_check_alive("tg_where", a);
    tg_check_alive("tg_where", b);
    int64_t shape[TG_MAX_DIMS];
    int ndim;
    if (broadcast3(cond, a, b, shape, &ndim) < 0)
        return NULL;
    tg_dtype t = tg_result_type(a, b);
    tg_loop_fn loop = t == TG_FLOAT32   ? where_f32
                      : t == TG_FLOAT64 ? where_f64
                                        : where_i64;
    tg_tensor *mask = tg_ne_scalar(cond, 0.0);
    tg_tensor *ia = a->dtype == t ? tg_retain((tg_tensor *)a)
                                  : tg_contiguous_as(a, t);
    tg_tensor *ib = b->dtype == t ? tg_retain((tg_tensor *)b)
                                  : tg_contiguous_as(b, t);
    tg_tensor *out =
        (mask && ia && ib) ? tg_alloc(shape, ndim, t) : NULL;
    if (out) {
        tg_iter it;
        tg_tensor *ops[4] = {out, mask, ia, ib};
        tg_iter_init(&it, shape, ndim, 4, ops);
        tg_iter_run(&it, loop, NULL);
    }
    tg_node *node = tg_record(&where_op, &out, TG_INPUTS(a, b));
    if (node)
        tg_node_save(node, mask);
    tg_release(mask);
    tg_release(ia);
    tg_release(ib);
    return out;
}

/* -------------------------------------------------------------- clamp */
/* out = min(max(x, lo), hi).
 * - Written with comparisons, so a NaN element stays NaN (fmin/fmax would
 *   drop it).
 * - lo > hi gives hi everywhere: max first, then min, as torch.clamp.
 * - -INFINITY / INFINITY leave a side open.
 * - NaN bounds are an error (PyTorch instead fills the result with NaN).
 * - Dtype: a float tensor keeps its dtype. An int64 tensor stays int64 when
 *   both bounds are whole numbers (or open); a fractional bound promotes
 *   it to float32, as PyTorch's type promotion does for a Python float:
 *   clamp([1, 2, 3] int64, 1.5, 2.5) is [1.5, 2.0, 2.5] float32. (PyTorch
 *   also promotes for an infinite bound; here an infinite bound means
 *   "no bound" and keeps int64.) */
static float clamp_f(float a, float lo, float hi)
{
    float t = a < lo ? lo : a;
    return t > hi ? hi : t;
}

static double clamp_d(double a, double lo, double hi)
{
    double t = a < lo ? lo : a;
    return t > hi ? hi : t;
}

TG_UNARY_LOOP_P(clamp_f32, float, float, clamp_f(a, p, q))
TG_UNARY_LOOP_P(clamp_f64, double, double, clamp_d(a, p, q))

/* int64 bounds do not fit a double (INT64_MAX is not one), so the int64
 * loop reads its bounds from an int64_t[2] ctx instead. */
static void clamp_i64(char **data, const int64_t *st, int64_t n, void *ctx)
{
    const int64_t *bounds = ctx; // {lo, hi}
    int64_t *out = (int64_t *)data[0];
    const int64_t *x = (const int64_t *)data[1];
    for (int64_t i = 0; i < n; i++) {
        int64_t t = x[i * st[1]] < bounds[0] ? bounds[0] : x[i * st[1]];
        out[i * st[0]] = t > bounds[1] ? bounds[1] : t;
    }
}

static const tg_elementwise_kernel clamp_kernel = {clamp_f32, clamp_f64,
                                                   clamp_i64, false};
/* The same without an int64 loop: int64 inputs are computed in float32. */
static const tg_elementwise_kernel clamp_float_kernel = {clamp_f32, clamp_f64,
                                                         NULL, false};

/* A bound as an int64, with an open (infinite) side at the end of the
 * range; the caller has checked that it is whole and in range. */
static int64_t int_bound(double v)
{
    if (isinf(v))
        return v < 0 ? INT64_MIN : INT64_MAX;
    return (int64_t)v;
}

/* forward: out = min(max(x, lo), hi), so dx = g where lo <= x <= hi and
 * 0 elsewhere. At a bound the gradient passes (PyTorch's subgradient 1);
 * for a NaN x, or everywhere when lo > hi, it does not (the comparisons
 * fail), as PyTorch's ClampBackward1. An open side (-INFINITY / INFINITY)
 * holds for every number. saved: x; ctx: lo, hi */
typedef struct clamp_ctx {
    double lo, hi;
} clamp_ctx;

static int clamp_backward(tg_node *node, const tg_tensor *g,
                          tg_tensor **grads)
{
    const tg_tensor *x = tg_node_saved(node, 0);
    const clamp_ctx *c = tg_node_ctx(node);
    tg_tensor *above = tg_ge_scalar(x, c->lo);
    tg_tensor *below = tg_le_scalar(x, c->hi);
    tg_tensor *inside = tg_mul(above, below); // int64 0/1: lo <= x <= hi
    tg_tensor *zero = tg_scalar(0.0, g->dtype);
    grads[0] = tg_where(inside, g, zero);
    tg_release(above);
    tg_release(below);
    tg_release(inside);
    tg_release(zero);
    return grads[0] ? 0 : -1;
}
static const tg_op clamp_op = {"ClampBackward1", clamp_backward,
                               sizeof(clamp_ctx)};

/* Records clamp_op for out = clamp(x, lo, hi). */
static tg_tensor *record_clamp(tg_tensor *out, const tg_tensor *x, double lo,
                               double hi)
{
    tg_node *node = tg_record(&clamp_op, &out, TG_INPUTS(x));
    if (node) {
        tg_node_save(node, x);
        *(clamp_ctx *)tg_node_ctx(node) = (clamp_ctx){lo, hi};
    }
    return out;
}

tg_tensor *tg_clamp(const tg_tensor *x, double lo, double hi)
{
    if (!x)
        return NULL;
    tg_check_alive("tg_clamp", x);
    if (isnan(lo) || isnan(hi)) {
        tg_error("tg_clamp",
                 "cannot clamp to [%g, %g]\n"
                 "  rule: a bound must be a number; -INFINITY or INFINITY "
                 "leaves that side open, NaN is not allowed\n"
                 "  hint: pass -INFINITY for no lower bound and INFINITY "
                 "for no upper bound",
                 lo, hi);
        return NULL;
    }
    if (x->dtype == TG_INT64 &&
        (isinf(lo) || tg_scalar_type(x, lo) == TG_INT64) &&
        (isinf(hi) || tg_scalar_type(x, hi) == TG_INT64)) {
        int64_t bounds[2] = {int_bound(lo), int_bound(hi)};
        return tg_unary_apply("tg_clamp", &clamp_kernel, x, bounds);
    }
    double bounds[2] = {lo, hi};
    return record_clamp(
        tg_unary_apply("tg_clamp", &clamp_float_kernel, x, bounds), x, lo,
        hi);
}
