/*
 * tests/autograd/test_elementwise.c - the elementwise ops (arith.c,
 * unary.c, activation.c, compare.c) against NumPy references.
 *
 * What is covered: every binary op over every broadcasting pair of
 * scripts/reference/gen_elementwise.py in float32, float64 and int64; every
 * unary op and activation over a range of values with large magnitudes,
 * signed zeros, infinities and NaN; the type promotion table; the scalar
 * forms; non-contiguous inputs (transposed, stepped, offset, stride-0);
 * where, clamp and the comparisons; NaN propagation; the error messages;
 * NULL arguments. Not covered here: gradients (the tape's tests).
 *
 * Tolerances used throughout:
 * - EXACT (0, 0): +, -, *, /, sqrt, maximum, minimum, neg, abs, relu,
 *   clamp, where and comparisons. IEEE 754 rounds + - * / and sqrt
 *   correctly, and the others only move values, so C and NumPy must agree
 *   bit for bit.
 * - F32 (rtol 1e-6, atol FLT_MIN): exp, log, tanh, pow, ... in float32. The
 *   reference is the float64 result rounded once to float32; libm's float32
 *   functions are within 1-2 ulp of the true value, and 1e-6 is about 8
 *   float32 ulp (2^-23 = 1.2e-7), so a formula error of even 1e-5 fails.
 *   Results below FLT_MIN (1.2e-38, e.g. e^-100) are subnormals with fewer
 *   significant bits, so they are compared absolutely to within FLT_MIN.
 * - F64 (rtol 1e-12, atol DBL_MIN): the same in float64, where libm is
 *   within an ulp or two (2^-52 = 2.2e-16); 1e-12 leaves room for formulas
 *   that differ from NumPy's by a rounding (x * (1/sqrt 2) vs x / sqrt 2 in
 *   gelu's far tail) and still catches any real mistake.
 */
#include "../common.h"
#include "tensor/internal.h" // tg_view_make, tg_contiguous_as: hand-built views

#include <float.h>
#include <math.h>
#include <stdio.h>

/* |actual - expected| <= atol + rtol * |expected|, as tg_test_close. */
typedef struct tolerance {
    double rtol, atol;
} tolerance;
static const tolerance EXACT = {0.0, 0.0};
static const tolerance F32 = {1e-6, FLT_MIN};
static const tolerance F64 = {1e-12, DBL_MIN};

typedef tg_tensor *(*unary_fn)(const tg_tensor *);
typedef tg_tensor *(*binary_fn)(const tg_tensor *, const tg_tensor *);

/* ------------------------------------------------------------- helpers */

/* A contiguous view of shape `shape` starting `offset` elements into flat. */
static tg_tensor *view_at(const tg_tensor *flat, const int64_t *shape,
                          int ndim, int64_t offset)
{
    int64_t strides[TG_MAX_DIMS];
    tg_contiguous_strides(shape, ndim, strides);
    return tg_view_make(flat, shape, strides, ndim, offset);
}

/* A strided view of x (any layout) with the given shape, element strides
 * and offset relative to x's own. */
static tg_tensor *strided(const tg_tensor *x, const int64_t *shape,
                          int ndim, const int64_t *strides, int64_t offset)
{
    return tg_view_make(x, shape, strides, ndim, x->offset + offset);
}

#define assert_matches(actual, expected, tol)                               \
    do {                                                                    \
        char report_[1024];                                                 \
        cr_assert(tg_test_close((actual), (expected), (tol).rtol,           \
                                (tol).atol, true, report_, sizeof report_), \
                  "%s", report_);                                           \
    } while (0)

/* A 1-d tensor of n elements of data; VEC_F32(1, 2) counts them itself. */
static tg_tensor *vec(tg_dtype dtype, const void *data, int64_t n)
{
    return tg_from_array(data, &n, 1, dtype);
}
#define VEC_F32(...) \
    vec(TG_FLOAT32, (float[]){__VA_ARGS__}, \
        (int64_t)(sizeof((float[]){__VA_ARGS__}) / sizeof(float)))
#define VEC_F64(...) \
    vec(TG_FLOAT64, (double[]){__VA_ARGS__}, \
        (int64_t)(sizeof((double[]){__VA_ARGS__}) / sizeof(double)))
#define VEC_I64(...) \
    vec(TG_INT64, (int64_t[]){__VA_ARGS__}, \
        (int64_t)(sizeof((int64_t[]){__VA_ARGS__}) / sizeof(int64_t)))

/* Asserts out (released here) equals expected (released here) exactly,
 * dtype included. */
static void expect_exact(tg_tensor *out, tg_tensor *expected)
{
    assert_matches(out, expected, EXACT);
    tg_release(out);
    tg_release(expected);
}

/* ------------------------------------------------ broadcasting fixtures */

/* Each pair of elementwise_bcast_shapes: the shapes of a, b and the
 * result, and where the pair starts in the concatenated fixture files. */
#define MAX_PAIRS 64
typedef struct pair_layout {
    int ndim[3]; // a, b, out
    int64_t shape[3][TG_MAX_DIMS];
    int64_t offset[3];
} pair_layout;

typedef struct pair_table {
    int n;
    pair_layout pairs[MAX_PAIRS];
    int64_t total[3]; // elements of a, b, out over all pairs
} pair_table;

static void load_pairs(pair_table *t)
{
    tg_tensor *s = tg_test_load_ref("elementwise_bcast_shapes");
    cr_assert_eq(s->ndim, 3);
    cr_assert_eq(s->shape[1], 3);
    cr_assert_leq(s->shape[0], MAX_PAIRS);
    int width = (int)s->shape[2]; // 1 + max dims
    t->n = (int)s->shape[0];
    t->total[0] = t->total[1] = t->total[2] = 0;
    for (int i = 0; i < t->n; i++) {
        for (int k = 0; k < 3; k++) {
            pair_layout *p = &t->pairs[i];
            int64_t row = ((int64_t)i * 3 + k) * width;
            p->ndim[k] = (int)tg_read_flat(s, row);
            cr_assert(p->ndim[k] < width);
            int64_t numel = 1;
            for (int d = 0; d < p->ndim[k]; d++) {
                p->shape[k][d] = (int64_t)tg_read_flat(s, row + 1 + d);
                numel *= p->shape[k][d];
            }
            p->offset[k] = t->total[k];
            t->total[k] += numel;
        }
    }
    tg_release(s);
}

static tg_tensor *load_checked(const char *name, int64_t numel)
{
    tg_tensor *t = tg_test_load_ref(name);
    cr_assert_eq(t->numel, numel, "%s has %lld elements, expected %lld",
                 name, (long long)t->numel, (long long)numel);
    return t;
}

