/*
 * tests/autograd/test_norm_reference.c - LayerNorm and BatchNorm against
 * the NumPy references of scripts/reference/gen_norm.py: the fused ops
 * (tg_layer_norm_ex, tg_batch_norm_ex) and the composed ones, forward,
 * statistics, running statistics over several batches, and the gradients
 * of x, weight and bias for a fixed upstream gradient; the fused ops again
 * on non-contiguous inputs; float32 rows and channels with |mean| >> std;
 * a constant row and channel; and the comparison catching a wrong formula.
 *
 * What it is not: the gradcheck of these ops (test_norm_grad.c) and the
 * modules (tests/nn/).
 *
 * Tolerances used below, and why:
 *  - float64, F64_RTOL 1e-10 / F64_ATOL 1e-12 (fused and composed): both
 *    sides evaluate the same closed forms in float64 on the same inputs,
 *    with a few dozen roundings (~1e-16 relative each) in different orders;
 *    dx is a difference of terms of size ~rstd * |dy * w| <= ~300 (the
 *    constant row has rstd = eps^-1/2), so ~1e-13 absolute at worst.
 *  - float32 fused, F32_RTOL 1e-6 / F32_ATOL 1e-9: the fused ops compute in
 *    double and round once to float32, and the references are the same
 *    values rounded once to float32, so they differ by at most an ulp or
 *    two (1.2e-7 relative each); the atol only covers values that are 0 up
 *    to a float64 rounding. The running statistics are updated with
 *    float32 tensor ops (a few roundings per batch over three batches),
 *    still well within 1e-6.
 *  - float32 composed, F32C_RTOL 1e-4 / F32C_ATOL 1e-5: every primitive op
 *    rounds its result to float32 (6e-8 relative; the reductions sum in
 *    double), a value goes through ~10 ops, and dx is a difference of terms
 *    of size up to ~10, so the absolute error stays near 10 * 10 * 6e-8 =
 *    6e-6 at worst.
 *  - |mean| >> std (SEMANTICS.md §1): relative error below STAB_REL 1e-3,
 *    measured as max |actual - reference| / max |reference|, the bound the
 *    semantics set; the one-pass formula E[x^2] - E[x]^2 must miss it by a
 *    factor of at least 100 on the same inputs. The fused ops compute in
 *    double and round once, so they must also be within ROUNDED_ONCE 1e-6
 *    (a few float32 ulps of the largest value; measured 3e-8 and 5e-8):
 *    this catches a one-pass variance even when it is summed in double
 *    (9e-6 and 2e-4 on these inputs), which the 1e-3 bound lets through.
 */
#include "../common.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#define F64_RTOL 1e-10
#define F64_ATOL 1e-12
#define F32_RTOL 1e-6
#define F32_ATOL 1e-9
#define F32C_RTOL 1e-4
#define F32C_ATOL 1e-5
#define STAB_REL 1e-3
#define ROUNDED_ONCE 1e-6

/* How an op is run: the fused op on the reference arrays, the composed op,
 * or the fused op on non-contiguous tensors holding the same values. */
typedef enum { FUSED, COMPOSED, FUSED_STRIDED } run_mode;
static const char *const mode_names[] = {"fused", "composed",
                                         "fused, non-contiguous"};

typedef struct tolerance {
    double rtol, atol;
} tolerance;

static tolerance tol_for(const char *dt, run_mode mode)
{
    if (strcmp(dt, "f64") == 0)
        return (tolerance){F64_RTOL, F64_ATOL};
    if (mode == COMPOSED)
        return (tolerance){F32C_RTOL, F32C_ATOL};
    return (tolerance){F32_RTOL, F32_ATOL};
}

/* ---------------------------------------------------------------- helpers */

static void vname(char *buf, size_t size, const char *fmt, va_list ap)
{
    int n = vsnprintf(buf, size, fmt, ap);
    cr_assert(n > 0 && (size_t)n < size, "reference name too long");
}

