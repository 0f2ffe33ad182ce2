/*
 * tests/autograd/test_loss.c - the losses (autograd/ops/loss.c) against the
 * NumPy references of scripts/reference/gen_loss.py: forward values and
 * gradients for float32 and float64, the three reductions, contiguous and
 * non-contiguous inputs, and logits of +-1000 (cross-entropy) and +-100
 * (bce); the graph each loss records and its grad_fn names; empty batches;
 * float32 sums accumulated in double; every argument error; and the two
 * checkers (the reference comparison and gradcheck) catching a wrong
 * gradient.
 *
 * What it is not: the full-Jacobian gradcheck of every loss, which is in
 * grad_cases_loss.c (run by test_grad_ops.c).
 *
 * Tolerances used below, and why (measured worst cases in brackets):
 *  - float64, F64_RTOL 1e-14 / F64_ATOL 1e-15: both sides evaluate the same
 *    math in float64 by different formulas (bce through log1p vs NumPy's
 *    logaddexp, cross-entropy through log_softmax's backward vs softmax -
 *    onehot), in different summation orders: a few roundings of 1.1e-16
 *    relative each [2e-15]. The atol is for gradients that are a
 *    difference of nearly equal terms, computed that way on both sides:
 *    sigmoid(17) - 1 = -4e-8 carries the 1e-16 absolute error of
 *    sigmoid(17) ~ 1 [4e-16 absolute].
 *  - float32, F32_RTOL 2.5e-7 / atol 0: mse, bce and nll compute in double
 *    and round once, and the references are the float64 results rounded
 *    once, so the two are equal or one ulp apart (2^-23 = 1.2e-7 relative
 *    at most) [one ulp]; 2.5e-7 allows a second ulp for a libm whose exp
 *    or log1p rounds differently. An exact 0 must come out exactly 0. The
 *    upstream gradient G = 1.75 is exact in float32, so it adds no error.
 *  - float32 cross-entropy, CE32_RTOL 1e-6 / CE32_ATOL 1e-8: log_softmax
 *    rounds its output y to float32 (6e-8 relative) and its backward
 *    g - exp(y) * sum(g) runs in float32 ops, so the softmax is off by
 *    about |y| * 6e-8 relative (|y| < 6 here) plus a rounding per op
 *    [2.4e-7]. The atol covers entries that are 0 up to such an error.
 */
#include "../common.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#define F64_RTOL 1e-14
#define F64_ATOL 1e-15
#define F32_RTOL 2.5e-7
#define F32_ATOL 0.0
#define CE32_RTOL 1e-6
#define CE32_ATOL 1e-8
#define G 1.75 // the upstream gradient of a reduced loss (gen_loss.py's G)

typedef struct tolerance {
    double rtol, atol;
} tolerance;

static tolerance tol_for(const char *dt, bool cross_entropy)
{
    if (strcmp(dt, "f64") == 0)
        return (tolerance){F64_RTOL, F64_ATOL};
    return cross_entropy ? (tolerance){CE32_RTOL, CE32_ATOL}
                         : (tolerance){F32_RTOL, F32_ATOL};
}

static const char *const dtypes[] = {"f64", "f32"};
static const char *const red_names[] = {"mean", "sum", "none"};
static const tg_reduction reductions[] = {
    TG_REDUCTION_MEAN, TG_REDUCTION_SUM, TG_REDUCTION_NONE};

/* ---------------------------------------------------------------- helpers */

/* Loads the reference array named by the format. New reference. */
static tg_tensor *ref(const char *fmt, ...)
{
    char name[256];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(name, sizeof name, fmt, ap);
    va_end(ap);
    cr_assert(n > 0 && (size_t)n < sizeof name, "reference name too long");
    return tg_test_load_ref(name);
}

/* Compares actual (borrowed) with the reference named by the format. */
static void check(const tg_tensor *actual, tolerance tol, const char *what,
                  const char *fmt, ...)
{
    char name[256], report[1024];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(name, sizeof name, fmt, ap);
    va_end(ap);
    cr_assert(n > 0 && (size_t)n < sizeof name, "reference name too long");
    cr_assert_not_null(actual, "%s: %s: no result: %s", what, name,
                       tg_last_error());
    tg_tensor *expected = tg_test_load_ref(name);
    bool ok = tg_test_close(actual, expected, tol.rtol, tol.atol, true,
                            report, sizeof report);
    tg_release(expected);
    cr_assert(ok, "%s: %s: %s", what, name, report);
}

/* x (released) as a non-contiguous copy: transposed in memory, or
 * strided. */
static tg_tensor *non_contiguous(tg_tensor *x, bool strided)
{
    tg_tensor *t = tg_test_non_contiguous(x, strided);
    tg_release(x);
    return t;
}

/* x as loaded, or non-contiguous; a leaf requiring grad when grad. */
static tg_tensor *leaf(tg_tensor *x, int layout, bool grad)
{
    tg_tensor *t = layout == 0 ? x : non_contiguous(x, layout == 2);
    if (grad)
        cr_assert_eq(tg_set_requires_grad(t, true), 0, "%s",
                     tg_last_error());
    return t;
}

/* Backpropagates from out with upstream gradient g (released), then
 * releases out; the tape is empty afterwards. */