/* Runs op over every pair with inputs elementwise_bcast_{a,b}_<dt> and
 * compares with elementwise_bcast_<name>_<ref_dt> (dtype included). Returns
 * false with a report naming the pair on the first mismatch. */
static bool check_pairs(binary_fn op, const char *name, const char *dt,
                        tolerance tol, char *report, size_t size)
{
    pair_table t;
    load_pairs(&t);
    char file[128];
    snprintf(file, sizeof file, "elementwise_bcast_a_%s", dt);
    tg_tensor *a = load_checked(file, t.total[0]);
    snprintf(file, sizeof file, "elementwise_bcast_b_%s", dt);
    tg_tensor *b = load_checked(file, t.total[1]);
    snprintf(file, sizeof file, "elementwise_bcast_%s_%s", name, dt);
    tg_tensor *expected = load_checked(file, t.total[2]);
    bool ok = true;
    for (int i = 0; i < t.n && ok; i++) {
        const pair_layout *p = &t.pairs[i];
        tg_tensor *va = view_at(a, p->shape[0], p->ndim[0], p->offset[0]);
        tg_tensor *vb = view_at(b, p->shape[1], p->ndim[1], p->offset[1]);
        tg_tensor *ve = view_at(expected, p->shape[2], p->ndim[2],
                                p->offset[2]);
        tg_tensor *out = op(va, vb);
        char inner[768];
        ok = tg_test_close(out, ve, tol.rtol, tol.atol, true, inner,
                           sizeof inner);
        if (!ok) {
            char s1[TG_SHAPE_STR_MAX], s2[TG_SHAPE_STR_MAX];
            snprintf(report, size, "%s (%s), pair %d, a %s with b %s: %s",
                     name, dt, i, tg_shape_str(va, s1), tg_shape_str(vb, s2),
                     inner);
        }
        tg_release(out);
        tg_release(va);
        tg_release(vb);
        tg_release(ve);
    }
    tg_release(a);
    tg_release(b);
    tg_release(expected);
    return ok;
}

#define assert_pairs(op, name, dt, tol)                                     \
    do {                                                                    \
        char report_[1024];                                                 \
        cr_assert(check_pairs((op), (name), (dt), (tol), report_,           \
                              sizeof report_),                              \
                  "%s", report_);                                           \
    } while (0)

static const struct {
    const char *name;
    binary_fn fn;
} EXACT_BINARY[] = {
    {"add", tg_add},         {"sub", tg_sub}, {"mul", tg_mul},
    {"div", tg_div},         {"maximum", tg_maximum},
    {"minimum", tg_minimum},
};

static const struct {
    const char *name;
    binary_fn fn;
} COMPARISONS[] = {
    {"eq", tg_eq}, {"ne", tg_ne}, {"lt", tg_lt},
    {"le", tg_le}, {"gt", tg_gt}, {"ge", tg_ge},
};

#define COUNT(array) (sizeof(array) / sizeof *(array))

TG_TEST(elementwise, binary_f32_matches_numpy_on_every_broadcast)
{
    for (size_t i = 0; i < COUNT(EXACT_BINARY); i++)
        assert_pairs(EXACT_BINARY[i].fn, EXACT_BINARY[i].name, "f32", EXACT);
    assert_pairs(tg_pow, "pow", "f32", F32);
}

TG_TEST(elementwise, binary_f64_matches_numpy_on_every_broadcast)
{
    for (size_t i = 0; i < COUNT(EXACT_BINARY); i++)
        assert_pairs(EXACT_BINARY[i].fn, EXACT_BINARY[i].name, "f64", EXACT);
    assert_pairs(tg_pow, "pow", "f64", F64);
}

/* int64: exact integer results, except div whose reference is float32
 * (true division of int64 happens in float32); the small integers convert
 * exactly and one float32 division is correctly rounded, so still EXACT. */
TG_TEST(elementwise, binary_i64_matches_numpy_on_every_broadcast)
{
    for (size_t i = 0; i < COUNT(EXACT_BINARY); i++)
        assert_pairs(EXACT_BINARY[i].fn, EXACT_BINARY[i].name, "i64", EXACT);
    assert_pairs(tg_pow, "pow", "i64", EXACT);
}

TG_TEST(elementwise, comparisons_match_numpy_on_every_broadcast)
{
    for (size_t i = 0; i < COUNT(COMPARISONS); i++) {
        assert_pairs(COMPARISONS[i].fn, COMPARISONS[i].name, "f32", EXACT);
        assert_pairs(COMPARISONS[i].fn, COMPARISONS[i].name, "i64", EXACT);
    }
}

/* The checker must be able to fail: a wrong op against a reference. */
TG_TEST(elementwise, pair_check_rejects_a_wrong_op)
{
    char report[1024];
    cr_assert_not(check_pairs(tg_sub, "add", "f32", EXACT, report,
                              sizeof report));
    cr_assert(strstr(report, "add (f32), pair 0") != NULL, "%s", report);
    cr_assert_not(check_pairs(tg_maximum, "minimum", "i64", EXACT, report,
                              sizeof report));
    cr_assert_not(check_pairs(tg_le, "lt", "i64", EXACT, report,
                              sizeof report));
    /* a * b for a ** b. */
    cr_assert_not(check_pairs(tg_mul, "pow", "f32", F32, report,
                              sizeof report));
}

/* ----------------------------------------------------- unary fixtures */

static tg_tensor *gelu_exact(const tg_tensor *x)
{
    return tg_gelu(x, TG_GELU_EXACT);
}

static tg_tensor *gelu_tanh(const tg_tensor *x)
{
    return tg_gelu(x, TG_GELU_TANH);
}

static tg_tensor *clamp_m1_2(const tg_tensor *x)
{
    return tg_clamp(x, -1.0, 2.0); // CLAMP_LO, CLAMP_HI of the generator
}

static const struct {
    const char *name;
    unary_fn fn;
    bool exact; // see EXACT above
} UNARY[] = {
    {"neg", tg_neg, true},          {"abs", tg_abs, true},
    {"relu", tg_relu, true},        {"sqrt", tg_sqrt, true},
    {"exp", tg_exp, false},         {"log", tg_log, false},
    {"rsqrt", tg_rsqrt, false},     {"tanh", tg_tanh, false},
    {"sigmoid", tg_sigmoid, false}, {"gelu", gelu_exact, false},
    {"gelu_tanh", gelu_tanh, false},
};
/* tg_silu is not in UNARY, whose every op also runs on int64: it refuses
 * int64 (as torch.nn.functional.silu does), so each test over UNARY names
 * it on its own for float32 and float64. */

/* op(elementwise_unary_x_<dt>) against elementwise_<name>_<dt>; the
 * tolerance follows the reference's dtype (float32 for int64 inputs of the
 * float-only ops). */
