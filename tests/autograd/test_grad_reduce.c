/*
 * tests/autograd/test_grad_reduce.c - the backward of the reductions
 * (sum, mean, var, std, max, min), softmax, log_softmax and matmul against
 * NumPy references (scripts/reference/gen_grad_reduce.py), the PyTorch 1.13
 * conventions at kinks and edges (ties, std of a constant row, NaN, 0-d
 * and empty inputs), the grad_fn names, and one node per op.
 *
 * Tolerances used below, and why:
 *  - float64, F64_RTOL 1e-12 / F64_ATOL 1e-14: both sides evaluate the same
 *    closed form on the same float64 inputs, with a handful of roundings
 *    (~1e-16 relative each) in different orders (NumPy sums pairwise, the
 *    C code left to right) on values of size ~1; x - mean may cancel, which
 *    leaves an absolute error of ~1e-16, hence the atol.
 *  - float32, F32_RTOL 1e-5 / F32_ATOL 1e-6: the references are the exact
 *    gradients rounded once to float32; the C backward computes in float32,
 *    one rounding (6e-8 relative) per op over a few ops, and cancellation
 *    (x - mean, g - sum(g * y)) turns a rounding of an O(1) value into an
 *    absolute error of ~1e-7: 1e-6 is ten times that.
 *  - tie splitting and the pinned edge values are exact (0): they are
 *    quotients of small integers or special values.
 */
#include "../common.h"

#include <math.h>
#include <stdio.h>

#define F64_RTOL 1e-12
#define F64_ATOL 1e-14
#define F32_RTOL 1e-5
#define F32_ATOL 1e-6

static const char *const dtype_tags[] = {"f64", "f32"};
static const double rtols[] = {F64_RTOL, F32_RTOL};
static const double atols[] = {F64_ATOL, F32_ATOL};

/* A leaf that requires grad: the reference `name`. New reference. */
static tg_tensor *leaf_ref(const char *name)
{
    tg_tensor *x = tg_test_load_ref(name);
    cr_assert_eq(tg_set_requires_grad(x, true), 0, "%s", tg_last_error());
    return x;
}

/* A float64 leaf that requires grad, from values. New reference. */
static tg_tensor *leaf_from(const double *v, const int64_t *shape, int ndim)
{
    tg_tensor *x = tg_from_array(v, shape, ndim, TG_FLOAT64);
    cr_assert_eq(tg_set_requires_grad(x, true), 0, "%s", tg_last_error());
    return x;
}

/* Backpropagates g (NULL: 1) from out, releases out, and checks that the
 * tape is empty afterwards. */
static void backward(tg_tensor *out, const tg_tensor *g)
{
    cr_assert(out, "forward failed: %s", tg_last_error());
    cr_assert(out->grad_fn, "the output was not recorded");
    cr_assert_eq(tg_backward_ex(out, &(tg_backward_options){.grad = g}), 0,
                 "%s", tg_last_error());
    tg_release(out);
    cr_assert_eq(tg_tape_size(), 0);
}

/* x's gradient, handed over: a new reference, x left without one. */
static tg_tensor *take_grad(tg_tensor *x)
{
    cr_assert(x->grad, "no gradient reached the input");
    tg_tensor *g = tg_retain(x->grad);
    tg_clear_grad(x);
    return g;
}

static double at(const tg_tensor *x, int64_t i, int64_t j)
{
    double v;
    cr_assert_eq(tg_get(x, (const int64_t[]){i, j}, 2, &v), 0);
    return v;
}

/* ------------------------------------------------ reductions, NumPy sweep */

/* The dim sets of gen_grad_reduce.py with their tags. */
static const struct {
    int dims[2];
    int ndims;
    const char *tag;
    bool f32; // also covered in float32 (keepdim false)
} dim_sets[] = {
    {{1}, 1, "d1", true},
    {{0, 2}, 2, "d0_2", false},
    {{-1}, 1, "dm1", false},
    {{0}, 0, "all", true},
};

static const char *const ops[] = {"sum",  "mean", "var0", "var1", "var2",
                                  "std0", "std1", "std2", "amax", "amin"};

/* Runs the reduction named as in the reference files ("var1" is tg_var
 * with correction 1); ndims 0 reduces every dim (dims NULL). */