static void backward(tg_tensor *out, tg_tensor *g)
{
    cr_assert_eq(tg_backward_ex(out, &(tg_backward_options){.grad = g}), 0,
                 "%s", tg_last_error());
    tg_release(g);
    tg_release(out);
    cr_assert_eq(tg_tape_size(), 0);
}

/* The upstream gradient for reduction r: the reference g (`g_name`) for
 * none, the 0-d G otherwise. */
static tg_tensor *upstream(tg_reduction r, const char *g_name, tg_dtype dt)
{
    return r == TG_REDUCTION_NONE ? tg_test_load_ref(g_name)
                                  : tg_scalar(G, dt);
}

static bool all_finite(const tg_tensor *t)
{
    double *v = malloc(sizeof(double) * (size_t)(t->numel + 1));
    cr_assert(v);
    cr_assert_eq(tg_to_f64_array(t, v), 0);
    bool ok = true;
    for (int64_t i = 0; i < t->numel; i++)
        ok = ok && isfinite(v[i]);
    free(v);
    return ok;
}

static const char *const layout_names[] = {"contiguous", "transposed",
                                           "strided"};

/* ------------------------------------------------ against the references */

typedef tg_tensor *(*pair_loss)(const tg_tensor *, const tg_tensor *,
                                tg_reduction);

/* mse or bce (`set`), every dtype, reduction and layout: out, dx, dt. */
static void check_pair_loss(const char *set, pair_loss loss,
                            const char *grad_fn)
{
    for (int d = 0; d < 2; d++)
        for (int k = 0; k < 3; k++)
            for (int layout = 0; layout < 3; layout++) {
                const char *dt = dtypes[d], *red = red_names[k];
                char what[128];
                snprintf(what, sizeof what, "%s %s %s (%s)", set, red, dt,
                         layout_names[layout]);
                tolerance tol = tol_for(dt, false);
                /* x and t in different layouts */
                tg_tensor *x = leaf(ref("loss_%s_x_%s", set, dt), layout,
                                    true);
                tg_tensor *t = leaf(ref("loss_%s_t_%s", set, dt),
                                    (layout + 1) % 3, true);
                tg_tensor *out = loss(x, t, reductions[k]);
                check(out, tol, what, "loss_%s_%s_out_%s", set, red, dt);
                cr_assert_str_eq(tg_grad_fn_name(out), grad_fn, "%s", what);
                char g_name[64];
                snprintf(g_name, sizeof g_name, "loss_%s_g_%s", set, dt);
                backward(out, upstream(reductions[k], g_name, x->dtype));
                check(x->grad, tol, what, "loss_%s_%s_dx_%s", set, red, dt);
                check(t->grad, tol, what, "loss_%s_%s_dt_%s", set, red, dt);
                tg_release(t);
                tg_release(x);
            }
}

TG_TEST(loss, mse_matches_numpy)
{
    check_pair_loss("mse", tg_mse_loss, "MseLossBackward0");
}

TG_TEST(loss, bce_with_logits_matches_numpy)
{
    check_pair_loss("bce", tg_binary_cross_entropy_with_logits,
                    "BinaryCrossEntropyWithLogitsBackward0");
}

/* Logits of +-100, +-30, +-17, 0 and 1e-3: log(1 + e^100) computed
 * naively is inf in float32 and sigmoid(-100) - 1 must be -1. */
TG_TEST(loss, bce_with_logits_is_stable_for_large_logits)
{
    for (int d = 0; d < 2; d++) {
        const char *dt = dtypes[d];
        tolerance tol = tol_for(dt, false);
        tg_tensor *x = leaf(ref("loss_bcebig_x_%s", dt), 0, true);
        tg_tensor *t = ref("loss_bcebig_t_%s", dt);
        tg_tensor *none =
            tg_binary_cross_entropy_with_logits(x, t, TG_REDUCTION_NONE);
        cr_assert(none && all_finite(none), "bce %s: %s", dt,
                  tg_last_error());
        check(none, tol, "bce large", "loss_bcebig_none_out_%s", dt);
        tg_release(none);
        tg_tensor *sum =
            tg_binary_cross_entropy_with_logits(x, t, TG_REDUCTION_SUM);
        check(sum, tol, "bce large", "loss_bcebig_sum_out_%s", dt);
        backward(sum, tg_scalar(G, x->dtype));
        cr_assert(all_finite(x->grad));
        check(x->grad, tol, "bce large", "loss_bcebig_sum_dx_%s", dt);
        tg_release(t);
        tg_release(x);
    }
}

typedef tg_tensor *(*class_loss)(const tg_tensor *, const tg_tensor *,
                                 tg_reduction);

/* nll or cross-entropy on (5, 4), every dtype, reduction and layout; the
 * labels strided when the input is. */