static bool check_unary(unary_fn op, const char *name, const char *dt,
                        bool exact, char *report, size_t size)
{
    char file[128];
    snprintf(file, sizeof file, "elementwise_unary_x_%s", dt);
    tg_tensor *x = tg_test_load_ref(file);
    snprintf(file, sizeof file, "elementwise_%s_%s", name, dt);
    tg_tensor *expected = tg_test_load_ref(file);
    tg_tensor *out = op(x);
    char inner[768];
    tolerance tol = exact                          ? EXACT
                    : expected->dtype == TG_FLOAT64 ? F64
                                                    : F32;
    bool ok = tg_test_close(out, expected, tol.rtol, tol.atol, true, inner,
                            sizeof inner);
    if (!ok)
        snprintf(report, size, "%s (%s): %s", name, dt, inner);
    tg_release(out);
    tg_release(x);
    tg_release(expected);
    return ok;
}

#define assert_unary(op, name, dt, exact)                                   \
    do {                                                                    \
        char report_[1024];                                                 \
        cr_assert(check_unary((op), (name), (dt), (exact), report_,         \
                              sizeof report_),                              \
                  "%s", report_);                                           \
    } while (0)

TG_TEST(elementwise, unary_and_activations_match_numpy)
{
    for (size_t i = 0; i < COUNT(UNARY); i++) {
        assert_unary(UNARY[i].fn, UNARY[i].name, "f32", UNARY[i].exact);
        assert_unary(UNARY[i].fn, UNARY[i].name, "f64", UNARY[i].exact);
        assert_unary(UNARY[i].fn, UNARY[i].name, "i64", UNARY[i].exact);
    }
    assert_unary(clamp_m1_2, "clamp", "f32", true);
    assert_unary(clamp_m1_2, "clamp", "f64", true);
    assert_unary(tg_silu, "silu", "f32", false);
    assert_unary(tg_silu, "silu", "f64", false);
}

TG_TEST(elementwise, unary_check_rejects_a_wrong_op)
{
    char report[1024];
    /* tanh for sigmoid, and the two gelu forms for each other: they differ
     * by up to 1e-3 relative, far outside F32. */
    cr_assert_not(check_unary(tg_tanh, "sigmoid", "f32", false, report,
                              sizeof report));
    cr_assert_not(check_unary(gelu_tanh, "gelu", "f32", false, report,
                              sizeof report));
    cr_assert_not(check_unary(gelu_exact, "gelu_tanh", "f64", false, report,
                              sizeof report));
    cr_assert(strstr(report, "gelu_tanh (f64)") != NULL, "%s", report);
    /* gelu for silu: x Phi(x) and x sigmoid(x) differ by up to 0.1. */
    cr_assert_not(check_unary(gelu_exact, "silu", "f32", false, report,
                              sizeof report));
    cr_assert(strstr(report, "silu (f32)") != NULL, "%s", report);
}

/* Which dtypes the unary ops produce, as PyTorch. */
TG_TEST(elementwise, unary_dtypes)
{
    tg_tensor *i = VEC_I64(1, -2);
    const struct {
        unary_fn fn;
        tg_dtype out;
    } cases[] = {{tg_neg, TG_INT64},      {tg_abs, TG_INT64},
                 {tg_relu, TG_INT64},     {tg_exp, TG_FLOAT32},
                 {tg_log, TG_FLOAT32},    {tg_sqrt, TG_FLOAT32},
                 {tg_rsqrt, TG_FLOAT32},  {tg_tanh, TG_FLOAT32},
                 {tg_sigmoid, TG_FLOAT32}, {gelu_exact, TG_FLOAT32}};
    for (size_t k = 0; k < COUNT(cases); k++) {
        tg_tensor *out = cases[k].fn(i);
        cr_assert_not_null(out, "case %zu: %s", k, tg_last_error());
        cr_assert_eq(out->dtype, cases[k].out, "case %zu", k);
        tg_release(out);
        tg_tensor *d = tg_contiguous_as(i, TG_FLOAT64);
        out = cases[k].fn(d); // float64 stays float64 for every op
        cr_assert_eq(out->dtype, TG_FLOAT64, "case %zu", k);
        tg_release(out);
        tg_release(d);
    }
    tg_release(i);
}

/* silu keeps float32 and float64 and refuses int64, as PyTorch ("silu_cpu"
 * not implemented for 'Long'). */
TG_TEST(elementwise, silu_dtypes_and_int64_error)
{
    tg_tensor *f = VEC_F32(1, -2), *d = VEC_F64(1, -2), *i = VEC_I64(1, -2);
    tg_tensor *out = tg_silu(f);
    cr_assert(out && out->dtype == TG_FLOAT32, "%s", tg_last_error());
    tg_release(out);
    out = tg_silu(d);
    cr_assert(out && out->dtype == TG_FLOAT64, "%s", tg_last_error());
    tg_release(out);
    cr_assert_null(tg_silu(i));
    tg_assert_error("tg_silu: cannot take silu of an int64 tensor",
                    "\n  rule: x must be float32 or float64",
                    "\n  hint: convert first: tg_silu(tg_to_dtype(x, ");
    tg_release(f);
    tg_release(d);
    tg_release(i);
}

/* ------------------------------------------------------ type promotion */

/* out = a + b for one (dtype, 0-d or 1-d) combination. */
static void expect_add_type(tg_dtype ta, int nda, tg_dtype tb, int ndb,
                            tg_dtype expected)
{
    tg_tensor *a = nda ? tg_full(TG_SHAPE(2), 1.0, ta) : tg_scalar(1.0, ta);
    tg_tensor *b = ndb ? tg_full(TG_SHAPE(2), 2.0, tb) : tg_scalar(2.0, tb);
    tg_tensor *out = tg_add(a, b);
    cr_assert_not_null(out, "%s", tg_last_error());
    cr_assert_eq(out->dtype, expected, "%s%s + %s%s gave %s, expected %s",
                 tg_dtype_name(ta), nda ? "" : " 0-d", tg_dtype_name(tb),
                 ndb ? "" : " 0-d", tg_dtype_name(out->dtype),
                 tg_dtype_name(expected));
    cr_assert_eq(out->ndim, nda > ndb ? nda : ndb);
    cr_assert_eq(tg_read_flat(out, 0), 3.0);
    tg_release(a);
    tg_release(b);
    tg_release(out);
}