/* Loads the reference array named by the format. New reference. */
static tg_tensor *ref(const char *fmt, ...)
{
    char name[256];
    va_list ap;
    va_start(ap, fmt);
    vname(name, sizeof name, fmt, ap);
    va_end(ap);
    return tg_test_load_ref(name);
}

/* Compares actual (borrowed) with the reference named by the format, or
 * with its entry `step` along dim 0 when step >= 0 (the BatchNorm arrays
 * stack one entry per batch). what says which result it is. */
static void check(const tg_tensor *actual, int step, tolerance tol,
                  const char *what, const char *fmt, ...)
{
    char name[256], report[1024];
    va_list ap;
    va_start(ap, fmt);
    vname(name, sizeof name, fmt, ap);
    va_end(ap);
    tg_tensor *all = tg_test_load_ref(name);
    tg_tensor *expected = step >= 0 ? tg_select(all, 0, step) : tg_retain(all);
    bool ok = tg_test_close(actual, expected, tol.rtol, tol.atol, true,
                            report, sizeof report);
    tg_release(expected);
    tg_release(all);
    if (step >= 0)
        cr_assert(ok, "%s: %s[%d]: %s", what, name, step, report);
    cr_assert(ok, "%s: %s: %s", what, name, report);
}

/* The reference array `name` as the tensor an op is run on: as loaded, or
 * non-contiguous for FUSED_STRIDED (x and dy transposed in memory, the
 * (C,)-like parameters strided). New reference; a leaf that requires grad
 * when grad is set. */
static tg_tensor *input(tg_tensor *loaded, run_mode mode, bool strided,
                        bool grad)
{
    tg_tensor *t = mode == FUSED_STRIDED ? tg_test_non_contiguous(loaded, strided)
                                         : tg_retain(loaded);
    tg_release(loaded);
    if (grad)
        cr_assert_eq(tg_set_requires_grad(t, true), 0, "%s",
                     tg_last_error());
    return t;
}

/* max |a - e| / max |e|, with a NaN or an infinity anywhere counting as
 * infinitely far: the relative error of a whole normalised array. */
static double relative_error(const tg_tensor *a, const tg_tensor *e)
{
    cr_assert(tg_same_shape(a, e));
    int64_t n = a->numel;
    double *av = malloc(sizeof(double) * (size_t)n);
    double *ev = malloc(sizeof(double) * (size_t)n);
    cr_assert(av && ev);
    cr_assert_eq(tg_to_f64_array(a, av), 0);
    cr_assert_eq(tg_to_f64_array(e, ev), 0);
    double err = 0.0, scale = 0.0;
    for (int64_t i = 0; i < n; i++) {
        double d = fabs(av[i] - ev[i]);
        err = isfinite(d) ? fmax(err, d) : INFINITY;
        scale = fmax(scale, fabs(ev[i]));
    }
    free(av);
    free(ev);
    return err / scale;
}

static bool all_finite(const tg_tensor *t)
{
    double *v = malloc(sizeof(double) * (size_t)t->numel);
    cr_assert(v);
    cr_assert_eq(tg_to_f64_array(t, v), 0);
    bool ok = true;
    for (int64_t i = 0; i < t->numel; i++)
        ok = ok && isfinite(v[i]);
    free(v);
    return ok;
}

/* Backpropagates dy from y, releases y; the tape is empty afterwards. */
static void backward(tg_tensor *y, const tg_tensor *dy)
{
    cr_assert_eq(tg_backward_ex(y, &(tg_backward_options){.grad = dy}), 0,
                 "%s", tg_last_error());
    tg_release(y);
    cr_assert_eq(tg_tape_size(), 0);
}

/* --------------------------------------------------------------- LayerNorm */

/* The cases of gen_norm.py's LN_CASES: the input set, how many trailing
 * dims are normalised, which of weight and bias are passed, eps, and the
 * dtypes covered. */