static void check_class_loss(const char *set, const char *xname,
                             class_loss loss, bool cross_entropy)
{
    for (int d = 0; d < 2; d++)
        for (int k = 0; k < 3; k++)
            for (int layout = 0; layout < 3; layout++) {
                const char *dt = dtypes[d], *red = red_names[k];
                char what[128];
                snprintf(what, sizeof what, "%s %s %s (%s)", set, red, dt,
                         layout_names[layout]);
                tolerance tol = tol_for(dt, cross_entropy);
                tg_tensor *x = leaf(ref("loss_%s_%s_%s", set, xname, dt),
                                    layout, true);
                tg_tensor *y = ref("loss_%s_y", set);
                if (layout == 2)
                    y = non_contiguous(y, true);
                tg_tensor *out = loss(x, y, reductions[k]);
                check(out, tol, what, "loss_%s_%s_out_%s", set, red, dt);
                cr_assert_str_eq(tg_grad_fn_name(out), "NllLossBackward0",
                                 "%s", what);
                cr_assert_eq(tg_tape_size(), cross_entropy ? 2 : 1,
                             "%s: nodes on the tape", what);
                char g_name[64];
                snprintf(g_name, sizeof g_name, "loss_%s_g_%s", set, dt);
                backward(out, upstream(reductions[k], g_name, x->dtype));
                check(x->grad, tol, what, "loss_%s_%s_dx_%s", set, red, dt);
                tg_release(y);
                tg_release(x);
            }
}

TG_TEST(loss, nll_matches_numpy)
{
    check_class_loss("nll", "logp", tg_nll_loss, false);
}

TG_TEST(loss, cross_entropy_matches_numpy)
{
    check_class_loss("ce", "z", tg_cross_entropy, true);
}

/* One sample: logp (4,) with a 0-d label gives a 0-d loss for every
 * reduction (mean over N = 1). */
TG_TEST(loss, nll_of_one_sample)
{
    for (int d = 0; d < 2; d++) {
        const char *dt = dtypes[d];
        tolerance tol = tol_for(dt, false);
        tg_tensor *logp = leaf(ref("loss_nll1_logp_%s", dt), 2, true);
        tg_tensor *y = ref("loss_nll1_y");
        for (int k = 0; k < 3; k++) {
            tg_tensor *out = tg_nll_loss(logp, y, reductions[k]);
            check(out, tol, red_names[k], "loss_nll1_out_%s", dt);
            cr_assert_eq(out->ndim, 0);
            tg_release(out);
        }
        tg_tensor *out = tg_nll_loss(logp, y, TG_REDUCTION_MEAN);
        backward(out, tg_scalar(G, logp->dtype));
        check(logp->grad, tol, "nll one sample", "loss_nll1_dx_%s", dt);
        tg_release(y);
        tg_release(logp);
    }
}

TG_TEST(loss, cross_entropy_of_one_sample)
{
    for (int d = 0; d < 2; d++) {
        const char *dt = dtypes[d];
        tolerance tol = tol_for(dt, true);
        tg_tensor *z = leaf(ref("loss_ce1_z_%s", dt), 2, true);
        tg_tensor *y = ref("loss_ce1_y");
        tg_tensor *out = tg_cross_entropy(z, y, TG_REDUCTION_NONE);
        check(out, tol, "ce one sample", "loss_ce1_out_%s", dt);
        cr_assert_eq(out->ndim, 0);
        cr_assert_eq(tg_backward(out), 0, "%s", tg_last_error());
        tg_release(out);
        check(z->grad, tol, "ce one sample", "loss_ce1_dx_%s", dt);
        tg_release(y);
        tg_release(z);
    }
}

/* Logits of +-1000: exp(1000) is inf even in float64, so only the
 * max-shifted log-softmax gives a finite loss (2000 for row 0) and
 * gradient. */
TG_TEST(loss, cross_entropy_is_stable_for_large_logits)
{
    for (int d = 0; d < 2; d++) {
        const char *dt = dtypes[d];
        tolerance tol = tol_for(dt, true);
        tg_tensor *z = leaf(ref("loss_cebig_z_%s", dt), 1, true);
        tg_tensor *y = ref("loss_cebig_y");
        tg_tensor *out = tg_cross_entropy(z, y, TG_REDUCTION_MEAN);
        cr_assert(out && all_finite(out), "%s: %s", dt, tg_last_error());
        check(out, tol, "ce large", "loss_cebig_out_%s", dt);
        backward(out, tg_scalar(G, z->dtype));
        cr_assert(all_finite(z->grad));
        check(z->grad, tol, "ce large", "loss_cebig_dx_%s", dt);
        tg_release(y);
        tg_release(z);
    }
}

/* ---------------------------------------------------- the checkers fail */

/* The comparison used above rejects a gradient missing a factor 2 (mse)
 * and one missing the -onehot term (cross-entropy). */