TG_TEST(elementwise, promotion_table)
{
    const tg_dtype F = TG_FLOAT32, D = TG_FLOAT64, I = TG_INT64;
    /* Two dimensioned tensors: the higher kind, then the wider float. */
    expect_add_type(F, 1, D, 1, D);
    expect_add_type(D, 1, F, 1, D);
    expect_add_type(I, 1, F, 1, F);
    expect_add_type(F, 1, I, 1, F);
    expect_add_type(I, 1, D, 1, D);
    expect_add_type(I, 1, I, 1, I);
    /* A 0-d tensor decides only when it is of a higher kind. */
    expect_add_type(F, 1, D, 0, F);
    expect_add_type(D, 0, F, 1, F);
    expect_add_type(I, 1, D, 0, D);
    expect_add_type(I, 1, F, 0, F);
    expect_add_type(F, 1, I, 0, F);
    expect_add_type(I, 0, I, 1, I);
    /* Two 0-d tensors promote as two dimensioned ones. */
    expect_add_type(F, 0, D, 0, D);
    expect_add_type(I, 0, F, 0, F);
}

TG_TEST(elementwise, promotion_with_scalars_and_true_division)
{
    tg_tensor *i = VEC_I64(1, 2);
    tg_tensor *f = VEC_F32(1, 2);
    tg_tensor *d = VEC_F64(1, 2);
    /* i64 + 2 stays int64; i64 + 2.5 becomes float32 (a Python float). */
    expect_exact(tg_add_scalar(i, 2), VEC_I64(3, 4));
    expect_exact(tg_add_scalar(i, 2.5), VEC_F32(3.5f, 4.5f));
    /* A float tensor keeps its dtype: the scalar is rounded to it first. */
    expect_exact(tg_add_scalar(f, 0.1), VEC_F32(1 + 0.1f, 2 + 0.1f));
    expect_exact(tg_add_scalar(d, 0.1), VEC_F64(1 + 0.1, 2 + 0.1));
    /* i64 / i64 is true division in float32. */
    tg_tensor *three = VEC_I64(3, -7);
    expect_exact(tg_div(three, i), VEC_F32(3.0f, -3.5f));
    expect_exact(tg_div_scalar(three, 2), VEC_F32(1.5f, -3.5f));
    tg_release(three);
    tg_release(i);
    tg_release(f);
    tg_release(d);
}

TG_TEST(elementwise, scalar_forms)
{
    tg_tensor *f = VEC_F32(1, -2, 4);
    tg_tensor *i = VEC_I64(1, -2, 4);
    expect_exact(tg_sub_scalar(f, 1.5), VEC_F32(-0.5f, -3.5f, 2.5f));
    expect_exact(tg_rsub_scalar(f, 10), VEC_F32(9, 12, 6));
    expect_exact(tg_mul_scalar(f, -0.5), VEC_F32(-0.5f, 1, -2));
    expect_exact(tg_div_scalar(f, 4), VEC_F32(0.25f, -0.5f, 1));
    expect_exact(tg_rdiv_scalar(f, 10), VEC_F32(10, -5, 2.5f));
    expect_exact(tg_pow_scalar(f, 2), VEC_F32(1, 4, 16));
    expect_exact(tg_sub_scalar(i, 1), VEC_I64(0, -3, 3));
    expect_exact(tg_rsub_scalar(i, 10), VEC_I64(9, 12, 6));
    expect_exact(tg_mul_scalar(i, 3), VEC_I64(3, -6, 12));
    expect_exact(tg_pow_scalar(i, 3), VEC_I64(1, -8, 64));
    expect_exact(tg_pow_scalar(i, 0), VEC_I64(1, 1, 1));
    /* true division: 10 / torch.tensor([1, -2, 4]) is float32 */
    expect_exact(tg_rdiv_scalar(i, 10), VEC_F32(10, -5, 2.5f));
    /* A fractional exponent makes int64 float32: sqrt(4) = 2, sqrt(-2) is
     * NaN. */
    expect_exact(tg_pow_scalar(i, 0.5), VEC_F32(1, NAN, 2));
    tg_release(f);
    tg_release(i);
}

/* int64 arithmetic wraps around (two's complement), as PyTorch. */
TG_TEST(elementwise, int64_wraps_around)
{
    tg_tensor *big = VEC_I64(INT64_MAX, INT64_MIN);
    tg_tensor *one = VEC_I64(1, 1);
    expect_exact(tg_add(big, one), VEC_I64(INT64_MIN, INT64_MIN + 1));
    expect_exact(tg_sub(big, one), VEC_I64(INT64_MAX - 1, INT64_MAX));
    expect_exact(tg_mul_scalar(big, 2), VEC_I64(-2, 0));
    expect_exact(tg_neg(big), VEC_I64(INT64_MIN + 1, INT64_MIN));
    expect_exact(tg_abs(big), VEC_I64(INT64_MAX, INT64_MIN));
    /* 2^64 = 0 and 3^64 = 8733086111712066817 modulo 2^64 */
    tg_tensor *small = VEC_I64(2, 3);
    expect_exact(tg_pow_scalar(small, 64), VEC_I64(0, 8733086111712066817));
    tg_release(small);
    tg_release(big);
    tg_release(one);
}

/* ------------------------------------------------------ non-contiguous */

/* op on views must equal op on contiguous copies of the same views. */
static void expect_same_on_copies_binary(binary_fn op, const tg_tensor *a,
                                         const tg_tensor *b)
{
    tg_tensor *ca = tg_contiguous_as(a, a->dtype);
    tg_tensor *cb = tg_contiguous_as(b, b->dtype);
    cr_assert(tg_is_contiguous(ca) && tg_is_contiguous(cb));
    tg_tensor *out = op(a, b), *expected = op(ca, cb);
    cr_assert_not_null(expected, "%s", tg_last_error());
    assert_matches(out, expected, EXACT);
    tg_release(out);
    tg_release(expected);
    tg_release(ca);
    tg_release(cb);
}

static void expect_same_on_copies_unary(unary_fn op, const tg_tensor *x)
{
    tg_tensor *cx = tg_contiguous_as(x, x->dtype);
    tg_tensor *out = op(x), *expected = op(cx);
    cr_assert_not_null(expected, "%s", tg_last_error());
    assert_matches(out, expected, EXACT);
    tg_release(out);
    tg_release(expected);
    tg_release(cx);
}

/* where(a > 1, a, b): where with a mask made from a view. */
static tg_tensor *where_gt1(const tg_tensor *a, const tg_tensor *b)
{
    tg_tensor *cond = tg_gt_scalar(a, 1.0);
    tg_tensor *out = tg_where(cond, a, b);
    tg_release(cond);
    return out;
}

/* Transposing both inputs commutes with any elementwise op: the op on the
 * transposed views must equal the same transpose of the NumPy reference. */