typedef struct ln_case {
    const char *name, *set;
    int nd;
    bool w, b;
    double eps;
    bool f64, f32;
} ln_case;

static const ln_case ln_cases[] = {
    {"a_wb", "a", 1, true, true, 1e-5, true, true},
    {"a_none", "a", 1, false, false, 1e-5, true, false},
    {"a_eps2", "a", 1, true, true, 1e-2, true, true},
    {"b_wb", "b", 1, true, true, 1e-5, true, false},
    {"b_w_eps0", "b", 1, true, false, 0.0, true, false},
    {"c_wb", "c", 2, true, true, 1e-5, true, true},
    {"c_b", "c", 2, false, true, 1e-5, true, false},
    {"gpt_wb", "gpt", 2, true, true, 1e-5, false, true},
    {"chw_wb", "chw", 3, true, true, 1e-5, true, false},
    {"chw_none", "chw", 3, false, false, 1e-2, true, false},
    {"v_wb", "v", 1, true, true, 1e-5, true, false},
    {"v_none_eps0", "v", 1, false, false, 0.0, true, false},
};

static void run_ln_case(const ln_case *c, const char *dt, run_mode mode)
{
    char what[128];
    snprintf(what, sizeof what, "LayerNorm %s %s (%s)", c->name, dt,
             mode_names[mode]);
    tolerance tol = tol_for(dt, mode);
    tg_tensor *x = input(ref("norm_ln_%s_x_%s", c->set, dt), mode, false,
                         true);
    tg_tensor *dy = input(ref("norm_ln_%s_dy_%s", c->set, dt), mode, false,
                          false);
    tg_tensor *w = c->w ? input(ref("norm_ln_%s_w_%s", c->set, dt), mode,
                                true, true)
                        : NULL;
    tg_tensor *b = c->b ? input(ref("norm_ln_%s_b_%s", c->set, dt), mode,
                                true, true)
                        : NULL;
    const int64_t *ns = x->shape + x->ndim - c->nd; // normalized_shape
    tg_tensor *mean = NULL, *rstd = NULL, *y;
    if (mode == COMPOSED)
        y = tg_layer_norm_composed(x, ns, c->nd, w, b, c->eps);
    else
        y = tg_layer_norm_ex(x, ns, c->nd, w, b, c->eps, &mean, &rstd);
    cr_assert(y, "%s: %s", what, tg_last_error());
    if (mode != COMPOSED) {
        cr_assert_str_eq(tg_grad_fn_name(y), "NativeLayerNormBackward0");
        check(mean, -1, tol, what, "norm_ln_%s_mean_%s", c->name, dt);
        check(rstd, -1, tol, what, "norm_ln_%s_rstd_%s", c->name, dt);
    }
    check(y, -1, tol, what, "norm_ln_%s_y_%s", c->name, dt);
    backward(y, dy);
    check(x->grad, -1, tol, what, "norm_ln_%s_dx_%s", c->name, dt);
    if (w)
        check(w->grad, -1, tol, what, "norm_ln_%s_dw_%s", c->name, dt);
    if (b)
        check(b->grad, -1, tol, what, "norm_ln_%s_db_%s", c->name, dt);
    tg_release(rstd);
    tg_release(mean);
    tg_release(b);
    tg_release(w);
    tg_release(dy);
    tg_release(x);
}

static void run_ln_cases(run_mode mode)
{
    for (size_t i = 0; i < sizeof ln_cases / sizeof *ln_cases; i++) {
        if (ln_cases[i].f64)
            run_ln_case(&ln_cases[i], "f64", mode);
        if (ln_cases[i].f32)
            run_ln_case(&ln_cases[i], "f32", mode);
    }
}

TG_TEST(norm_reference, layer_norm_fused)
{
    run_ln_cases(FUSED);
}

TG_TEST(norm_reference, layer_norm_composed)
{
    run_ln_cases(COMPOSED);
}

/* x and dy transposed in memory, weight and bias strided: the same
 * results. */