TG_TEST(loss, reference_comparison_catches_wrong_gradients)
{
    char report[1024];
    tolerance tol = tol_for("f64", false);
    tg_tensor *x = leaf(ref("loss_mse_x_f64"), 0, true);
    tg_tensor *t = ref("loss_mse_t_f64");
    backward(tg_mse_loss(x, t, TG_REDUCTION_MEAN), tg_scalar(G, TG_FLOAT64));
    tg_tensor *wrong = ref("loss_wrong_mse_dx_f64");
    tg_tensor *right = ref("loss_mse_mean_dx_f64");
    cr_assert(tg_test_close(x->grad, right, tol.rtol, tol.atol, true, report,
                            sizeof report), "%s", report);
    cr_assert_not(tg_test_close(x->grad, wrong, tol.rtol, tol.atol, true,
                                report, sizeof report));
    tg_release(right);
    tg_release(wrong);
    tg_release(t);
    tg_release(x);

    tg_tensor *z = leaf(ref("loss_ce_z_f64"), 0, true);
    tg_tensor *y = ref("loss_ce_y");
    backward(tg_cross_entropy(z, y, TG_REDUCTION_MEAN),
             tg_scalar(G, TG_FLOAT64));
    wrong = ref("loss_wrong_ce_dx_f64");
    right = ref("loss_ce_mean_dx_f64");
    cr_assert(tg_test_close(z->grad, right, tol.rtol, tol.atol, true,
                            report, sizeof report), "%s", report);
    cr_assert_not(tg_test_close(z->grad, wrong, tol.rtol, tol.atol, true,
                                report, sizeof report));
    tg_release(right);
    tg_release(wrong);
    tg_release(y);
    tg_release(z);
}

/* Cross-entropy as a custom function whose backward gives
 * (softmax - onehot) * g / N, or, wrong on purpose, softmax * g / N: the
 * gradient a backward that forgot the label's -1 would give. */
typedef struct ce_data {
    int64_t rows;
    bool with_onehot;
} ce_data;

typedef struct ce_args {
    const tg_tensor *labels;
    bool with_onehot;
} ce_args;

static tg_tensor *ce_forward(tg_ctx *ctx, const tg_tensor *const *in, int n,
                             const void *args)
{
    (void)n;
    const ce_args *a = args;
    ce_data *d = tg_ctx_data(ctx);
    d->rows = in[0]->shape[0];
    d->with_onehot = a->with_onehot;
    tg_tensor *p = tg_softmax(in[0], 1);
    tg_ctx_save(ctx, p);
    tg_ctx_save(ctx, a->labels);
    tg_release(p);
    return tg_cross_entropy(in[0], a->labels, TG_REDUCTION_MEAN);
}

static int ce_backward(tg_ctx *ctx, const tg_tensor *g, tg_tensor **gi)
{
    const ce_data *d = tg_ctx_data(ctx);
    const tg_tensor *p = tg_ctx_saved(ctx, 0);
    tg_tensor *diff;
    if (d->with_onehot) { // onehot[i, c] = (labels[i] == c)
        tg_tensor *col = tg_unsqueeze(tg_ctx_saved(ctx, 1), 1); // (N, 1)
        tg_tensor *classes = tg_arange(0, (double)p->shape[1], 1, TG_INT64);
        tg_tensor *eq = tg_eq(col, classes); // (N, C) int64
        tg_tensor *onehot = tg_to_dtype(eq, p->dtype);
        diff = tg_sub(p, onehot);
        tg_release(onehot);
        tg_release(eq);
        tg_release(classes);
        tg_release(col);
    } else {
        diff = tg_retain((tg_tensor *)p);
    }
    tg_tensor *scaled = tg_mul(diff, g);
    gi[0] = tg_div_scalar(scaled, (double)d->rows);
    tg_release(scaled);
    tg_release(diff);
    return gi[0] ? 0 : -1;
}

static const tg_function custom_ce = {"CustomCrossEntropyBackward",
                                      ce_forward, ce_backward,
                                      sizeof(ce_data)};

static tg_tensor *f_custom_ce(const tg_tensor *const *x, int n, void *user)
{
    (void)n;
    return tg_function_apply(&custom_ce, (const tg_tensor *const *)x, 1,
                             user);
}

TG_TEST(loss, gradcheck_catches_a_backward_missing_the_onehot)
{
    tg_tensor *z = leaf(ref("loss_ce_z_f64"), 0, true);
    tg_tensor *y = ref("loss_ce_y");
    tg_gradcheck_options o = tg_gradcheck_defaults();
    o.quiet = true;
    tg_gradcheck_result r;
    ce_args right = {y, true}, wrong = {y, false};
    cr_assert_eq(tg_gradcheck(f_custom_ce, &right, &z, 1, &o, &r), 1, "%s",
                 r.message);
    cr_assert_eq(tg_gradcheck(f_custom_ce, &wrong, &z, 1, &o, &r), 0,
                 "a backward without -onehot passed gradcheck");
    cr_assert_not(r.passed);
    cr_assert_eq(r.input, 0);
    /* The first mismatch is at a label position: off by 1 / N = 0.2. */
    int64_t row = r.input_index / 4, col = r.input_index % 4;
    const int64_t *labels = tg_data_i64(y);
    cr_assert_eq(labels[row], col, "mismatch at (%lld, %lld)",
                 (long long)row, (long long)col);
    cr_assert_float_eq(r.analytical - r.numerical, 0.2, 1e-6);
    tg_release(y);
    tg_release(z);
}

/* -------------------------------------------------------- graph, names */