TG_TEST(elementwise, transposed_inputs_match_the_transposed_reference)
{
    pair_table t;
    load_pairs(&t);
    const pair_layout *p = &t.pairs[0]; // (3, 4) with (3, 4)
    cr_assert(p->ndim[0] == 2 && p->shape[0][0] == 3 &&
              p->shape[0][1] == 4 && p->ndim[1] == 2);
    const char *dts[] = {"f32", "f64", "i64"};
    for (size_t k = 0; k < COUNT(dts); k++) {
        char file[128];
        snprintf(file, sizeof file, "elementwise_bcast_a_%s", dts[k]);
        tg_tensor *a = tg_test_load_ref(file);
        snprintf(file, sizeof file, "elementwise_bcast_b_%s", dts[k]);
        tg_tensor *b = tg_test_load_ref(file);
        /* x.T of a (3, 4) block: shape (4, 3), strides (1, 4). */
        tg_tensor *at = strided(a, TG_SHAPE(4, 3), (int64_t[]){1, 4},
                                p->offset[0]);
        tg_tensor *bt = strided(b, TG_SHAPE(4, 3), (int64_t[]){1, 4},
                                p->offset[1]);
        for (size_t i = 0; i < COUNT(EXACT_BINARY); i++) {
            snprintf(file, sizeof file, "elementwise_bcast_%s_%s",
                     EXACT_BINARY[i].name, dts[k]);
            tg_tensor *e = tg_test_load_ref(file);
            tg_tensor *et = strided(e, TG_SHAPE(4, 3), (int64_t[]){1, 4},
                                    p->offset[2]);
            tg_tensor *etc = tg_contiguous_as(et, et->dtype);
            tg_tensor *out = EXACT_BINARY[i].fn(at, bt);
            assert_matches(out, etc, EXACT);
            tg_release(out);
            tg_release(etc);
            tg_release(et);
            tg_release(e);
        }
        tg_release(at);
        tg_release(bt);
        tg_release(a);
        tg_release(b);
    }
}

/* op(xs), xs = x[1::3] (n elements), against elementwise_<name>_f32[1::3]. */
static void expect_stepped(unary_fn op, const char *name, bool exact,
                           const tg_tensor *xs, int64_t n)
{
    char file[128];
    snprintf(file, sizeof file, "elementwise_%s_f32", name);
    tg_tensor *e = tg_test_load_ref(file);
    tg_tensor *es = strided(e, &n, 1, (int64_t[]){3}, 1);
    tg_tensor *esc = tg_contiguous_as(es, es->dtype);
    tg_tensor *out = op(xs);
    tolerance tol = exact ? EXACT : F32;
    char report[1024];
    cr_assert(tg_test_close(out, esc, tol.rtol, tol.atol, true, report,
                            sizeof report),
              "%s: %s", name, report);
    tg_release(out);
    tg_release(esc);
    tg_release(es);
    tg_release(e);
}

/* Every third element of the unary input: exp(x[1::3]) = exp(x)[1::3]. */
TG_TEST(elementwise, stepped_unary_inputs_match_the_stepped_reference)
{
    tg_tensor *x = tg_test_load_ref("elementwise_unary_x_f32");
    int64_t n = (x->numel - 1 + 2) / 3;
    tg_tensor *xs = strided(x, &n, 1, (int64_t[]){3}, 1);
    for (size_t i = 0; i < COUNT(UNARY); i++)
        expect_stepped(UNARY[i].fn, UNARY[i].name, UNARY[i].exact, xs, n);
    expect_stepped(tg_silu, "silu", false, xs, n);
    tg_release(xs);
    tg_release(x);
}

/* Transposed, stepped, offset and stride-0 (expanded) layouts, each with
 * a partner of another layout that broadcasts with it, for every binary op
 * (both orders), comparison, where, unary op and clamp. */
TG_TEST(elementwise, views_give_the_same_result_as_contiguous_copies)
{
    const tg_dtype dtypes[] = {TG_FLOAT32, TG_FLOAT64, TG_INT64};
    for (size_t k = 0; k < COUNT(dtypes); k++) {
        /* base = arange(1, 25) as (4, 6), rev = 26 - base: both positive,
         * so int64 pow is defined either way round. */
        tg_tensor *flat = tg_arange(1, 25, 1, dtypes[k]);
        tg_tensor *base = view_at(flat, TG_SHAPE(4, 6), 0);
        tg_tensor *rev = tg_rsub_scalar(base, 26);
        struct {
            tg_tensor *view, *partner;
        } cases[] = {
            /* base.T (6, 4) with rev.T */
            {strided(base, TG_SHAPE(6, 4), (int64_t[]){1, 6}, 0),
             strided(rev, TG_SHAPE(6, 4), (int64_t[]){1, 6}, 0)},
            /* base[1:, ::2] (3, 3) with a (3, 3) of strides (1, 4) */
            {strided(base, TG_SHAPE(3, 3), (int64_t[]){6, 2}, 6),
             strided(rev, TG_SHAPE(3, 3), (int64_t[]){1, 4}, 2)},
            /* row 2 expanded to (5, 6) (stride 0) with rev[0, 3:9] flat */
            {strided(base, TG_SHAPE(5, 6), (int64_t[]){0, 1}, 12),
             strided(rev, TG_SHAPE(6), (int64_t[]){1}, 3)},
            /* column 5 expanded to (4, 4) with rev.flat[::5][:4] */
            {strided(base, TG_SHAPE(4, 4), (int64_t[]){6, 0}, 5),
             strided(rev, TG_SHAPE(4), (int64_t[]){5}, 0)},
        };
        for (size_t c = 0; c < COUNT(cases); c++) {
            tg_tensor *v = cases[c].view, *p = cases[c].partner;
            for (size_t i = 0; i < COUNT(EXACT_BINARY); i++) {
                expect_same_on_copies_binary(EXACT_BINARY[i].fn, v, p);
                expect_same_on_copies_binary(EXACT_BINARY[i].fn, p, v);
            }
            expect_same_on_copies_binary(tg_pow, v, p);
            expect_same_on_copies_binary(tg_pow, p, v);
            for (size_t i = 0; i < COUNT(COMPARISONS); i++)
                expect_same_on_copies_binary(COMPARISONS[i].fn, v, p);
            expect_same_on_copies_binary(where_gt1, v, p);
            for (size_t i = 0; i < COUNT(UNARY); i++)
                expect_same_on_copies_unary(UNARY[i].fn, v);
            expect_same_on_copies_unary(clamp_m1_2, v);
            if (dtypes[k] != TG_INT64)
                expect_same_on_copies_unary(tg_silu, v);
            tg_release(v);
            tg_release(p);
        }
        tg_release(rev);
        tg_release(base);
        tg_release(flat);
    }
}

/* ---------------------------------------------------------- where, clamp */