TG_TEST(norm_reference, layer_norm_fused_non_contiguous)
{
    run_ln_cases(FUSED_STRIDED);
}

/* --------------------------------------------------------------- BatchNorm */

/* The cases of gen_norm.py's BN_CASES. Each runs batches 0..2 of its set in
 * training, from running statistics 0 and 1, then batch 3 in eval with the
 * running statistics collected. momentum < 0 means cumulative: 1 / k for
 * batch k = 1, 2, 3 (the modules' momentum=None). */
typedef struct bn_case {
    const char *name, *set;
    bool affine;
    double momentum;
    int64_t correction;
    double eps;
    bool f64, f32;
} bn_case;

#define BN_TRAIN_STEPS 3
#define CUMULATIVE (-1.0)

static const bn_case bn_cases[] = {
    {"nc", "nc", true, 0.1, 0, 1e-5, true, true},
    {"nc_cum", "nc", true, CUMULATIVE, 0, 1e-5, true, false},
    {"nc_corr1", "nc", true, 0.1, 1, 1e-5, true, true},
    {"ncl", "ncl", true, 0.1, 0, 1e-5, true, false},
    {"ncl_noaff", "ncl", false, 0.3, 0, 1e-3, true, false},
    {"ncl_corr1_cum", "ncl", true, CUMULATIVE, 1, 1e-5, true, false},
    {"nchw", "nchw", true, 0.1, 0, 1e-5, true, true},
};

/* Copies entry BN_TRAIN_STEPS - 1 (after the last training batch) of the
 * stacked reference named by the format into dst. */
static void load_step(tg_tensor *dst, const char *fmt, const char *name,
                      const char *dt)
{
    tg_tensor *all = ref(fmt, name, dt);
    tg_tensor *last = tg_select(all, 0, BN_TRAIN_STEPS - 1);
    cr_assert_eq(tg_copy_(dst, last), 0, "%s", tg_last_error());
    tg_release(last);
    tg_release(all);
}