static tg_tensor *run_reduction(const char *op, const tg_tensor *x,
                                const int *dims, int ndims, bool keepdim)
{
    if (ndims == 0)
        dims = NULL;
    if (strcmp(op, "sum") == 0)
        return tg_sum(x, dims, ndims, keepdim);
    if (strcmp(op, "mean") == 0)
        return tg_mean(x, dims, ndims, keepdim);
    if (strcmp(op, "amax") == 0)
        return tg_max(x, dims, ndims, keepdim);
    if (strcmp(op, "amin") == 0)
        return tg_min(x, dims, ndims, keepdim);
    int64_t correction = op[3] - '0';
    if (strncmp(op, "var", 3) == 0)
        return tg_var(x, dims, ndims, correction, keepdim);
    return tg_std(x, dims, ndims, correction, keepdim);
}

TG_TEST(grad_reduce, reductions_match_numpy)
{
    for (int t = 0; t < 2; t++) {
        char name[128];
        snprintf(name, sizeof name, "grad_reduce_x_%s", dtype_tags[t]);
        tg_tensor *x = leaf_ref(name);
        for (size_t s = 0; s < sizeof dim_sets / sizeof *dim_sets; s++) {
            if (t == 1 && !dim_sets[s].f32)
                continue;
            for (int keep = 0; keep <= (t == 0); keep++) {
                char tag[64];
                snprintf(tag, sizeof tag, "%s_k%d_%s", dim_sets[s].tag, keep,
                         dtype_tags[t]);
                snprintf(name, sizeof name, "grad_reduce_g_%s", tag);
                tg_tensor *g = tg_test_load_ref(name);
                for (size_t o = 0; o < sizeof ops / sizeof *ops; o++) {
                    backward(run_reduction(ops[o], x, dim_sets[s].dims,
                                           dim_sets[s].ndims, keep),
                             g);
                    snprintf(name, sizeof name, "grad_reduce_%s_%s", ops[o],
                             tag);
                    tg_test_check_ref(take_grad(x), name, rtols[t], atols[t]);
                }
                tg_release(g);
            }
        }
        tg_release(x);
    }
}

/* A wrong gradient must fail the reference comparison: the first maximum
 * taking the whole gradient (argmax's choice) instead of the tie split. */
TG_TEST(grad_reduce, reference_check_rejects_a_wrong_tie_rule)
{
    tg_tensor *x = leaf_ref("grad_reduce_ties_x");
    tg_tensor *g = tg_test_load_ref("grad_reduce_ties_g");
    tg_tensor *expected = tg_test_load_ref("grad_reduce_ties_amax_dx");
    backward(tg_max(x, TG_DIMS(1), false), g);
    tg_tensor *dx = take_grad(x);
    char report[1024];
    cr_assert(tg_test_close(dx, expected, 0, 0, true, report, sizeof report),
              "%s", report);
    /* row 0 is [1, 3, 3, -2]: put all of g[0] = 1 on element 1 */
    tg_tensor *wrong = tg_clone(dx);
    tg_set(wrong, (const int64_t[]){0, 1}, 2, 1.0);
    tg_set(wrong, (const int64_t[]){0, 2}, 2, 0.0);
    cr_assert_not(tg_test_close(wrong, expected, F64_RTOL, F64_ATOL, true,
                                report, sizeof report));
    tg_release(wrong);
    tg_release(dx);
    tg_release(expected);
    tg_release(g);
    tg_release(x);
}

/* ------------------------------------------------- kinks and conventions */

/* PyTorch's amax / amin backward splits the gradient evenly among ties:
 * in [1, 3, 3, -2] each 3 gets half of the row's gradient, in a constant
 * row of 4 each element gets a quarter. */
TG_TEST(grad_reduce, max_min_split_ties_evenly)
{
    tg_tensor *g = tg_test_load_ref("grad_reduce_ties_g");
    for (int m = 0; m < 2; m++) {
        tg_tensor *x = leaf_ref("grad_reduce_ties_x");
        backward(m ? tg_min(x, TG_DIMS(1), false)
                   : tg_max(x, TG_DIMS(1), false),
                 g);
        tg_test_check_ref(take_grad(x),
                          m ? "grad_reduce_ties_amin_dx"
                            : "grad_reduce_ties_amax_dx",
                          0, 0);
        tg_release(x);
    }
    tg_release(g);
    /* A three-way tie over every dim: 1/3 each (torch: 0.3333 each). */
    tg_tensor *x = leaf_from((const double[]){5, 5, -1, 5}, TG_SHAPE(2, 2));
    backward(tg_max(x, NULL, 0, false), NULL);
    tg_tensor *dx = take_grad(x);
    cr_assert_eq(at(dx, 0, 0), 1.0 / 3);
    cr_assert_eq(at(dx, 0, 1), 1.0 / 3);
    cr_assert_eq(at(dx, 1, 0), 0.0);
    cr_assert_eq(at(dx, 1, 1), 1.0 / 3);
    tg_release(dx);
    tg_release(x);
}