TG_TEST(elementwise, where_broadcasts_three_ways_like_numpy)
{
    tg_tensor *cond = tg_test_load_ref("elementwise_where_cond"); // (2, 1, 4)
    tg_tensor *a = tg_test_load_ref("elementwise_where_a");       // (3, 1) f32
    tg_tensor *b = tg_test_load_ref("elementwise_where_b");       // (4,) f64
    tg_tensor *expected = tg_test_load_ref("elementwise_where_out");
    tg_tensor *out = tg_where(cond, a, b);
    assert_matches(out, expected, EXACT);
    tg_release(out);
    /* The checker sees a swapped where. */
    out = tg_where(cond, b, a);
    char report[1024];
    cr_assert_not(tg_test_close(out, expected, EXACT.rtol, EXACT.atol, true,
                                report, sizeof report));
    tg_release(out);
    tg_release(cond);
    tg_release(a);
    tg_release(b);
    tg_release(expected);
}

TG_TEST(elementwise, where_conditions_and_dtypes)
{
    /* A float cond: NaN and -0.5 are nonzero (true), 0 and -0 false. */
    tg_tensor *cond = VEC_F64(NAN, 0.0, -0.5, -0.0);
    tg_tensor *a = VEC_I64(1, 2, 3, 4);
    tg_tensor *b = VEC_I64(-1, -2, -3, -4);
    expect_exact(tg_where(cond, a, b), VEC_I64(1, -2, 3, -4));
    /* The result dtype is the promotion of a and b, 0-d rules included. */
    tg_tensor *d0 = tg_scalar(0.5, TG_FLOAT64);
    expect_exact(tg_where(cond, a, d0), VEC_F64(1, 0.5, 3, 0.5));
    tg_tensor *f = VEC_F32(10, 20, 30, 40);
    expect_exact(tg_where(cond, f, d0), VEC_F32(10, 0.5f, 30, 0.5f));
    expect_exact(tg_where(cond, a, f), VEC_F32(1, 20, 3, 40));
    /* A 0-d cond picks one side everywhere. */
    tg_tensor *yes = tg_scalar(1, TG_INT64);
    expect_exact(tg_where(yes, a, b), VEC_I64(1, 2, 3, 4));
    /* Empty. */
    tg_tensor *e = tg_zeros(TG_SHAPE(0, 4), TG_INT64);
    tg_tensor *out = tg_where(e, a, b);
    cr_assert(out && out->ndim == 2 && out->shape[0] == 0 &&
              out->shape[1] == 4);
    tg_release(out);
    tg_release(e);
    tg_release(yes);
    tg_release(f);
    tg_release(d0);
    tg_release(cond);
    tg_release(a);
    tg_release(b);
}

TG_TEST(elementwise, clamp_semantics)
{
    tg_tensor *x = VEC_F32(NAN, -5, -1, 0.5f, 2, 5, -INFINITY, INFINITY);
    /* NaN stays NaN; values outside go to the bounds. */
    expect_exact(tg_clamp(x, -1, 2),
                 VEC_F32(NAN, -1, -1, 0.5f, 2, 2, -1, 2));
    /* lo > hi gives hi everywhere (NaN still NaN), as torch.clamp. */
    expect_exact(tg_clamp(x, 3, 1), VEC_F32(NAN, 1, 1, 1, 1, 1, 1, 1));
    /* Open sides. */
    expect_exact(tg_clamp(x, -INFINITY, 0),
                 VEC_F32(NAN, -5, -1, 0, 0, 0, -INFINITY, 0));
    expect_exact(tg_clamp(x, 0, INFINITY),
                 VEC_F32(NAN, 0, 0, 0.5f, 2, 5, 0, INFINITY));
    tg_release(x);

    /* int64 with whole bounds stays int64, exact at the extremes. */
    tg_tensor *i = VEC_I64(INT64_MIN, -5, 0, 5, INT64_MAX);
    expect_exact(tg_clamp(i, -1, 2), VEC_I64(-1, -1, 0, 2, 2));
    expect_exact(tg_clamp(i, -INFINITY, INFINITY),
                 VEC_I64(INT64_MIN, -5, 0, 5, INT64_MAX));
    expect_exact(tg_clamp(i, -INFINITY, 3),
                 VEC_I64(INT64_MIN, -5, 0, 3, 3));
    /* A fractional bound makes it float32, as PyTorch's promotion. */
    tg_tensor *small = VEC_I64(-5, 0, 2, 5);
    expect_exact(tg_clamp(small, 1.5, 2.5), VEC_F32(1.5f, 1.5f, 2, 2.5f));
    expect_exact(tg_clamp(small, 0.5, 0.7), VEC_F32(0.5f, 0.5f, 0.7f, 0.7f));
    expect_exact(tg_clamp(small, 0.5, 3), VEC_F32(0.5f, 0.5f, 2, 3));
    expect_exact(tg_clamp(small, -1, 2.5), VEC_F32(-1, 0, 2, 2.5f));
    tg_release(small);
    tg_release(i);
}

/* ----------------------------------------------------------- NaN cases */

TG_TEST(elementwise, maximum_and_minimum_propagate_nan)
{
    tg_tensor *a = VEC_F32(NAN, 1, NAN, 1, -INFINITY);
    tg_tensor *b = VEC_F32(1, NAN, NAN, 2, INFINITY);
    expect_exact(tg_maximum(a, b), VEC_F32(NAN, NAN, NAN, 2, INFINITY));
    expect_exact(tg_minimum(a, b), VEC_F32(NAN, NAN, NAN, 1, -INFINITY));
    tg_release(a);
    tg_release(b);
    tg_tensor *c = VEC_F64(NAN, 3, -3);
    tg_tensor *s = tg_scalar(0, TG_FLOAT64); // broadcast 0-d
    expect_exact(tg_maximum(c, s), VEC_F64(NAN, 3, 0));
    expect_exact(tg_minimum(s, c), VEC_F64(NAN, 0, -3));
    tg_release(c);
    tg_release(s);
}

TG_TEST(elementwise, comparisons_promote_first_and_follow_ieee)
{
    /* 16777217 is not a float32: promoted, it becomes 16777216. */
    tg_tensor *i = VEC_I64(16777217);
    tg_tensor *f = VEC_F32(16777216.0f);
    expect_exact(tg_eq(i, f), VEC_I64(1));
    tg_release(i);
    tg_release(f);
    /* Scalars take the tensor's dtype as a Python number would. */
    tg_tensor *x = VEC_F32(0.1f, 3);
    expect_exact(tg_eq_scalar(x, 0.1), VEC_I64(1, 0));
    tg_release(x);
    tg_tensor *n = VEC_I64(3, 4);
    expect_exact(tg_lt_scalar(n, 3.5), VEC_I64(1, 0));
    expect_exact(tg_ge_scalar(n, 4), VEC_I64(0, 1));
    expect_exact(tg_ne_scalar(n, 3), VEC_I64(0, 1));
    expect_exact(tg_le_scalar(n, 3), VEC_I64(1, 0));
    expect_exact(tg_gt_scalar(n, 3.5), VEC_I64(0, 1));
    tg_release(n);
    /* NaN: only != is true. */
    tg_tensor *nan = VEC_F64(NAN);
    expect_exact(tg_eq(nan, nan), VEC_I64(0));
    expect_exact(tg_ne(nan, nan), VEC_I64(1));
    expect_exact(tg_lt_scalar(nan, 0), VEC_I64(0));
    expect_exact(tg_ge_scalar(nan, 0), VEC_I64(0));
    tg_release(nan);
}