static void run_bn_case(const bn_case *c, const char *dt, run_mode mode)
{
    char what[160];
    tolerance tol = tol_for(dt, mode);
    tg_tensor *xs = ref("norm_bn_%s_x_%s", c->set, dt);   // (4, N, C, ...)
    tg_tensor *dys = ref("norm_bn_%s_dy_%s", c->set, dt); // (4, N, C, ...)
    tg_tensor *w = c->affine ? input(ref("norm_bn_%s_w_%s", c->set, dt),
                                     mode, true, true)
                             : NULL;
    tg_tensor *b = c->affine ? input(ref("norm_bn_%s_b_%s", c->set, dt),
                                     mode, true, true)
                             : NULL;
    int64_t C = xs->shape[2];
    /* The running statistics start at 0 and 1; strided for FUSED_STRIDED
     * (the op writes them in place). */
    tg_tensor *rm = input(tg_zeros(&C, 1, xs->dtype), mode, true, false);
    tg_tensor *rv = input(tg_ones(&C, 1, xs->dtype), mode, true, false);
    for (int k = 0; k <= BN_TRAIN_STEPS; k++) {
        bool training = k < BN_TRAIN_STEPS;
        snprintf(what, sizeof what, "BatchNorm %s %s (%s), batch %d (%s)",
                 c->name, dt, mode_names[mode], k,
                 training ? "train" : "eval");
        tg_batch_norm_options o = {
            .eval = !training,
            .momentum = c->momentum < 0 ? 1.0 / (k + 1) : c->momentum,
            .eps = c->eps,
            .correction = c->correction};
        tg_tensor *xk = tg_select(xs, 0, k), *dyk = tg_select(dys, 0, k);
        tg_tensor *x = input(tg_clone(xk), mode, false, true);
        tg_tensor *dy = input(tg_clone(dyk), mode, false, false);
        tg_release(dyk);
        tg_release(xk);
        tg_clear_grad(w);
        tg_clear_grad(b);
        if (!training) {
            /* Eval starts from the reference statistics after batch 2,
             * which the buffers already matched within tolerance: its
             * references are then exact for the inputs it gets (in
             * float32 the buffers' last-ulp differences would otherwise
             * show, times invstd * w, where x - running_mean cancels). */
            load_step(rm, "norm_bn_%s_rmean_%s", c->name, dt);
            load_step(rv, "norm_bn_%s_rvar_%s", c->name, dt);
        }
        tg_tensor *mean = NULL, *invstd = NULL, *y;
        if (mode == COMPOSED)
            y = tg_batch_norm_composed(x, rm, rv, w, b, &o);
        else
            y = tg_batch_norm_ex(x, rm, rv, w, b, &o, &mean, &invstd);
        cr_assert(y, "%s: %s", what, tg_last_error());
        if (mode != COMPOSED) {
            cr_assert_str_eq(tg_grad_fn_name(y), "NativeBatchNormBackward0");
            check(mean, k, tol, what, "norm_bn_%s_mean_%s", c->name, dt);
            check(invstd, k, tol, what, "norm_bn_%s_invstd_%s", c->name, dt);
        }
        check(y, k, tol, what, "norm_bn_%s_y_%s", c->name, dt);
        /* after batch k; eval leaves them as batch 2 did */
        int last = training ? k : BN_TRAIN_STEPS - 1;
        check(rm, last, tol, what, "norm_bn_%s_rmean_%s", c->name, dt);
        check(rv, last, tol, what, "norm_bn_%s_rvar_%s", c->name, dt);
        backward(y, dy);
        check(x->grad, k, tol, what, "norm_bn_%s_dx_%s", c->name, dt);
        if (w)
            check(w->grad, k, tol, what, "norm_bn_%s_dw_%s", c->name, dt);
        if (b)
            check(b->grad, k, tol, what, "norm_bn_%s_db_%s", c->name, dt);
        tg_release(invstd);
        tg_release(mean);
        tg_release(dy);
        tg_release(x);
    }
    tg_release(rv);
    tg_release(rm);
    tg_release(b);
    tg_release(w);
    tg_release(dys);
    tg_release(xs);
}

static void run_bn_cases(run_mode mode)
{
    for (size_t i = 0; i < sizeof bn_cases / sizeof *bn_cases; i++) {
        if (bn_cases[i].f64)
            run_bn_case(&bn_cases[i], "f64", mode);
        if (bn_cases[i].f32)
            run_bn_case(&bn_cases[i], "f32", mode);
    }
}

TG_TEST(norm_reference, batch_norm_fused)
{
    run_bn_cases(FUSED);
}

TG_TEST(norm_reference, batch_norm_composed)
{
    run_bn_cases(COMPOSED);
}

/* x and dy transposed in memory ((N, C, H, W) stored as (W, H, C, N)),
 * weight, bias and the running statistics strided: the same results. */
TG_TEST(norm_reference, batch_norm_fused_non_contiguous)
{
    run_bn_cases(FUSED_STRIDED);
}

/* ------------------------------------------------------ |mean| >> std */

/* Float32 rows of mean ~1e4 and std 1e-2 (SEMANTICS.md §1): the fused
 * LayerNorm normalises them to relative error < 1e-3 against the float64
 * reference computed from the same float32 values, and so is its dx; the
 * one-pass E[x^2] - E[x]^2 in float32 (the stored naive result) is far off
 * on the same rows, so the inputs do exercise the pitfall. */