TG_TEST(loss, grad_fn_names_and_nodes)
{
    tg_tensor *x = tg_randn(TG_SHAPE(3, 4), TG_FLOAT64);
    tg_tensor *t = tg_rand(TG_SHAPE(3, 4), TG_FLOAT64);
    tg_tensor *y = tg_from_array((int64_t[]){1, 0, 3}, TG_SHAPE(3), TG_INT64);
    tg_set_requires_grad(x, true);
    for (int k = 0; k < 3; k++) {
        tg_tensor *out[4] = {
            tg_mse_loss(x, t, reductions[k]),
            tg_binary_cross_entropy_with_logits(x, t, reductions[k]),
            tg_nll_loss(x, y, reductions[k]),
            tg_cross_entropy(x, y, reductions[k])};
        const char *names[4] = {"MseLossBackward0",
                                "BinaryCrossEntropyWithLogitsBackward0",
                                "NllLossBackward0", "NllLossBackward0"};
        int nodes[4] = {1, 1, 1, 2}; // cross_entropy adds log_softmax's
        for (int i = 0; i < 4; i++) {
            cr_assert_str_eq(tg_grad_fn_name(out[i]), names[i], "%s",
                             red_names[k]);
            cr_assert(out[i]->requires_grad);
            cr_assert_eq(out[i]->ndim, k == 2 ? (i < 2 ? 2 : 1) : 0);
            cr_assert_eq(out[i]->dtype, TG_FLOAT64);
        }
        int total = nodes[0] + nodes[1] + nodes[2] + nodes[3];
        cr_assert_eq(tg_tape_size(), total, "%s", red_names[k]);
        for (int i = 0; i < 4; i++)
            tg_release(out[i]);
        cr_assert_eq(tg_tape_size(), 0);
    }
    tg_release(y);
    tg_release(t);
    tg_release(x);
}

/* Nothing is recorded when no input requires grad, or under no_grad. */
TG_TEST(loss, nothing_recorded_without_grad)
{
    tg_tensor *x = tg_randn(TG_SHAPE(2, 3), TG_FLOAT32);
    tg_tensor *t = tg_rand(TG_SHAPE(2, 3), TG_FLOAT32);
    tg_tensor *y = tg_from_array((int64_t[]){2, 0}, TG_SHAPE(2), TG_INT64);
    for (int pass = 0; pass < 2; pass++) {
        if (pass == 1) {
            tg_set_requires_grad(x, true);
            tg_set_requires_grad(t, true);
            tg_no_grad_begin();
        }
        tg_tensor *out[4] = {
            tg_mse_loss(x, t, TG_REDUCTION_MEAN),
            tg_binary_cross_entropy_with_logits(x, t, TG_REDUCTION_NONE),
            tg_nll_loss(x, y, TG_REDUCTION_SUM),
            tg_cross_entropy(x, y, TG_REDUCTION_MEAN)};
        for (int i = 0; i < 4; i++) {
            cr_assert_not_null(out[i], "%s", tg_last_error());
            cr_assert_not(out[i]->requires_grad);
            cr_assert_null(tg_grad_fn_name(out[i]));
            tg_release(out[i]);
        }
        cr_assert_eq(tg_tape_size(), 0);
        if (pass == 1)
            tg_no_grad_end();
    }
    tg_release(y);
    tg_release(t);
    tg_release(x);
}

/* A target that needs no grad gets none; the input still does. */
TG_TEST(loss, target_without_grad)
{
    tg_tensor *x = tg_from_array((double[]){1.0, -2.0}, TG_SHAPE(2),
                                 TG_FLOAT64);
    tg_tensor *t = tg_from_array((double[]){0.5, 0.5}, TG_SHAPE(2),
                                 TG_FLOAT64);
    tg_set_requires_grad(x, true);
    tg_tensor *l = tg_mse_loss(x, t, TG_REDUCTION_SUM);
    cr_assert_eq(tg_backward(l), 0, "%s", tg_last_error());
    tg_release(l);
    cr_assert_null(t->grad);
    /* d/dx sum (x - t)^2 = 2 (x - t) = (1, -5) */
    tg_tensor *e = tg_from_array((double[]){1.0, -5.0}, TG_SHAPE(2),
                                 TG_FLOAT64);
    tg_assert_close(x->grad, e, 0, 0);
    tg_release(e);
    tg_release(t);
    tg_release(x);
}

/* Two backwards add up (+=), and a target modified in place after the
 * forward is caught (the loss saved it, not a copy). */
TG_TEST(loss, gradients_accumulate_and_saved_inputs_are_watched)
{
    tg_tensor *x = tg_from_array((double[]){0.0, 2.0}, TG_SHAPE(2),
                                 TG_FLOAT64);
    tg_tensor *t = tg_from_array((double[]){1.0, 0.0}, TG_SHAPE(2),
                                 TG_FLOAT64);
    tg_set_requires_grad(x, true);
    for (int i = 0; i < 2; i++) {
        tg_tensor *l = tg_binary_cross_entropy_with_logits(
            x, t, TG_REDUCTION_SUM);
        cr_assert_eq(tg_backward(l), 0, "%s", tg_last_error());
        tg_release(l);
    }
    /* 2 * (sigmoid(x) - t) = 2 * (0.5 - 1, sigmoid(2)) */
    double s2 = 1.0 / (1.0 + exp(-2.0));
    tg_tensor *e = tg_from_array((double[]){-1.0, 2.0 * s2}, TG_SHAPE(2),
                                 TG_FLOAT64);
    tg_assert_close(x->grad, e, 1e-15, 0);
    tg_release(e);

    tg_tensor *l = tg_mse_loss(x, t, TG_REDUCTION_MEAN);
    cr_assert_eq(tg_fill_(t, 3.0), 0);
    cr_assert_eq(tg_backward(l), -1);
    tg_assert_error("tg_backward", "MseLossBackward0",
                    "modified in place");
    tg_release(l);
    tg_release(t);
    tg_release(x);
}