/* Signed zeros, which tg_test_close cannot see: as PyTorch, -0 stays -0
 * through relu and clamp, abs and neg flip the sign bit. */
TG_TEST(elementwise, signed_zeros)
{
    tg_tensor *z = VEC_F32(-0.0f, 0.0f);
    const struct {
        unary_fn fn;
        bool sign[2]; // signbit of the results for -0, +0
    } cases[] = {{tg_abs, {false, false}},  {tg_neg, {false, true}},
                 {tg_relu, {true, false}},  {tg_sqrt, {true, false}},
                 {clamp_m1_2, {true, false}}, {tg_tanh, {true, false}}};
    for (size_t k = 0; k < COUNT(cases); k++) {
        tg_tensor *out = cases[k].fn(z);
        const float *v = tg_data_f32(out);
        cr_assert_not_null(v);
        for (int i = 0; i < 2; i++)
            cr_assert_eq(signbit(v[i]) != 0, cases[k].sign[i],
                         "case %zu, element %d is %g", k, i, (double)v[i]);
        tg_release(out);
    }
    tg_release(z);
}

/* Saturation: no NaN at any magnitude. */
TG_TEST(elementwise, activations_saturate_without_nan)
{
    float xf[] = {-1e30f, -1000, 1000, 1e30f};
    double xd[] = {-1e300, -1000, 1000, 1e300};
    tg_tensor *f = vec(TG_FLOAT32, xf, 4), *d = vec(TG_FLOAT64, xd, 4);
    expect_exact(tg_sigmoid(f), VEC_F32(0, 0, 1, 1));
    /* sigmoid(-100) = e^-100 / (1 + e^-100) = 3.72e-44 rounds to the
     * float32 subnormal 27 * 2^-149, not to 0 (PyTorch gives 0 here). */
    tg_tensor *m100 = VEC_F32(-100);
    expect_exact(tg_sigmoid(m100), VEC_F32(27 * 0x1p-149f));
    tg_release(m100);
    expect_exact(tg_sigmoid(d), VEC_F64(0, 0, 1, 1));
    expect_exact(tg_tanh(f), VEC_F32(-1, -1, 1, 1));
    expect_exact(tg_tanh(d), VEC_F64(-1, -1, 1, 1));
    /* gelu(x) -> 0 for x -> -inf and -> x for x -> +inf, in both forms. */
    expect_exact(tg_gelu(f, TG_GELU_EXACT), VEC_F32(-0.0f, -0.0f, 1000, 1e30f));
    expect_exact(tg_gelu(f, TG_GELU_TANH), VEC_F32(-0.0f, -0.0f, 1000, 1e30f));
    expect_exact(tg_gelu(d, TG_GELU_EXACT), VEC_F64(-0.0, -0.0, 1000, 1e300));
    expect_exact(tg_gelu(d, TG_GELU_TANH), VEC_F64(-0.0, -0.0, 1000, 1e300));
    /* silu(x) = x sigmoid(x): the same limits as gelu. */
    expect_exact(tg_silu(f), VEC_F32(-0.0f, -0.0f, 1000, 1e30f));
    expect_exact(tg_silu(d), VEC_F64(-0.0, -0.0, 1000, 1e300));
    tg_release(f);
    tg_release(d);
}

/* silu at the ends of the number line, against torch 1.13 (float32 and
 * float64): silu(-1000) = -0, silu(1000) = 1000, silu(inf) = inf, NaN
 * stays NaN. Two places differ from torch on purpose:
 * - silu(-inf) is the limit -0, where torch computes -inf * 0 = NaN;
 * - float32 silu(-100) = -100 e^-100 / (1 + e^-100) = -3.72e-42 rounds to
 *   the subnormal -2655 * 2^-149, where torch's float32 arithmetic gives
 *   -0 (torch's float64 result, -3.7200759760208e-42, rounds to the same
 *   float32). */
TG_TEST(elementwise, silu_at_infinities_and_nan)
{
    tg_tensor *f = VEC_F32(-INFINITY, -1000, 1000, INFINITY, NAN, -0.0f);
    tg_tensor *d = VEC_F64(-INFINITY, -1000, 1000, INFINITY, NAN, -0.0);
    expect_exact(tg_silu(f),
                 VEC_F32(-0.0f, -0.0f, 1000, INFINITY, NAN, -0.0f));
    expect_exact(tg_silu(d), VEC_F64(-0.0, -0.0, 1000, INFINITY, NAN, -0.0));
    tg_tensor *out = tg_silu(f); // the zeros are -0 (torch: at -1000, -0)
    const float *v = tg_data_f32(out);
    cr_assert(v && signbit(v[0]) && signbit(v[1]) && signbit(v[5]));
    tg_release(out);
    tg_tensor *m100 = VEC_F32(-100);
    expect_exact(tg_silu(m100), VEC_F32(-2655 * 0x1p-149f));
    tg_release(m100);
    tg_release(f);
    tg_release(d);
}

TG_TEST(elementwise, empty_inputs_give_empty_outputs)
{
    tg_tensor *x = tg_zeros(TG_SHAPE(0, 3), TG_FLOAT32);
    for (size_t i = 0; i < COUNT(UNARY); i++) {
        tg_tensor *out = UNARY[i].fn(x);
        cr_assert(out && out->ndim == 2 && out->shape[0] == 0 &&
                      out->shape[1] == 3,
                  "%s", UNARY[i].name);
        tg_release(out);
    }
    tg_tensor *out = tg_clamp(x, 0, 1);
    cr_assert(out && out->numel == 0);
    tg_release(out);
    out = tg_silu(x);
    cr_assert(out && out->ndim == 2 && out->shape[0] == 0 &&
              out->shape[1] == 3);
    tg_release(out);
    tg_release(x);
}

/* --------------------------------------------------------------- errors */