TG_TEST(norm_reference, layer_norm_large_mean_float32)
{
    tg_tensor *x = ref("norm_stab_ln_x_f32");
    tg_tensor *dy = ref("norm_stab_ln_dy_f32");
    tg_tensor *y_ref = ref("norm_stab_ln_y_f64");
    tg_tensor *dx_ref = ref("norm_stab_ln_dx_f64");
    tg_tensor *naive = ref("norm_stab_ln_naive_f32");
    cr_assert_eq(tg_set_requires_grad(x, true), 0);
    tg_tensor *y = tg_layer_norm(x, (const int64_t[]){64}, 1, NULL, NULL,
                                 1e-5);
    cr_assert(y, "%s", tg_last_error());
    double ours = relative_error(y, y_ref);
    double theirs = relative_error(naive, y_ref);
    cr_assert_lt(ours, STAB_REL, "fused LayerNorm: relative error %g", ours);
    cr_assert_lt(ours, ROUNDED_ONCE,
                 "fused LayerNorm: relative error %g, more than one rounding",
                 ours);
    cr_assert_gt(theirs, 100 * STAB_REL,
                 "the naive formula is not off on these inputs (%g): the "
                 "test would not show the pitfall",
                 theirs);
    backward(y, dy);
    double dx_err = relative_error(x->grad, dx_ref);
    cr_assert_lt(dx_err, STAB_REL, "fused LayerNorm dx: relative error %g",
                 dx_err);
    tg_release(naive);
    tg_release(dx_ref);
    tg_release(y_ref);
    tg_release(dy);
    tg_release(x);
}

/* The same for BatchNorm: (8, 3, 4) float32 channels around 1e4, 2e4, 3e4
 * with std 1e-2, in training; also the running statistics after it. */
TG_TEST(norm_reference, batch_norm_large_mean_float32)
{
    tg_tensor *x = ref("norm_stab_bn_x_f32");
    tg_tensor *dy = ref("norm_stab_bn_dy_f32");
    tg_tensor *y_ref = ref("norm_stab_bn_y_f64");
    tg_tensor *dx_ref = ref("norm_stab_bn_dx_f64");
    tg_tensor *rm_ref = ref("norm_stab_bn_rmean_f64");
    tg_tensor *rv_ref = ref("norm_stab_bn_rvar_f64");
    tg_tensor *naive = ref("norm_stab_bn_naive_f32");
    tg_tensor *rm = tg_zeros(TG_SHAPE(3), TG_FLOAT32);
    tg_tensor *rv = tg_ones(TG_SHAPE(3), TG_FLOAT32);
    cr_assert_eq(tg_set_requires_grad(x, true), 0);
    tg_tensor *y = tg_batch_norm(x, rm, rv, NULL, NULL, true, 0.1, 1e-5);
    cr_assert(y, "%s", tg_last_error());
    double ours = relative_error(y, y_ref);
    double theirs = relative_error(naive, y_ref);
    cr_assert_lt(ours, STAB_REL, "fused BatchNorm: relative error %g", ours);
    cr_assert_lt(ours, ROUNDED_ONCE,
                 "fused BatchNorm: relative error %g, more than one rounding",
                 ours);
    cr_assert_gt(theirs, 100 * STAB_REL,
                 "the naive formula is not off on these inputs (%g): the "
                 "test would not show the pitfall",
                 theirs);
    /* running statistics of size ~1e3 and ~0.9 in float32: a few
     * roundings of 6e-8 */
    char report[1024];
    cr_assert(tg_test_close(rm, rm_ref, F32_RTOL, 0, false, report,
                            sizeof report),
              "running_mean: %s", report);
    cr_assert(tg_test_close(rv, rv_ref, F32_RTOL, 0, false, report,
                            sizeof report),
              "running_var: %s", report);
    backward(y, dy);
    double dx_err = relative_error(x->grad, dx_ref);
    cr_assert_lt(dx_err, STAB_REL, "fused BatchNorm dx: relative error %g",
                 dx_err);
    tg_release(rv);
    tg_release(rm);
    tg_release(naive);
    tg_release(rv_ref);
    tg_release(rm_ref);
    tg_release(dx_ref);
    tg_release(y_ref);
    tg_release(dy);
    tg_release(x);
}

/* ------------------------------------------------------- zero variance */