/* ----------------------------------------------------------- edge cases */

/* No rows: the mean is 0 / 0 = NaN and the sum 0, as PyTorch; backward
 * gives an empty gradient. */
TG_TEST(loss, empty_batch)
{
    tg_tensor *x = tg_zeros(TG_SHAPE(0, 3), TG_FLOAT32);
    tg_tensor *y = tg_zeros(TG_SHAPE(0), TG_INT64);
    tg_set_requires_grad(x, true);
    class_loss losses[2] = {tg_nll_loss, tg_cross_entropy};
    for (int i = 0; i < 2; i++) {
        tg_tensor *mean = losses[i](x, y, TG_REDUCTION_MEAN);
        tg_tensor *sum = losses[i](x, y, TG_REDUCTION_SUM);
        tg_tensor *none = losses[i](x, y, TG_REDUCTION_NONE);
        cr_assert(mean && sum && none, "%s", tg_last_error());
        cr_assert(isnan(tg_item(mean)));
        cr_assert_eq(tg_item(sum), 0.0);
        cr_assert_eq(none->ndim, 1);
        cr_assert_eq(none->shape[0], 0);
        cr_assert_eq(mean->dtype, TG_FLOAT32);
        cr_assert_eq(tg_backward(sum), 0, "%s", tg_last_error());
        cr_assert_eq(x->grad->shape[0], 0);
        cr_assert_eq(x->grad->shape[1], 3);
        tg_clear_grad(x);
        tg_release(none);
        tg_release(sum);
        tg_release(mean);
    }
    tg_tensor *e = tg_zeros(TG_SHAPE(0), TG_FLOAT64);
    tg_tensor *m = tg_mse_loss(e, e, TG_REDUCTION_MEAN);
    tg_tensor *s = tg_binary_cross_entropy_with_logits(e, e,
                                                       TG_REDUCTION_SUM);
    cr_assert(isnan(tg_item(m)));
    cr_assert_eq(tg_item(s), 0.0);
    tg_release(s);
    tg_release(m);
    tg_release(e);
    tg_release(y);
    tg_release(x);
}

/* float32 sums accumulate in double: 4096^2 = 2^24, and 2^24 + 1 rounds
 * back to 2^24 in float32, so adding four squares of 1 one at a time in
 * float32 gives 2^24; in double it gives 2^24 + 4, which float32 holds. */
TG_TEST(loss, float32_sums_accumulate_in_double)
{
    tg_tensor *x = tg_from_array((float[]){4096, 1, 1, 1, 1}, TG_SHAPE(5),
                                 TG_FLOAT32);
    tg_tensor *zero = tg_zeros(TG_SHAPE(5), TG_FLOAT32);
    tg_tensor *s = tg_mse_loss(x, zero, TG_REDUCTION_SUM);
    cr_assert_eq(s->dtype, TG_FLOAT32);
    cr_assert_eq(tg_item(s), 16777220.0);
    tg_tensor *logp = tg_from_array((float[]){-16777216, -1, -1, -1, -1},
                                    TG_SHAPE(5, 1), TG_FLOAT32);
    tg_tensor *y = tg_zeros(TG_SHAPE(5), TG_INT64);
    tg_tensor *n = tg_nll_loss(logp, y, TG_REDUCTION_SUM);
    cr_assert_eq(tg_item(n), 16777220.0);
    tg_release(n);
    tg_release(y);
    tg_release(logp);
    tg_release(s);
    tg_release(zero);
    tg_release(x);
}

/* ----------------------------------------------------------------- errors */

TG_TEST(loss, null_arguments_fail_quietly)
{
    tg_tensor *x = tg_zeros(TG_SHAPE(2, 3), TG_FLOAT32);
    tg_tensor *y = tg_zeros(TG_SHAPE(2), TG_INT64);
    tg_clear_error();
    cr_assert_null(tg_mse_loss(NULL, x, TG_REDUCTION_MEAN));
    cr_assert_null(tg_mse_loss(x, NULL, TG_REDUCTION_MEAN));
    cr_assert_null(tg_binary_cross_entropy_with_logits(NULL, x, 0));
    cr_assert_null(tg_binary_cross_entropy_with_logits(x, NULL, 0));
    cr_assert_null(tg_nll_loss(NULL, y, TG_REDUCTION_MEAN));
    cr_assert_null(tg_nll_loss(x, NULL, TG_REDUCTION_MEAN));
    cr_assert_null(tg_cross_entropy(NULL, y, TG_REDUCTION_MEAN));
    cr_assert_null(tg_cross_entropy(x, NULL, TG_REDUCTION_MEAN));
    cr_assert_str_eq(tg_last_error(), "");
    tg_release(y);
    tg_release(x);
}