/* A NaN in a row makes the max NaN and, as in PyTorch, the whole row's
 * gradient NaN; other rows are unaffected. */
TG_TEST(grad_reduce, max_of_a_row_with_nan_has_a_nan_gradient)
{
    tg_tensor *x = leaf_from((const double[]){1, NAN, 3, 1, 2, 0},
                             TG_SHAPE(2, 3));
    tg_tensor *g = tg_ones(TG_SHAPE(2), TG_FLOAT64);
    backward(tg_max(x, TG_DIMS(1), false), g);
    tg_tensor *dx = take_grad(x);
    for (int j = 0; j < 3; j++) {
        cr_assert(isnan(at(dx, 0, j)), "element (0, %d)", j);
        cr_assert_eq(at(dx, 1, j), j == 1 ? 1.0 : 0.0);
    }
    tg_release(dx);
    tg_release(g);
    tg_release(x);
}

/* std of a constant row is 0, where g / (2 std) is inf: PyTorch 1.13 masks
 * it to 0, so that row's gradient is 0 (not NaN). */
TG_TEST(grad_reduce, std_of_a_constant_row_has_zero_gradient)
{
    tg_tensor *x = leaf_ref("grad_reduce_std_const_x");
    tg_tensor *g = tg_test_load_ref("grad_reduce_std_const_g");
    backward(tg_std(x, TG_DIMS(1), 1, false), g);
    tg_test_check_ref(take_grad(x), "grad_reduce_std_const_dx", F64_RTOL,
                      F64_ATOL);
    /* The same over every dim of an all-constant tensor (torch: zeros). */
    tg_tensor *c = leaf_from((const double[]){2, 2, 2, 2}, TG_SHAPE(2, 2));
    backward(tg_std(c, NULL, 0, 1, false), NULL);
    tg_tensor *dc = take_grad(c);
    for (int i = 0; i < 2; i++)
        for (int j = 0; j < 2; j++)
            cr_assert_eq(at(dc, i, j), 0.0);
    tg_release(dc);
    tg_release(c);
    tg_release(g);
    tg_release(x);
}

/* N - correction == 0: var is inf (or NaN) and its gradient 2 (x - mean) /
 * 0 is -inf, NaN, +inf for [1, 2, 3], as PyTorch 1.13 over a given dim. */
TG_TEST(grad_reduce, var_with_no_degrees_of_freedom)
{
    tg_tensor *x = leaf_from((const double[]){1, 2, 3}, TG_SHAPE(1, 3));
    backward(tg_var(x, TG_DIMS(1), 3, false), NULL);
    tg_tensor *dx = take_grad(x);
    cr_assert(isinf(at(dx, 0, 0)) && at(dx, 0, 0) < 0);
    cr_assert(isnan(at(dx, 0, 1)));
    cr_assert(isinf(at(dx, 0, 2)) && at(dx, 0, 2) > 0);
    tg_release(dx);
    tg_release(x);
}

/* 0-d inputs: each reduction reduces the one element (values as PyTorch
 * 1.13 gives them for torch.tensor(2.0)). */