/* A constant row: xhat = 0 there, so y = bias exactly up to rounding and
 * dx = rstd * (g - mean(g)) with rstd = eps^-1/2; everything finite, fused
 * and composed. */
TG_TEST(norm_reference, layer_norm_constant_row)
{
    tolerance tol = {F64_RTOL, F64_ATOL};
    for (int composed = 0; composed <= 1; composed++) {
        const char *what = composed ? "LayerNorm constant row (composed)"
                                    : "LayerNorm constant row (fused)";
        tg_tensor *x = ref("norm_zv_ln_x"), *dy = ref("norm_zv_ln_dy");
        tg_tensor *w = ref("norm_zv_ln_w"), *b = ref("norm_zv_ln_b");
        cr_assert_eq(tg_set_requires_grad(x, true), 0);
        cr_assert_eq(tg_set_requires_grad(w, true), 0);
        cr_assert_eq(tg_set_requires_grad(b, true), 0);
        const int64_t ns[1] = {5};
        tg_tensor *y = composed ? tg_layer_norm_composed(x, ns, 1, w, b, 1e-5)
                                : tg_layer_norm(x, ns, 1, w, b, 1e-5);
        cr_assert(y && all_finite(y), "%s: %s", what, tg_last_error());
        tg_tensor *row = tg_select(y, 0, 1);
        tg_tensor *bd = tg_detach(b);
        char report[1024];
        cr_assert(tg_test_close(row, bd, 0, F64_ATOL, true, report,
                                sizeof report),
                  "%s: y of the constant row is not the bias: %s", what,
                  report);
        tg_release(bd);
        tg_release(row);
        check(y, -1, tol, what, "norm_zv_ln_y");
        backward(y, dy);
        cr_assert(all_finite(x->grad) && all_finite(w->grad) &&
                      all_finite(b->grad),
                  "%s: a gradient is not finite", what);
        check(x->grad, -1, tol, what, "norm_zv_ln_dx");
        check(w->grad, -1, tol, what, "norm_zv_ln_dw");
        check(b->grad, -1, tol, what, "norm_zv_ln_db");
        tg_release(b);
        tg_release(w);
        tg_release(dy);
        tg_release(x);
    }
}

/* A constant channel in training: y = bias there, finite gradients, and
 * the channel's running variance decays towards its batch variance 0. */
TG_TEST(norm_reference, batch_norm_constant_channel)
{
    tolerance tol = {F64_RTOL, F64_ATOL};
    for (int composed = 0; composed <= 1; composed++) {
        const char *what = composed ? "BatchNorm constant channel (composed)"
                                    : "BatchNorm constant channel (fused)";
        tg_tensor *x = ref("norm_zv_bn_x"), *dy = ref("norm_zv_bn_dy");
        tg_tensor *w = ref("norm_zv_bn_w"), *b = ref("norm_zv_bn_b");
        tg_tensor *rm = tg_zeros(TG_SHAPE(3), TG_FLOAT64);
        tg_tensor *rv = tg_ones(TG_SHAPE(3), TG_FLOAT64);
        cr_assert_eq(tg_set_requires_grad(x, true), 0);
        cr_assert_eq(tg_set_requires_grad(w, true), 0);
        cr_assert_eq(tg_set_requires_grad(b, true), 0);
        tg_batch_norm_options o = tg_batch_norm_defaults();
        tg_tensor *y = composed
                           ? tg_batch_norm_composed(x, rm, rv, w, b, &o)
                           : tg_batch_norm_ex(x, rm, rv, w, b, &o, NULL,
                                              NULL);
        cr_assert(y && all_finite(y), "%s: %s", what, tg_last_error());
        for (int64_t i = 0; i < 6; i++) {
            double yi, bi;
            cr_assert_eq(tg_get(y, (const int64_t[]){i, 2}, 2, &yi), 0);
            cr_assert_eq(tg_get(b, (const int64_t[]){2}, 1, &bi), 0);
            cr_assert(fabs(yi - bi) <= F64_ATOL,
                      "%s: y[%lld, 2] = %.17g, bias %.17g", what,
                      (long long)i, yi, bi);
        }
        check(y, -1, tol, what, "norm_zv_bn_y");
        check(rm, -1, tol, what, "norm_zv_bn_rmean");
        check(rv, -1, tol, what, "norm_zv_bn_rvar");
        backward(y, dy);
        cr_assert(all_finite(x->grad) && all_finite(w->grad) &&
                      all_finite(b->grad),
                  "%s: a gradient is not finite", what);
        check(x->grad, -1, tol, what, "norm_zv_bn_dx");
        check(w->grad, -1, tol, what, "norm_zv_bn_dw");
        check(b->grad, -1, tol, what, "norm_zv_bn_db");
        tg_release(rv);
        tg_release(rm);
        tg_release(b);
        tg_release(w);
        tg_release(dy);
        tg_release(x);
    }
}