TG_TEST(loss, label_out_of_range)
{
    tg_tensor *x = tg_zeros(TG_SHAPE(3, 4), TG_FLOAT32);
    tg_tensor *big = tg_from_array((int64_t[]){1, 4, 0}, TG_SHAPE(3),
                                   TG_INT64);
    tg_tensor *neg = tg_from_array((int64_t[]){1, 0, -100}, TG_SHAPE(3),
                                   TG_INT64);
    cr_assert_null(tg_nll_loss(x, big, TG_REDUCTION_MEAN));
    tg_assert_error("tg_nll_loss: labels[1] is 4 but logp of shape (3, 4) "
                    "has 4 classes",
                    "rule: a label is a class index in [0, C) = [0, 4)",
                    "hint:");
    cr_assert_null(tg_cross_entropy(x, neg, TG_REDUCTION_SUM));
    tg_assert_error("tg_cross_entropy: labels[2] is -100 but logits",
                    "ignore_index", "hint:");
    tg_tensor *v = tg_zeros(TG_SHAPE(4), TG_FLOAT64);
    tg_tensor *s = tg_scalar(7, TG_INT64);
    cr_assert_null(tg_nll_loss(v, s, TG_REDUCTION_NONE));
    tg_assert_error("the label is 7 but logp of shape (4,) has 4 classes");
    tg_release(s);
    tg_release(v);
    tg_release(neg);
    tg_release(big);
    tg_release(x);
}

/* Labels must be int64; and they never need a gradient: an int64 tensor
 * cannot require one, and float labels that do are refused for their
 * dtype. */
TG_TEST(loss, labels_must_be_int64)
{
    tg_tensor *x = tg_zeros(TG_SHAPE(2, 3), TG_FLOAT64);
    tg_tensor *yf = tg_from_array((float[]){1, 2}, TG_SHAPE(2), TG_FLOAT32);
    cr_assert_null(tg_nll_loss(x, yf, TG_REDUCTION_MEAN));
    tg_assert_error("tg_nll_loss: labels are float32",
                    "rule: labels are int64 class indices",
                    "hint: convert them: tg_to_dtype(labels, TG_INT64)");
    tg_set_requires_grad(yf, true);
    cr_assert_null(tg_cross_entropy(x, yf, TG_REDUCTION_MEAN));
    tg_assert_error("tg_cross_entropy: labels are float32",
                    "they get no gradient");
    tg_tensor *yi = tg_from_array((int64_t[]){1, 2}, TG_SHAPE(2), TG_INT64);
    cr_assert_eq(tg_set_requires_grad(yi, true), -1);
    tg_assert_error("an int64 tensor cannot require grad");
    tg_release(yi);
    tg_release(yf);
    tg_release(x);
}

TG_TEST(loss, label_count_and_shape_must_match)
{
    tg_tensor *x = tg_zeros(TG_SHAPE(3, 4), TG_FLOAT32);
    tg_tensor *two = tg_zeros(TG_SHAPE(2), TG_INT64);
    cr_assert_null(tg_nll_loss(x, two, TG_REDUCTION_MEAN));
    tg_assert_error("tg_nll_loss: logp of shape (3, 4) has 3 rows but labels "
                    "of shape (2,) have 2",
                    "rule: one label per row", "3 != 2", "hint:");
    tg_tensor *col = tg_zeros(TG_SHAPE(3, 1), TG_INT64);
    cr_assert_null(tg_cross_entropy(x, col, TG_REDUCTION_MEAN));
    tg_assert_error("tg_cross_entropy: logits of shape (3, 4) needs labels "
                    "of shape (3,), not (3, 1)",
                    "hint: tg_reshape(labels, TG_SHAPE(-1))");
    tg_tensor *v = tg_zeros(TG_SHAPE(4), TG_FLOAT32);
    tg_tensor *one = tg_zeros(TG_SHAPE(1), TG_INT64);
    cr_assert_null(tg_nll_loss(v, one, TG_REDUCTION_MEAN));
    tg_assert_error("logp of shape (4,) is one sample, but labels have "
                    "shape (1,)",
                    "takes a 0-d label", "tg_unsqueeze(logp, 0)");
    tg_release(one);
    tg_release(v);
    tg_release(col);
    tg_release(two);
    tg_release(x);
}

TG_TEST(loss, class_input_must_be_1d_or_2d)
{
    tg_tensor *x3 = tg_zeros(TG_SHAPE(2, 3, 4), TG_FLOAT32);
    tg_tensor *y = tg_zeros(TG_SHAPE(2), TG_INT64);
    cr_assert_null(tg_cross_entropy(x3, y, TG_REDUCTION_MEAN));
    tg_assert_error("tg_cross_entropy: logits has shape (2, 3, 4)",
                    "rule: logits is (N, C)", "hint: for (N, C, d1, ...)");
    tg_tensor *x0 = tg_scalar(0.5, TG_FLOAT64);
    tg_tensor *y0 = tg_scalar(0, TG_INT64);
    cr_assert_null(tg_nll_loss(x0, y0, TG_REDUCTION_MEAN));
    tg_assert_error("tg_nll_loss: logp has shape ()");
    tg_release(y0);
    tg_release(x0);
    tg_release(y);
    tg_release(x3);
}