TG_TEST(grad_reduce, zero_dim_inputs)
{
    struct {
        const char *what;
        double expected;
    } cases[] = {
        {"sum", 1.0},       {"sum dim 0", 1.0}, {"mean", 1.0},
        {"var0", 0.0},      {"std0", 0.0},      {"amax", 1.0},
        {"amin", 1.0},      {"softmax", 0.0},   {"log_softmax", 0.0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        tg_tensor *x = tg_scalar(2.0, TG_FLOAT64);
        tg_set_requires_grad(x, true);
        const char *w = cases[i].what;
        tg_tensor *out = strcmp(w, "sum") == 0 ? tg_sum(x, NULL, 0, false)
            : strcmp(w, "sum dim 0") == 0      ? tg_sum(x, TG_DIMS(0), false)
            : strcmp(w, "mean") == 0           ? tg_mean(x, NULL, 0, false)
            : strcmp(w, "var0") == 0           ? tg_var(x, NULL, 0, 0, false)
            : strcmp(w, "std0") == 0           ? tg_std(x, NULL, 0, 0, false)
            : strcmp(w, "amax") == 0           ? tg_max(x, NULL, 0, false)
            : strcmp(w, "amin") == 0           ? tg_min(x, TG_DIMS(-1), true)
            : strcmp(w, "softmax") == 0        ? tg_softmax(x, 0)
                                               : tg_log_softmax(x, -1);
        cr_assert(out && out->ndim == 0, "%s", w);
        backward(out, NULL);
        tg_tensor *dx = take_grad(x);
        cr_assert_eq(dx->ndim, 0, "%s", w);
        cr_assert_eq(tg_item(dx), cases[i].expected, "%s: %g", w,
                     tg_item(dx));
        tg_release(dx);
        tg_release(x);
    }
}

/* Reducing a dim of size 0 still gives a gradient of x's (empty) shape. */
TG_TEST(grad_reduce, empty_inputs)
{
    for (int m = 0; m < 2; m++) {
        tg_tensor *x = tg_zeros(TG_SHAPE(0, 3), TG_FLOAT64);
        tg_set_requires_grad(x, true);
        tg_tensor *g = tg_ones(TG_SHAPE(3), TG_FLOAT64);
        backward(m ? tg_mean(x, TG_DIMS(0), false)
                   : tg_sum(x, TG_DIMS(0), false),
                 g);
        tg_tensor *dx = take_grad(x);
        cr_assert(tg_same_shape(dx, x));
        tg_release(dx);
        tg_release(g);
        tg_release(x);
    }
}

/* ------------------------------------------------------------- softmax */

TG_TEST(grad_reduce, softmax_and_log_softmax_match_numpy)
{
    for (int t = 0; t < 2; t++) {
        char name[128];
        snprintf(name, sizeof name, "grad_reduce_softmax_x_%s",
                 dtype_tags[t]);
        tg_tensor *x = leaf_ref(name);
        snprintf(name, sizeof name, "grad_reduce_softmax_g_%s",
                 dtype_tags[t]);
        tg_tensor *g = tg_test_load_ref(name);
        for (int d = 0; d < 3; d++)
            for (int log_form = 0; log_form < 2; log_form++) {
                backward(log_form ? tg_log_softmax(x, d) : tg_softmax(x, d),
                         g);
                snprintf(name, sizeof name, "grad_reduce_%ssoftmax_d%d_%s",
                         log_form ? "log_" : "", d, dtype_tags[t]);
                tg_test_check_ref(take_grad(x), name, rtols[t], atols[t]);
            }
        tg_release(g);
        tg_release(x);
    }
}

/* A -inf logit has probability 0: softmax passes it no gradient (PyTorch:
 * -0), log_softmax passes g unchanged there (PyTorch: 1), and the others
 * follow the formulas with y = (1, e) / (1 + e). */
TG_TEST(grad_reduce, softmax_with_a_minus_inf_logit)
{
    double e = exp(1.0), y1 = 1 / (1 + e), y2 = e / (1 + e);
    for (int log_form = 0; log_form < 2; log_form++) {
        tg_tensor *x = leaf_from((const double[]){-INFINITY, 0, 1},
                                 TG_SHAPE(1, 3));
        tg_tensor *g = tg_from_array((const double[]){1, 2, 3},
                                     TG_SHAPE(1, 3), TG_FLOAT64);
        backward(log_form ? tg_log_softmax(x, 1) : tg_softmax(x, 1), g);
        tg_tensor *dx = take_grad(x);
        /* softmax: dx = y (g - (2 y1 + 3 y2)) = (0, -y1 y2, y1 y2);
         * log_softmax: dx = g - 6 y = (1, 2 - 6 y1, 3 - 6 y2) */
        double want[3] = {0, -y1 * y2, y1 * y2};
        if (log_form) {
            want[0] = 1, want[1] = 2 - 6 * y1, want[2] = 3 - 6 * y2;
        }
        for (int j = 0; j < 3; j++)
            cr_assert(fabs(at(dx, 0, j) - want[j]) <= F64_ATOL,
                      "%s element %d: %.17g, want %.17g",
                      log_form ? "log_softmax" : "softmax", j, at(dx, 0, j),
                      want[j]);
        tg_release(dx);
        tg_release(g);
        tg_release(x);
    }
}

/* -------------------------------------------------------------- matmul */

static const struct {
    const char *name;
    bool f32;
} matmul_cases[] = {
    {"dot", true}, {"mv", false},   {"vm", false}, {"mm", true},
    {"bmm", false}, {"bm", false},  {"mb", false}, {"bcast", true},
    {"bv", false},  {"vb", false},
};

TG_TEST(grad_reduce, matmul_matches_numpy_for_every_shape_class)
{
    for (size_t c = 0; c < sizeof matmul_cases / sizeof *matmul_cases; c++)
        for (int t = 0; t < 2; t++) {
            if (t == 1 && !matmul_cases[c].f32)
                continue;
            char name[128];
#define MATMUL_REF(part)                                                    \
    (snprintf(name, sizeof name, "grad_reduce_matmul_%s_%s_%s",             \
              matmul_cases[c].name, part, dtype_tags[t]),                   \
     name)
            tg_tensor *a = leaf_ref(MATMUL_REF("a"));
            tg_tensor *b = leaf_ref(MATMUL_REF("b"));
            tg_tensor *g = tg_test_load_ref(MATMUL_REF("g"));
            backward(tg_matmul(a, b), g);
            tg_test_check_ref(take_grad(a), MATMUL_REF("da"), rtols[t],
                              atols[t]);
            tg_test_check_ref(take_grad(b), MATMUL_REF("db"), rtols[t],
                              atols[t]);
#undef MATMUL_REF
            tg_release(g);
            tg_release(b);
            tg_release(a);
        }
}

/* A leaf that is the transposed view of a contiguous copy of x^T: x's
 * values, non-contiguous layout. New reference. */
static tg_tensor *transposed_leaf(const tg_tensor *x)
{
    tg_tensor *xt = tg_transpose(x, -1, -2);
    tg_tensor *mem = tg_contiguous(xt); // x^T in memory
    tg_tensor *v = tg_transpose(mem, -1, -2);
    tg_release(mem);
    tg_release(xt);
    cr_assert(v && !tg_is_contiguous(v));
    cr_assert_eq(tg_set_requires_grad(v, true), 0, "%s", tg_last_error());
    return v;
}

/* The same products with transposed (non-contiguous) operands: the
 * gradients do not depend on the layout. */
TG_TEST(grad_reduce, matmul_of_transposed_operands_matches_numpy)
{
    static const char *const names[] = {"mm", "bcast"};
    for (int c = 0; c < 2; c++) {
        char name[128];
#define MATMUL_REF(part)                                                    \
    (snprintf(name, sizeof name, "grad_reduce_matmul_%s_%s_f64", names[c],  \
              part),                                                        \
     name)
        tg_tensor *a0 = tg_test_load_ref(MATMUL_REF("a"));
        tg_tensor *b0 = tg_test_load_ref(MATMUL_REF("b"));
        tg_tensor *g = tg_test_load_ref(MATMUL_REF("g"));
        tg_tensor *a = transposed_leaf(a0), *b = transposed_leaf(b0);
        backward(tg_matmul(a, b), g);
        tg_test_check_ref(take_grad(a), MATMUL_REF("da"), F64_RTOL, F64_ATOL);
        tg_test_check_ref(take_grad(b), MATMUL_REF("db"), F64_RTOL, F64_ATOL);
#undef MATMUL_REF
        tg_release(a), tg_release(b), tg_release(g);
        tg_release(a0), tg_release(b0);
    }
}

/* float32 @ float64 gives float64; each gradient comes back in its
 * operand's dtype. da = g @ b^T uses only float64 values; db = a^T @ g
 * uses a rounded to float32, hence the float32 tolerance for both. */
TG_TEST(grad_reduce, matmul_mixed_dtypes)
{
    tg_tensor *a = leaf_ref("grad_reduce_matmul_mm_a_f32");
    tg_tensor *b = leaf_ref("grad_reduce_matmul_mm_b_f64");
    tg_tensor *g = tg_test_load_ref("grad_reduce_matmul_mm_g_f64");
    tg_tensor *out = tg_matmul(a, b);
    cr_assert_eq(out->dtype, TG_FLOAT64);
    backward(out, g);
    cr_assert_eq(a->grad->dtype, TG_FLOAT32);
    cr_assert_eq(b->grad->dtype, TG_FLOAT64);
    tg_tensor *da = tg_test_load_ref("grad_reduce_matmul_mm_da_f64");
    tg_tensor *db = tg_test_load_ref("grad_reduce_matmul_mm_db_f64");
    char report[1024];
    cr_assert(tg_test_close(a->grad, da, F32_RTOL, F32_ATOL, false, report,
                            sizeof report),
              "%s", report);
    cr_assert(tg_test_close(b->grad, db, F32_RTOL, F32_ATOL, false, report,
                            sizeof report),
              "%s", report);
    tg_release(db), tg_release(da);
    tg_release(g), tg_release(b), tg_release(a);
}

/* Only the operand that needs a gradient gets one (and only the other
 * operand is saved for it). */
TG_TEST(grad_reduce, matmul_with_one_operand_needing_grad)
{
    tg_tensor *a = tg_test_load_ref("grad_reduce_matmul_bv_a_f64");
    tg_tensor *b = leaf_ref("grad_reduce_matmul_bv_b_f64");
    tg_tensor *g = tg_test_load_ref("grad_reduce_matmul_bv_g_f64");
    backward(tg_matmul(a, b), g);
    cr_assert_null(a->grad);
    tg_test_check_ref(take_grad(b), "grad_reduce_matmul_bv_db_f64", F64_RTOL,
                      F64_ATOL);
    tg_release(g), tg_release(b), tg_release(a);
}

/* ------------------------------------------------- names and recording */

static void assert_name(tg_tensor *out, const char *want)
{
    cr_assert(out, "%s: %s", want, tg_last_error());
    const char *got = tg_grad_fn_name(out);
    cr_assert(got && strcmp(got, want) == 0, "want %s, got %s", want,
              got ? got : "(none)");
    cr_assert_eq(tg_tape_size(), 1, "%s: one node per call", want);
    tg_release(out);
    cr_assert_eq(tg_tape_size(), 0);
}

/* PyTorch 1.13's names: x.sum() SumBackward0, x.sum(0) SumBackward1, and
 * so on (checked with torch: the names below are what it prints). */
TG_TEST(grad_reduce, grad_fn_names_are_pytorchs)
{
    tg_tensor *x = tg_ones(TG_SHAPE(2, 3), TG_FLOAT64);
    tg_set_requires_grad(x, true);
    assert_name(tg_sum(x, NULL, 0, false), "SumBackward0");
    assert_name(tg_sum(x, TG_DIMS(0), false), "SumBackward1");
    assert_name(tg_sum(x, TG_DIMS(0, 1), true), "SumBackward1");
    assert_name(tg_mean(x, NULL, 0, false), "MeanBackward0");
    assert_name(tg_mean(x, TG_DIMS(-1), false), "MeanBackward1");
    assert_name(tg_var(x, NULL, 0, 1, false), "VarBackward0");
    assert_name(tg_var(x, TG_DIMS(1), 0, true), "VarBackward0");
    assert_name(tg_std(x, TG_DIMS(1), 1, false), "StdBackward0");
    assert_name(tg_max(x, TG_DIMS(1), false), "AmaxBackward0");
    assert_name(tg_min(x, NULL, 0, false), "AminBackward0");
    assert_name(tg_softmax(x, 1), "SoftmaxBackward0");
    assert_name(tg_log_softmax(x, 0), "LogSoftmaxBackward0");
    tg_release(x);
}

/* matmul: named after the product PyTorch runs (torch shows DotBackward0,
 * MvBackward0 and MmBackward0 for the first three; for (k,) @ (k, n) and
 * batched operands it wraps that product in view nodes, see matmul.c). */
TG_TEST(grad_reduce, matmul_grad_fn_names)
{
    static const struct {
        int na, nb;
        int64_t sa[3], sb[3];
        const char *name;
    } cases[] = {
        {1, 1, {3}, {3}, "DotBackward0"},
        {2, 1, {4, 3}, {3}, "MvBackward0"},
        {2, 2, {4, 3}, {3, 5}, "MmBackward0"},
        {1, 2, {3}, {3, 5}, "MmBackward0"},
        {3, 3, {2, 4, 3}, {2, 3, 5}, "BmmBackward0"},
        {3, 2, {2, 4, 3}, {3, 5}, "BmmBackward0"},
        {1, 3, {3}, {2, 3, 5}, "BmmBackward0"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        tg_tensor *a = tg_ones(cases[i].sa, cases[i].na, TG_FLOAT64);
        tg_tensor *b = tg_ones(cases[i].sb, cases[i].nb, TG_FLOAT64);
        tg_set_requires_grad(a, true);
        assert_name(tg_matmul(a, b), cases[i].name);
        tg_release(a), tg_release(b);
    }
}

/* Nothing is recorded for int64 results (argmax, argmin), under no_grad,
 * or when no input requires grad. */
TG_TEST(grad_reduce, what_is_not_recorded)
{
    tg_tensor *x = tg_ones(TG_SHAPE(2, 3), TG_FLOAT64);
    tg_tensor *y = tg_ones(TG_SHAPE(3, 2), TG_FLOAT64);
    tg_tensor *i = tg_argmax(x, 1, false);
    cr_assert(i && !i->grad_fn && !i->requires_grad);
    tg_release(i);
    tg_tensor *s = tg_softmax(x, 1), *m = tg_matmul(x, y);
    cr_assert(!s->grad_fn && !m->grad_fn);
    tg_release(s), tg_release(m);
    tg_set_requires_grad(x, true);
    i = tg_argmin(x, 0, true);
    cr_assert(i && !i->grad_fn && !i->requires_grad);
    tg_release(i);
    tg_no_grad_begin();
    s = tg_std(x, NULL, 0, 1, false);
    m = tg_matmul(x, y);
    tg_no_grad_end();
    cr_assert(!s->grad_fn && !s->requires_grad && !m->grad_fn);
    cr_assert_eq(tg_tape_size(), 0);
    tg_release(s), tg_release(m), tg_release(y), tg_release(x);
}

/* ---------------------------------------------------- ops used together */

/* max(var(log_softmax(x @ w, -1), dim 0)): matmul, log_softmax, var and
 * max nodes chained, checked by gradcheck (float64, default tolerances;
 * random inputs, so the max has no tie). */
static tg_tensor *logits_loss(const tg_tensor *const *in, int n, void *user)
{
    (void)n, (void)user;
    tg_tensor *z = tg_matmul(in[0], in[1]);
    tg_tensor *lp = tg_log_softmax(z, -1);
    tg_tensor *v = tg_var(lp, TG_DIMS(0), 1, false);
    tg_tensor *loss = tg_max(v, NULL, 0, false);
    tg_release(v), tg_release(lp), tg_release(z);
    return loss;
}

TG_TEST(grad_reduce, chained_ops_pass_gradcheck)
{
    tg_generator *gen = tg_generator_new(42);
    tg_tensor *x = tg_randn_gen(gen, TG_SHAPE(5, 4), TG_FLOAT64);
    tg_tensor *w = tg_randn_gen(gen, TG_SHAPE(4, 3), TG_FLOAT64);
    tg_set_requires_grad(x, true);
    tg_set_requires_grad(w, true);
    tg_gradcheck_options o = tg_gradcheck_defaults();
    o.quiet = true;
    tg_gradcheck_result r;
    tg_tensor *in[] = {x, w};
    cr_assert_eq(tg_gradcheck(logits_loss, NULL, in, 2, &o, &r), 1, "%s",
                 r.message);
    cr_assert_eq(tg_tape_size(), 0);
    tg_release(w), tg_release(x);
    tg_generator_free(gen);
}

/* Two backwards through a kept tape add up: x->grad is twice the one from
 * a single backward. */
TG_TEST(grad_reduce, kept_tape_accumulates)
{
    tg_tensor *a = leaf_ref("grad_reduce_matmul_bcast_a_f64");
    tg_tensor *b = leaf_ref("grad_reduce_matmul_bcast_b_f64");
    tg_tensor *g = tg_test_load_ref("grad_reduce_matmul_bcast_g_f64");
    tg_tensor *out = tg_matmul(a, b);
    tg_backward_options keep = {.grad = g, .keep_tape = true};
    cr_assert_eq(tg_backward_ex(out, &keep), 0, "%s", tg_last_error());
    backward(out, g);
    tg_tensor *once = tg_test_load_ref("grad_reduce_matmul_bcast_da_f64");
    tg_tensor *twice = tg_mul_scalar(once, 2.0);
    tg_assert_close(a->grad, twice, F64_RTOL, F64_ATOL);
    tg_release(twice), tg_release(once);
    tg_release(g), tg_release(b), tg_release(a);
}