/* ------------------------------------------------------------ the checker */

/* The comparison must catch a wrong formula: BatchNorm's dx for batch 0 of
 * case nc (correction 0) against a reference computed with the
 * correction-1 formula's extra factor n/(n-1) = 8/7 on the last term, and
 * LayerNorm's dx against one without the xhat * mean(g * xhat) term. The
 * right references pass with the same tolerances, so the failure comes
 * from the formula alone. */
TG_TEST(norm_reference, comparison_rejects_wrong_formulas)
{
    char report[1024];
    tg_tensor *xs = ref("norm_bn_nc_x_f64"), *dys = ref("norm_bn_nc_dy_f64");
    tg_tensor *x = tg_select(xs, 0, 0), *dy = tg_select(dys, 0, 0);
    tg_tensor *w = ref("norm_bn_nc_w_f64"), *b = ref("norm_bn_nc_b_f64");
    tg_tensor *xl = tg_clone(x);
    cr_assert_eq(tg_set_requires_grad(xl, true), 0);
    tg_batch_norm_options o = tg_batch_norm_defaults();
    backward(tg_batch_norm_ex(xl, NULL, NULL, w, b, &o, NULL, NULL), dy);
    tg_tensor *wrong = ref("norm_wrong_bn_nc_dx_f64");
    cr_assert_not(tg_test_close(xl->grad, wrong, F64_RTOL, F64_ATOL, true,
                                report, sizeof report),
                  "dx matched the correction-1 formula");
    cr_assert(strstr(report, "the worst element is at flat index"), "report: %s", report);
    check(xl->grad, 0, (tolerance){F64_RTOL, F64_ATOL}, "BatchNorm dx",
          "norm_bn_nc_dx_f64");
    tg_release(wrong);
    tg_release(xl);
    tg_release(b);
    tg_release(w);
    tg_release(dy);
    tg_release(x);
    tg_release(dys);
    tg_release(xs);

    x = ref("norm_ln_a_x_f64");
    dy = ref("norm_ln_a_dy_f64");
    w = ref("norm_ln_a_w_f64");
    b = ref("norm_ln_a_b_f64");
    cr_assert_eq(tg_set_requires_grad(x, true), 0);
    backward(tg_layer_norm(x, (const int64_t[]){5}, 1, w, b, 1e-5), dy);
    wrong = ref("norm_wrong_ln_a_dx_f64");
    cr_assert_not(tg_test_close(x->grad, wrong, F64_RTOL, F64_ATOL, true,
                                report, sizeof report),
                  "dx matched the formula without the xhat term");
    cr_assert(strstr(report, "the worst element is at flat index"), "report: %s", report);
    check(x->grad, -1, (tolerance){F64_RTOL, F64_ATOL}, "LayerNorm dx",
          "norm_ln_a_wb_dx_f64");
    tg_release(wrong);
    tg_release(b);
    tg_release(w);
    tg_release(dy);
    tg_release(x);
}