TG_TEST(loss, int64_inputs_are_refused)
{
    tg_tensor *xi = tg_zeros(TG_SHAPE(2, 3), TG_INT64);
    tg_tensor *xf = tg_zeros(TG_SHAPE(2, 3), TG_FLOAT32);
    tg_tensor *y = tg_zeros(TG_SHAPE(2), TG_INT64);
    cr_assert_null(tg_mse_loss(xi, xi, TG_REDUCTION_MEAN));
    tg_assert_error("tg_mse_loss: cannot take the mse_loss of an int64 "
                    "tensor (input)",
                    "rule: input must be float32 or float64",
                    "hint: convert it first: tg_to_dtype(input, "
                    "TG_FLOAT32)");
    cr_assert_null(tg_binary_cross_entropy_with_logits(xi, xf,
                                                       TG_REDUCTION_SUM));
    tg_assert_error("tg_binary_cross_entropy_with_logits: cannot take the "
                    "binary_cross_entropy_with_logits of an int64 tensor "
                    "(logits)");
    cr_assert_null(tg_nll_loss(xi, y, TG_REDUCTION_MEAN));
    tg_assert_error("tg_nll_loss: cannot take the nll_loss of an int64 "
                    "tensor (logp)");
    cr_assert_null(tg_cross_entropy(xi, y, TG_REDUCTION_MEAN));
    tg_assert_error("tg_cross_entropy: cannot take the cross_entropy of an "
                    "int64 tensor (logits)");
    /* an int64 target next to a float input: the dtype rule */
    cr_assert_null(tg_mse_loss(xf, xi, TG_REDUCTION_MEAN));
    tg_assert_error("tg_mse_loss: input is float32 but target is int64",
                    "hint: tg_to_dtype(target, TG_FLOAT32)");
    tg_release(y);
    tg_release(xf);
    tg_release(xi);
}

TG_TEST(loss, pointwise_dtypes_and_shapes_must_match)
{
    tg_tensor *a = tg_zeros(TG_SHAPE(4, 1), TG_FLOAT32);
    tg_tensor *b = tg_zeros(TG_SHAPE(4), TG_FLOAT32);
    tg_tensor *c = tg_zeros(TG_SHAPE(3), TG_FLOAT32);
    tg_tensor *d = tg_zeros(TG_SHAPE(4, 1), TG_FLOAT64);
    cr_assert_null(tg_mse_loss(a, b, TG_REDUCTION_MEAN));
    tg_assert_error("tg_mse_loss: input of shape (4, 1) and target of shape "
                    "(4,) differ",
                    "(N, 1) against (N,) into an (N, N) loss",
                    "hint: they have the same number of elements: "
                    "tg_reshape(target, TG_SHAPE(4, 1))");
    cr_assert_null(tg_binary_cross_entropy_with_logits(c, a,
                                                       TG_REDUCTION_NONE));
    tg_assert_error("logits of shape (3,) and targets of shape (4, 1) "
                    "differ",
                    "hint: if broadcasting is what you mean, say so: "
                    "tg_broadcast_to(targets, TG_SHAPE(3))");
    cr_assert_null(tg_mse_loss(a, d, TG_REDUCTION_SUM));
    tg_assert_error("tg_mse_loss: input is float32 but target is float64",
                    "rule: input and target have one float dtype",
                    "hint: tg_to_dtype(target, TG_FLOAT32)");
    tg_tensor *s = tg_scalar(1.0, TG_FLOAT32);
    tg_tensor *one = tg_zeros(TG_SHAPE(1), TG_FLOAT32);
    cr_assert_null(tg_mse_loss(s, one, TG_REDUCTION_SUM));
    tg_assert_error("tg_reshape(target, NULL, 0)");
    tg_release(one);
    tg_release(s);
    tg_release(d);
    tg_release(c);
    tg_release(b);
    tg_release(a);
}

TG_TEST(loss, bad_reduction)
{
    tg_tensor *x = tg_zeros(TG_SHAPE(2, 3), TG_FLOAT64);
    tg_tensor *y = tg_zeros(TG_SHAPE(2), TG_INT64);
    tg_reduction bad[2] = {(tg_reduction)3, (tg_reduction)-1};
    for (int i = 0; i < 2; i++) {
        char msg[32];
        snprintf(msg, sizeof msg, "reduction is %d", (int)bad[i]);
        cr_assert_null(tg_mse_loss(x, x, bad[i]));
        tg_assert_error("tg_mse_loss: ", msg, "rule: reduction is "
                        "TG_REDUCTION_MEAN (0), TG_REDUCTION_SUM (1) or "
                        "TG_REDUCTION_NONE (2)",
                        "hint: PyTorch's default is the mean");
        cr_assert_null(tg_binary_cross_entropy_with_logits(x, x, bad[i]));
        tg_assert_error("tg_binary_cross_entropy_with_logits: ", msg);
        cr_assert_null(tg_nll_loss(x, y, bad[i]));
        tg_assert_error("tg_nll_loss: ", msg);
        cr_assert_null(tg_cross_entropy(x, y, bad[i]));
        tg_assert_error("tg_cross_entropy: ", msg);
    }
    cr_assert_eq(tg_tape_size(), 0);
    tg_release(y);
    tg_release(x);
}