TG_TEST(elementwise, broadcast_errors_show_both_shapes)
{
    tg_tensor *a = tg_zeros(TG_SHAPE(2, 3), TG_FLOAT32);
    tg_tensor *b = tg_zeros(TG_SHAPE(4), TG_FLOAT32);
    const struct {
        const char *name;
        binary_fn fn;
    } ops[] = {{"tg_add", tg_add},         {"tg_sub", tg_sub},
               {"tg_mul", tg_mul},         {"tg_div", tg_div},
               {"tg_pow", tg_pow},         {"tg_maximum", tg_maximum},
               {"tg_minimum", tg_minimum}, {"tg_eq", tg_eq},
               {"tg_ne", tg_ne},           {"tg_lt", tg_lt},
               {"tg_le", tg_le},           {"tg_gt", tg_gt},
               {"tg_ge", tg_ge}};
    for (size_t i = 0; i < COUNT(ops); i++) {
        tg_clear_error();
        cr_assert_null(ops[i].fn(a, b), "%s", ops[i].name);
        char first[128];
        snprintf(first, sizeof first, "%s: cannot broadcast (2, 3) with (4,)",
                 ops[i].name);
        tg_assert_error(first, "\n  rule: ", "3 != 4");
    }
    tg_tensor *c = tg_zeros(TG_SHAPE(5, 1, 4), TG_FLOAT32);
    tg_tensor *d = tg_zeros(TG_SHAPE(3, 2), TG_FLOAT32);
    cr_assert_null(tg_mul(c, d));
    tg_assert_error("tg_mul: cannot broadcast (5, 1, 4) with (3, 2)",
                    "4 != 2");
    tg_release(a);
    tg_release(b);
    tg_release(c);
    tg_release(d);
}

TG_TEST(elementwise, where_error_shows_all_three_shapes)
{
    tg_tensor *c = tg_zeros(TG_SHAPE(2), TG_INT64);
    tg_tensor *a = tg_zeros(TG_SHAPE(3, 1), TG_FLOAT32);
    tg_tensor *b = tg_zeros(TG_SHAPE(3), TG_FLOAT32);
    cr_assert_null(tg_where(c, a, b));
    tg_assert_error("tg_where: cannot broadcast cond (2,), a (3, 1) and b "
                    "(3,) together",
                    "\n  rule: ", "2 != 3", "\n  hint: ");
    tg_release(c);
    tg_release(a);
    tg_release(b);
}

TG_TEST(elementwise, int64_pow_with_a_negative_exponent_is_an_error)
{
    tg_tensor *base = VEC_I64(2, 3);
    tg_tensor *e = VEC_I64(1, -1);
    cr_assert_null(tg_pow(base, e));
    tg_assert_error("tg_pow: cannot raise an int64 tensor to the negative "
                    "int64 power -1 (element 1 of b",
                    "\n  rule: ", "\n  hint: ");
    tg_clear_error();
    cr_assert_null(tg_pow_scalar(base, -2));
    tg_assert_error("tg_pow_scalar: cannot raise an int64 tensor to the "
                    "negative integer power -2\n",
                    "hint: convert the base first: "
                    "tg_pow_scalar(tg_to_dtype(a, TG_FLOAT32), -2)");
    /* A shape mistake is reported as such, even with negative exponents. */
    tg_tensor *e3 = VEC_I64(-1, -1, -1);
    cr_assert_null(tg_pow(base, e3));
    tg_assert_error("tg_pow: cannot broadcast (2,) with (3,)");
    tg_release(e3);
    /* A float on either side is fine: the power is taken in float (F32:
     * powf is within an ulp or two). */
    tg_tensor *fe = VEC_F32(1, -1);
    tg_tensor *out = tg_pow(base, fe), *expected = VEC_F32(2, 1.0f / 3);
    tg_assert_close(out, expected, F32.rtol, F32.atol);
    tg_release(out);
    tg_release(expected);
    out = tg_pow_scalar(base, -0.5);
    expected = VEC_F32(0.70710678f, 0.57735027f);
    tg_assert_close(out, expected, F32.rtol, F32.atol);
    tg_release(out);
    tg_release(expected);
    tg_tensor *fb = VEC_F64(2, 4);
    expect_exact(tg_pow(fb, e), VEC_F64(2, 0.25));
    tg_release(fb);
    tg_release(fe);
    tg_release(base);
    tg_release(e);
}

TG_TEST(elementwise, clamp_and_gelu_argument_errors)
{
    tg_tensor *x = VEC_F32(1, 2);
    cr_assert_null(tg_clamp(x, NAN, 1));
    tg_assert_error("tg_clamp: cannot clamp to [nan, 1]", "\n  rule: ",
                    "NaN", "\n  hint: ");
    cr_assert_null(tg_clamp(x, 0, NAN));
    tg_assert_error("tg_clamp: cannot clamp to [0, nan]");
    cr_assert_null(tg_gelu(x, (tg_gelu_approx)7));
    tg_assert_error("tg_gelu: unknown approximation 7", "\n  rule: ");
    tg_release(x);
}

/* A NULL argument gives NULL and no new message, so chains fail once. */
TG_TEST(elementwise, null_arguments_return_null_without_a_message)
{
    tg_tensor *x = VEC_F32(1, 2);
    tg_clear_error();
    for (size_t i = 0; i < COUNT(EXACT_BINARY); i++) {
        cr_assert_null(EXACT_BINARY[i].fn(NULL, x));
        cr_assert_null(EXACT_BINARY[i].fn(x, NULL));
    }
    for (size_t i = 0; i < COUNT(COMPARISONS); i++) {
        cr_assert_null(COMPARISONS[i].fn(NULL, x));
        cr_assert_null(COMPARISONS[i].fn(x, NULL));
    }
    for (size_t i = 0; i < COUNT(UNARY); i++)
        cr_assert_null(UNARY[i].fn(NULL));
    cr_assert_null(tg_pow(NULL, x));
    cr_assert_null(tg_pow(x, NULL));
    cr_assert_null(tg_add_scalar(NULL, 1));
    cr_assert_null(tg_sub_scalar(NULL, 1));
    cr_assert_null(tg_rsub_scalar(NULL, 1));
    cr_assert_null(tg_mul_scalar(NULL, 1));
    cr_assert_null(tg_div_scalar(NULL, 1));
    cr_assert_null(tg_rdiv_scalar(NULL, 1));
    cr_assert_null(tg_pow_scalar(NULL, 1));
    cr_assert_null(tg_eq_scalar(NULL, 1));
    cr_assert_null(tg_ne_scalar(NULL, 1));
    cr_assert_null(tg_lt_scalar(NULL, 1));
    cr_assert_null(tg_le_scalar(NULL, 1));
    cr_assert_null(tg_gt_scalar(NULL, 1));
    cr_assert_null(tg_ge_scalar(NULL, 1));
    cr_assert_null(tg_gelu(NULL, (tg_gelu_approx)7));
    cr_assert_null(tg_silu(NULL));
    cr_assert_null(tg_clamp(NULL, NAN, 1));
    cr_assert_null(tg_where(NULL, x, x));
    cr_assert_null(tg_where(x, NULL, x));
    cr_assert_null(tg_where(x, x, NULL));
    cr_assert_str_empty(tg_last_error());
    tg_release(x);
}
