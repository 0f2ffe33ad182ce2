/*
 * tests/autograd/test_group_norm.c - GroupNorm and InstanceNorm
 * (autograd/ops/group_norm.c) against the plain-loop NumPy references of
 * scripts/reference/gen_group_norm.py and against PyTorch 1.13's outputs
 * on the same inputs (tests/reference/torch-group-norm-vectors.txt, from
 * scripts/reference/torch_group_norm.py): forward, the gradients of x,
 * weight and bias for a fixed upstream gradient, and the running
 * statistics over two training batches and an eval batch; the fused op
 * again on non-contiguous inputs, and the composed form. Then what ties
 * the normalisations together: GroupNorm with one group is LayerNorm over
 * (C, ...), InstanceNorm is GroupNorm with C groups, and only BatchNorm
 * mixes the samples of a batch. Last, each comparison fed a wrong answer.
 *
 * What it is not: the gradcheck of these ops (grad_cases_group_norm.c in
 * test_grad_ops), the error messages (tests/errors/catalogue_ops.c) and
 * the modules (tests/nn/test_group_norm_modules.c).
 *
 * Tolerances, and why:
 *  - float64 against NumPy, F64_RTOL 1e-10 / F64_ATOL 1e-12: both sides
 *    evaluate the same closed forms in float64 with a few dozen roundings
 *    (~1e-16 each) in different orders, on values of size < 10.
 *  - float32 fused against NumPy, F32_RTOL 1e-6 / F32_ATOL 1e-7: the op
 *    computes in double and rounds once to float32; the references are
 *    the same values rounded once, so they differ by an ulp or two
 *    (1.2e-7 relative each); the atol covers values that are 0 up to a
 *    rounding (dx sums to zero over a group).
 *  - float32 composed, F32C_RTOL 1e-4 / F32C_ATOL 1e-5: every primitive op
 *    rounds to float32 (6e-8), a value passes ~10 ops, and dx is a
 *    difference of terms up to ~10: ~6e-6 absolute at worst.
 *  - against PyTorch in float64, TORCH_F64 1e-12 (relative and
 *    absolute): the same formulas, rounded at every step in PyTorch's own
 *    order (measured: 5e-16).
 *  - against PyTorch in float32, TORCH_F32_RTOL 2e-6 / TORCH_F32_ATOL
 *    5e-5: PyTorch computes in float32, rounding every step (6e-8
 *    relative each), so y and dw are a few ulps apart (measured: 2.4e-7
 *    and 9.5e-7 on values up to ~4); dx is a difference of terms of size
 *    rstd * |dy * w|, which reach ~50 in case nc_g3 (a group of two close
 *    values has rstd 27), where PyTorch's float32 roundings leave ~1e-5
 *    absolute (measured 1.9e-5, against the float64 NumPy value rounded
 *    once, which the op matches to 1e-7).
 */
#include "../common.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

/* Element i (C order) of t as a double. */
static double at(const tg_tensor *t, int64_t i)
{
    double *v = malloc((size_t)t->numel * sizeof *v + 1);
    cr_assert(v);
    cr_assert_eq(tg_to_f64_array(t, v), 0);
    double r = v[i];
    free(v);
    return r;
}

#define F64_RTOL 1e-10
#define F64_ATOL 1e-12
#define F32_RTOL 1e-6
#define F32_ATOL 1e-7
#define F32C_RTOL 1e-4
#define F32C_ATOL 1e-5
#define TORCH_F64 1e-12
#define TORCH_F32_RTOL 2e-6
#define TORCH_F32_ATOL 5e-5

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

static tolerance torch_tol(const char *dt)
{
    if (strcmp(dt, "f64") == 0)
        return (tolerance){TORCH_F64, TORCH_F64};
    return (tolerance){TORCH_F32_RTOL, TORCH_F32_ATOL};
}

/* ---------------------------------------------------------------- helpers */

/* Loads the reference array named by the format. New reference. */
static tg_tensor *ref(const char *fmt, ...)
{
    char name[256];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(name, sizeof name, fmt, ap);
    va_end(ap);
    cr_assert(n > 0 && (size_t)n < sizeof name);
    return tg_test_load_ref(name);
}

/* The section "## <title>" of torch-group-norm-vectors.txt as a tensor of
 * dtype (the values are float64 in the file, exactly the float32 values
 * for float32 cases). New reference. */
static tg_tensor *torch_ref(tg_dtype dtype, const char *fmt, ...)
{
    char title[256];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(title, sizeof title, fmt, ap);
    va_end(ap);
    cr_assert(n > 0 && (size_t)n < sizeof title);
    tg_test_section s;
    tg_test_section_open(&s, "torch-group-norm-vectors.txt", title);
    int64_t shape[TG_MAX_DIMS];
    int ndim = 0;
    size_t count = 0, cap = 64;
    double *v = malloc(cap * sizeof *v);
    cr_assert(v);
    for (const char *line; (line = tg_test_section_next(&s));) {
        if (strncmp(line, "shape", 5) == 0) {
            const char *p = line + 5;
            char *end;
            for (long d; (d = strtol(p, &end, 10)), end != p; p = end)
                shape[ndim++] = d;
            continue;
        }
        if (count == cap) {
            cap *= 2;
            v = realloc(v, cap * sizeof *v);
            cr_assert(v);
        }
        v[count++] = strtod(line, NULL);
    }
    tg_test_section_close(&s);
    cr_assert(s.found, "no section \"%s\" in torch-group-norm-vectors.txt",
              title);
    tg_tensor *t64 = tg_from_array(v, shape, ndim, TG_FLOAT64);
    free(v);
    cr_assert(t64 && t64->numel == (int64_t)count, "section %s", title);
    tg_tensor *t = tg_to_dtype(t64, dtype);
    tg_release(t64);
    return t;
}

/* Asserts that actual is close to expected (both borrowed). */
static void check_close(const tg_tensor *actual, const tg_tensor *expected,
                        tolerance tol, const char *what, const char *name)
{
    char report[1024];
    cr_assert(actual, "%s: %s: no result", what, name);
    cr_assert(tg_test_close(actual, expected, tol.rtol, tol.atol, true,
                            report, sizeof report),
              "%s: %s: %s", what, name, report);
}

/* Compares actual with the reference array (its entry `step` along dim 0
 * when step >= 0). */
static void check(const tg_tensor *actual, int step, tolerance tol,
                  const char *what, const char *name)
{
    tg_tensor *all = tg_test_load_ref(name);
    tg_tensor *e = step >= 0 ? tg_select(all, 0, step) : tg_retain(all);
    check_close(actual, e, tol, what, name);
    tg_release(e);
    tg_release(all);
}

/* The same against PyTorch's section `title`. */
static void check_torch(const tg_tensor *actual, tolerance tol,
                        const char *what, const char *title)
{
    cr_assert(actual, "%s: no result for %s", what, title);
    tg_tensor *e = torch_ref(actual->dtype, "%s", title);
    check_close(actual, e, tol, what, title);
    tg_release(e);
}

/* The loaded array as the op gets it: as loaded, or non-contiguous for
 * FUSED_STRIDED. New reference; a leaf that requires grad when grad. */
static tg_tensor *input(tg_tensor *loaded, run_mode mode, bool strided,
                        bool grad)
{
    tg_tensor *t = mode == FUSED_STRIDED
                       ? tg_test_non_contiguous(loaded, strided)
                       : tg_retain(loaded);
    tg_release(loaded);
    if (grad)
        cr_assert_eq(tg_set_requires_grad(t, true), 0, "%s",
                     tg_last_error());
    return t;
}

/* Backpropagates dy from y and releases y; the tape is empty after. */
static void backward(tg_tensor *y, const tg_tensor *dy)
{
    cr_assert_eq(tg_backward_ex(y, &(tg_backward_options){.grad = dy}), 0,
                 "%s", tg_last_error());
    tg_release(y);
    cr_assert_eq(tg_tape_size(), 0);
}

/* ------------------------------------------------------------- GroupNorm */

/* gen_group_norm.py's GN_CASES. */
typedef struct gn_case {
    const char *name, *set;
    int64_t groups;
    bool affine;
    double eps;
    bool f32;
} gn_case;

static const gn_case gn_cases[] = {
    {"nc_g3", "nc", 3, true, 1e-5, true},
    {"nc_g1", "nc", 1, false, 1e-5, false},
    {"ncl_g2", "ncl", 2, true, 1e-5, true},
    {"ncl_g4", "ncl", 4, true, 0.1, false},
    {"nchw_g3", "nchw", 3, true, 1e-5, true},
    {"nchw_g6_noaff", "nchw", 6, false, 1e-5, false},
    {"nchw_g1", "nchw", 1, true, 1e-3, false},
};

static void run_gn_case(const gn_case *c, const char *dt, run_mode mode)
{
    char what[128], name[128];
    snprintf(what, sizeof what, "GroupNorm %s %s (%s)", c->name, dt,
             mode_names[mode]);
    tolerance tol = tol_for(dt, mode), ttol = torch_tol(dt);
    tg_tensor *x = input(ref("gn_%s_x_%s", c->set, dt), mode, false, true);
    tg_tensor *dy = input(ref("gn_%s_dy_%s", c->set, dt), mode, false,
                          false);
    tg_tensor *w = c->affine ? input(ref("gn_%s_w_%s", c->set, dt), mode,
                                     true, true)
                             : NULL;
    tg_tensor *b = c->affine ? input(ref("gn_%s_b_%s", c->set, dt), mode,
                                     true, true)
                             : NULL;
    tg_tensor *y = mode == COMPOSED
                       ? tg_group_norm_composed(x, c->groups, w, b, c->eps)
                       : tg_group_norm(x, c->groups, w, b, c->eps);
    cr_assert(y, "%s: %s", what, tg_last_error());
    if (mode != COMPOSED)
        cr_assert_str_eq(tg_grad_fn_name(y), "NativeGroupNormBackward0");
    const char *keys[4] = {"y", "dx", "dw", "db"};
    snprintf(name, sizeof name, "gn_%s_y_%s", c->name, dt);
    check(y, -1, tol, what, name);
    snprintf(name, sizeof name, "gn_%s_%s y", c->name, dt);
    check_torch(y, ttol, what, name);
    backward(y, dy);
    const tg_tensor *grads[4] = {NULL, x->grad, w ? w->grad : NULL,
                                 b ? b->grad : NULL};
    for (int k = 1; k < (c->affine ? 4 : 2); k++) {
        snprintf(name, sizeof name, "gn_%s_%s_%s", c->name, keys[k], dt);
        check(grads[k], -1, tol, what, name);
        snprintf(name, sizeof name, "gn_%s_%s %s", c->name, dt, keys[k]);
        check_torch(grads[k], ttol, what, name);
    }
    tg_release(b);
    tg_release(w);
    tg_release(dy);
    tg_release(x);
}

static void run_gn_cases(run_mode mode)
{
    for (size_t i = 0; i < sizeof gn_cases / sizeof *gn_cases; i++) {
        run_gn_case(&gn_cases[i], "f64", mode);
        if (gn_cases[i].f32)
            run_gn_case(&gn_cases[i], "f32", mode);
    }
}

TG_TEST(group_norm, fused_matches_numpy_and_torch)
{
    run_gn_cases(FUSED);
}

TG_TEST(group_norm, fused_on_non_contiguous_inputs)
{
    run_gn_cases(FUSED_STRIDED);
}

TG_TEST(group_norm, composed_matches_numpy_and_torch)
{
    run_gn_cases(COMPOSED);
}

/* ---------------------------------------------------------- InstanceNorm */

/* Two training batches then one eval batch, the running statistics
 * carried along, as gen_group_norm.py and torch_group_norm.py run them. */
static void run_in_set(const char *set, const char *dt, run_mode mode)
{
    char what[128], name[128];
    tolerance tol = tol_for(dt, mode), ttol = torch_tol(dt);
    tg_tensor *xs = ref("in_%s_x_%s", set, dt);
    tg_tensor *dys = ref("in_%s_dy_%s", set, dt);
    int64_t C = xs->shape[2];
    tg_dtype dtype = xs->dtype;
    tg_tensor *rm = tg_zeros(&C, 1, dtype), *rv = tg_ones(&C, 1, dtype);
    const char *keys[4] = {"y", "dx", "dw", "db"};
    for (int k = 0; k < 3; k++) {
        bool train = k < 2;
        snprintf(what, sizeof what, "InstanceNorm %s %s batch %d (%s)", set,
                 dt, k, mode_names[mode]);
        tg_tensor *x = input(tg_select(xs, 0, k), mode, false, true);
        tg_tensor *dy = input(tg_select(dys, 0, k), mode, false, false);
        tg_tensor *w = input(ref("in_%s_w_%s", set, dt), mode, true, true);
        tg_tensor *b = input(ref("in_%s_b_%s", set, dt), mode, true, true);
        tg_tensor *y = tg_instance_norm(x, rm, rv, w, b, train, 0.1, 1e-5);
        cr_assert(y, "%s: %s", what, tg_last_error());
        cr_assert_str_eq(tg_grad_fn_name(y), train
                                                 ? "NativeGroupNormBackward0"
                                                 : "NativeBatchNormBackward0");
        snprintf(name, sizeof name, "in_%s_y_%s", set, dt);
        check(y, k, tol, what, name);
        snprintf(name, sizeof name, "in_%s_%s batch %d y", set, dt, k);
        check_torch(y, ttol, what, name);
        backward(y, dy);
        const tg_tensor *grads[4] = {NULL, x->grad, w->grad, b->grad};
        for (int j = 1; j < 4; j++) {
            snprintf(name, sizeof name, "in_%s_%s_%s", set, keys[j], dt);
            check(grads[j], k, tol, what, name);
            snprintf(name, sizeof name, "in_%s_%s batch %d %s", set, dt, k,
                     keys[j]);
            check_torch(grads[j], ttol, what, name);
        }
        if (train) {
            snprintf(name, sizeof name, "in_%s_rmean_%s", set, dt);
            check(rm, k, tol, what, name);
            snprintf(name, sizeof name, "in_%s_rvar_%s", set, dt);
            check(rv, k, tol, what, name);
            snprintf(name, sizeof name, "in_%s_%s batch %d running_mean",
                     set, dt, k);
            check_torch(rm, ttol, what, name);
            snprintf(name, sizeof name, "in_%s_%s batch %d running_var", set,
                     dt, k);
            check_torch(rv, ttol, what, name);
        }
        tg_release(b);
        tg_release(w);
        tg_release(dy);
        tg_release(x);
    }
    tg_release(rv);
    tg_release(rm);
    tg_release(dys);
    tg_release(xs);
}

TG_TEST(instance_norm, training_and_eval_match_numpy_and_torch)
{
    const char *sets[2] = {"ncl", "nchw"}, *dts[2] = {"f64", "f32"};
    for (int s = 0; s < 2; s++)
        for (int d = 0; d < 2; d++) {
            run_in_set(sets[s], dts[d], FUSED);
            run_in_set(sets[s], dts[d], FUSED_STRIDED);
        }
}

/* Without running statistics nothing is updated, and the output is that
 * of the case with them. */
TG_TEST(instance_norm, without_running_statistics)
{
    tg_tensor *xs = ref("in_nchw_x_f64");
    tg_tensor *x = tg_select(xs, 0, 0);
    tg_tensor *w = ref("in_nchw_w_f64"), *b = ref("in_nchw_b_f64");
    tg_tensor *y = tg_instance_norm(x, NULL, NULL, w, b, true, 0.1, 1e-5);
    check(y, 0, (tolerance){F64_RTOL, F64_ATOL}, "no running statistics",
          "in_nchw_y_f64");
    tg_release(y);
    tg_release(b);
    tg_release(w);
    tg_release(x);
    tg_release(xs);
}

/* Under no_grad nothing is recorded, and the running statistics still
 * move (as in PyTorch, they are not part of the graph). */
TG_TEST(instance_norm, no_grad_records_nothing_but_updates_running_stats)
{
    tg_tensor *xs = ref("in_ncl_x_f32");
    tg_tensor *x = tg_select(xs, 0, 0);
    tg_set_requires_grad(x, true);
    int64_t C = 4;
    tg_tensor *rm = tg_zeros(&C, 1, TG_FLOAT32), *rv = tg_ones(&C, 1, TG_FLOAT32);
    tg_no_grad_begin();
    tg_tensor *y = tg_instance_norm(x, rm, rv, NULL, NULL, true, 0.1, 1e-5);
    tg_no_grad_end();
    cr_assert(y && !y->requires_grad);
    cr_assert_eq(tg_tape_size(), 0);
    check(rm, 0, (tolerance){F32_RTOL, F32_ATOL}, "no_grad", "in_ncl_rmean_f32");
    check(rv, 0, (tolerance){F32_RTOL, F32_ATOL}, "no_grad", "in_ncl_rvar_f32");
    tg_release(y);
    tg_release(rv);
    tg_release(rm);
    tg_release(x);
    tg_release(xs);
}

/* ------------------------------------------ one computation, four layers */

/* x (2, 4, 3, 2) float64 in [-2, 2) and a fixed weighting dy, from a
 * seeded generator. New references. */
static void make_nchw(tg_tensor **x, tg_tensor **dy, uint64_t seed)
{
    tg_generator *gen = tg_generator_new(seed);
    const int64_t shape[4] = {2, 4, 3, 2};
    *x = tg_empty(shape, 4, TG_FLOAT64);
    *dy = tg_empty(shape, 4, TG_FLOAT64);
    tg_uniform_(*x, -2.0, 2.0, gen);
    tg_uniform_(*dy, -1.0, 1.0, gen);
    tg_generator_free(gen);
    tg_set_requires_grad(*x, true);
}

/* GroupNorm with one group normalises each sample over all of (C, H, W):
 * LayerNorm with normalized_shape (C, H, W) and no affine part (LayerNorm's
 * affine part is per element, GroupNorm's per channel, so only the
 * normalisation itself is the same). Two different kernels, one result,
 * forward and backward. */
TG_TEST(group_norm, one_group_is_layer_norm_over_chw)
{
    tg_tensor *x, *dy;
    make_nchw(&x, &dy, 11);
    tg_tensor *y_gn = tg_group_norm(x, 1, NULL, NULL, 1e-5);
    tg_tensor *y_ln = tg_layer_norm(x, &x->shape[1], 3, NULL, NULL, 1e-5);
    tolerance tol = {1e-13, 1e-13};
    check_close(y_gn, y_ln, tol, "GroupNorm G = 1 vs LayerNorm", "y");
    tg_release(y_ln);
    backward(y_gn, dy);
    tg_tensor *dx_gn = tg_retain(x->grad);
    tg_clear_grad(x);
    backward(tg_layer_norm(x, &x->shape[1], 3, NULL, NULL, 1e-5), dy);
    check_close(dx_gn, x->grad, tol, "GroupNorm G = 1 vs LayerNorm", "dx");
    tg_release(dx_gn);
    tg_release(dy);
    tg_release(x);
}

/* InstanceNorm with the input's statistics is GroupNorm with C groups:
 * the same kernel, so the same bits; and the composed GroupNorm (the tape
 * over primitive ops) agrees to rounding. */
TG_TEST(instance_norm, is_group_norm_with_one_channel_per_group)
{
    tg_tensor *x, *dy;
    make_nchw(&x, &dy, 12);
    int64_t C = 4;
    tg_tensor *w = tg_linspace(0.5, 2.0, C, TG_FLOAT64);
    tg_tensor *b = tg_linspace(-1.0, 1.0, C, TG_FLOAT64);
    tg_set_requires_grad(w, true);
    tg_set_requires_grad(b, true);
    tg_tensor *grads[3][3] = {{NULL}};
    for (int k = 0; k < 3; k++) {
        tg_tensor *y = k == 0 ? tg_instance_norm(x, NULL, NULL, w, b, true,
                                                 0.1, 1e-5)
                       : k == 1 ? tg_group_norm(x, C, w, b, 1e-5)
                                : tg_group_norm_composed(x, C, w, b, 1e-5);
        cr_assert(y, "%s", tg_last_error());
        if (k > 0) {
            tg_tensor *y0 = tg_instance_norm(x, NULL, NULL, w, b, true, 0.1,
                                             1e-5);
            tolerance tol = k == 1 ? (tolerance){0, 0}
                                   : (tolerance){1e-12, 1e-13};
            check_close(y, y0, tol, "InstanceNorm vs GroupNorm G = C", "y");
            tg_release(y0);
        }
        backward(y, dy);
        tg_tensor *leaves[3] = {x, w, b};
        for (int j = 0; j < 3; j++) {
            grads[k][j] = tg_retain(leaves[j]->grad);
            tg_clear_grad(leaves[j]);
        }
    }
    const char *names[3] = {"dx", "dw", "db"};
    for (int j = 0; j < 3; j++) {
        check_close(grads[1][j], grads[0][j], (tolerance){0, 0},
                    "InstanceNorm vs GroupNorm G = C", names[j]);
        check_close(grads[2][j], grads[0][j], (tolerance){1e-12, 1e-13},
                    "InstanceNorm vs composed GroupNorm G = C", names[j]);
    }
    for (int k = 0; k < 3; k++)
        for (int j = 0; j < 3; j++)
            tg_release(grads[k][j]);
    tg_release(b);
    tg_release(w);
    tg_release(dy);
    tg_release(x);
}

/* Sample 0's output, as a new tensor, when the normaliser `which` (0
 * LayerNorm over (C, H, W), 1 GroupNorm G = 2, 2 InstanceNorm, 3 BatchNorm
 * in training) runs on x. */
static tg_tensor *sample0(int which, const tg_tensor *x)
{
    tg_tensor *y = which == 0 ? tg_layer_norm(x, &x->shape[1], 3, NULL, NULL,
                                              1e-5)
                   : which == 1 ? tg_group_norm(x, 2, NULL, NULL, 1e-5)
                   : which == 2 ? tg_instance_norm(x, NULL, NULL, NULL, NULL,
                                                   true, 0.1, 1e-5)
                                : tg_batch_norm(x, NULL, NULL, NULL, NULL,
                                                true, 0.1, 1e-5);
    cr_assert(y, "%s", tg_last_error());
    tg_tensor *s = tg_select(y, 0, 0);
    tg_tensor *c = tg_contiguous(s);
    tg_release(s);
    tg_release(y);
    return c;
}

/* Only BatchNorm makes a sample's output depend on the other samples of
 * the batch: change sample 1 and sample 0's output stays the same, bit
 * for bit, under LayerNorm, GroupNorm and InstanceNorm, and moves under
 * BatchNorm (docs/normalization.md section 8). */
TG_TEST(group_norm, only_batch_norm_depends_on_the_other_samples)
{
    tg_tensor *x, *dy;
    make_nchw(&x, &dy, 13);
    tg_no_grad_begin();
    tg_tensor *x2 = tg_clone(x);
    tg_tensor *s1 = tg_select(x2, 0, 1);
    tg_tensor *scaled = tg_mul_scalar(s1, 3.0);
    tg_tensor *moved = tg_add_scalar(scaled, 0.5);
    cr_assert_eq(tg_copy_(s1, moved), 0, "%s", tg_last_error());
    tg_release(moved);
    tg_release(scaled);
    tg_no_grad_end();
    const char *names[4] = {"LayerNorm", "GroupNorm", "InstanceNorm",
                            "BatchNorm"};
    for (int which = 0; which < 4; which++) {
        tg_tensor *a = sample0(which, x), *b = sample0(which, x2);
        char report[512];
        bool same = tg_test_close(a, b, 0, 0, true, report, sizeof report);
        if (which < 3)
            cr_assert(same, "%s: sample 0 changed with sample 1: %s",
                      names[which], report);
        else
            cr_assert(!same, "BatchNorm: sample 0 should change with "
                             "sample 1");
        tg_release(b);
        tg_release(a);
    }
    tg_release(s1);
    tg_release(x2);
    tg_release(dy);
    tg_release(x);
}

/* ----------------------------------------------------------- edge cases */

/* float32 groups with |mean| >> std keep their precision (two-pass
 * statistics in double): values 1e4 + 1e-2 * u normalise to within 1e-3
 * of the float64 result on the same float32 inputs (SEMANTICS.md §1). */
TG_TEST(group_norm, float32_groups_with_a_large_mean)
{
    tg_generator *gen = tg_generator_new(14);
    const int64_t shape[3] = {2, 4, 16};
    tg_tensor *u = tg_randn_gen(gen, shape, 3, TG_FLOAT64);
    tg_tensor *small = tg_mul_scalar(u, 1e-2);
    tg_tensor *x64 = tg_add_scalar(small, 1e4);
    tg_tensor *x32 = tg_to_dtype(x64, TG_FLOAT32);
    tg_tensor *x32_64 = tg_to_dtype(x32, TG_FLOAT64); // the float32 values
    tg_tensor *y32 = tg_group_norm(x32, 2, NULL, NULL, 1e-5);
    tg_tensor *y64 = tg_group_norm_composed(x32_64, 2, NULL, NULL, 1e-5);
    tg_tensor *y32_64 = tg_to_dtype(y32, TG_FLOAT64);
    check_close(y32_64, y64, (tolerance){0, 1e-3}, "|mean| >> std", "y");
    /* rounded once: within a few float32 ulps of values of size ~2 */
    check_close(y32_64, y64, (tolerance){0, 1e-6}, "|mean| >> std", "y");
    tg_release(y32_64);
    tg_release(y64);
    tg_release(y32);
    tg_release(x32_64);
    tg_release(x32);
    tg_release(x64);
    tg_release(small);
    tg_release(u);
    tg_generator_free(gen);
}

/* A constant group with eps 0 has rstd = inf and gives NaN, as PyTorch's
 * group_norm; PyTorch's instance_norm runs BatchNorm's kernel, which sets
 * invstd to 0 there and gives the bias, and so does tg_instance_norm
 * (checked by hand: F.group_norm(torch.ones(2, 4, 3), 2, eps=0.0) is all
 * NaN, F.instance_norm(torch.ones(2, 4, 3), eps=0.0) all 0). With eps > 0
 * both give the bias. */
TG_TEST(group_norm, constant_group)
{
    const int64_t shape[3] = {2, 4, 3};
    tg_tensor *x = tg_ones(shape, 3, TG_FLOAT64);
    tg_tensor *y0 = tg_group_norm(x, 2, NULL, NULL, 0.0);
    tg_tensor *y1 = tg_group_norm(x, 2, NULL, NULL, 1e-5);
    tg_tensor *yi = tg_instance_norm(x, NULL, NULL, NULL, NULL, true, 0.1,
                                     0.0);
    for (int64_t i = 0; i < x->numel; i++) {
        cr_assert(isnan(at(y0, i)));
        cr_assert_eq(at(y1, i), 0.0);
        cr_assert_eq(at(yi, i), 0.0);
    }
    tg_release(yi);
    tg_release(y1);
    tg_release(y0);
    tg_release(x);
}

/* An empty batch gives an empty output and, in backward, zero gradients
 * for weight and bias; the running statistics stay as they were. */
TG_TEST(group_norm, empty_batch)
{
    const int64_t shape[3] = {0, 4, 3};
    int64_t C = 4;
    tg_tensor *x = tg_zeros(shape, 3, TG_FLOAT64);
    tg_tensor *w = tg_ones(&C, 1, TG_FLOAT64);
    tg_tensor *rm = tg_zeros(&C, 1, TG_FLOAT64), *rv = tg_ones(&C, 1, TG_FLOAT64);
    tg_set_requires_grad(x, true);
    tg_set_requires_grad(w, true);
    tg_tensor *y = tg_group_norm(x, 2, w, NULL, 1e-5);
    cr_assert(y && y->numel == 0, "%s", tg_last_error());
    tg_tensor *dy = tg_zeros(shape, 3, TG_FLOAT64);
    backward(y, dy);
    for (int64_t c = 0; c < C; c++)
        cr_assert_eq(at(w->grad, c), 0.0);
    tg_tensor *yi = tg_instance_norm(x, rm, rv, NULL, NULL, true, 0.1, 1e-5);
    cr_assert(yi && yi->numel == 0, "%s", tg_last_error());
    for (int64_t c = 0; c < C; c++) {
        cr_assert_eq(at(rm, c), 0.0);
        cr_assert_eq(at(rv, c), 1.0);
    }
    tg_release(yi);
    tg_release(dy);
    tg_release(rv);
    tg_release(rm);
    tg_release(w);
    tg_release(x);
}

/* Gradients add into what the leaves already hold. */
TG_TEST(group_norm, gradients_accumulate)
{
    tg_tensor *x, *dy;
    make_nchw(&x, &dy, 15);
    int64_t C = 4;
    tg_tensor *w = tg_linspace(0.5, 2.0, C, TG_FLOAT64);
    tg_set_requires_grad(w, true);
    backward(tg_group_norm(x, 2, w, NULL, 1e-5), dy);
    tg_tensor *dx1 = tg_clone(x->grad), *dw1 = tg_clone(w->grad);
    backward(tg_group_norm(x, 2, w, NULL, 1e-5), dy);
    tg_tensor *dx2 = tg_mul_scalar(dx1, 2.0), *dw2 = tg_mul_scalar(dw1, 2.0);
    check_close(x->grad, dx2, (tolerance){1e-15, 0}, "accumulate", "dx");
    check_close(w->grad, dw2, (tolerance){1e-15, 0}, "accumulate", "dw");
    tg_release(dw2);
    tg_release(dx2);
    tg_release(dw1);
    tg_release(dx1);
    tg_release(w);
    tg_release(dy);
    tg_release(x);
}

/* --------------------------------- each comparison fed a wrong answer */

/* The reference comparison can fail: GroupNorm's dx without its last term
 * (xhat * mean(g * xhat)), and y with the groups taken as one, are both
 * refused with the tolerances used above. */
TG_TEST(group_norm, reference_comparison_catches_wrong_answers)
{
    tg_tensor *x = ref("gn_ncl_x_f64"), *dy = ref("gn_ncl_dy_f64");
    tg_tensor *w = ref("gn_ncl_w_f64"), *b = ref("gn_ncl_b_f64");
    tg_set_requires_grad(x, true);
    tg_tensor *y = tg_group_norm(x, 2, w, b, 1e-5);
    char report[1024];
    tg_tensor *right_y = ref("gn_ncl_g2_y_f64");
    tg_tensor *wrong_y = ref("gn_wrong_ncl_y_f64");
    cr_assert(tg_test_close(y, right_y, F64_RTOL, F64_ATOL, true, report,
                            sizeof report), "%s", report);
    cr_assert(!tg_test_close(y, wrong_y, F64_RTOL, F64_ATOL, true, report,
                             sizeof report),
              "y with the wrong groups passed the comparison");
    backward(y, dy);
    tg_tensor *right_dx = ref("gn_ncl_g2_dx_f64");
    tg_tensor *wrong_dx = ref("gn_wrong_ncl_dx_f64");
    cr_assert(tg_test_close(x->grad, right_dx, F64_RTOL, F64_ATOL, true,
                            report, sizeof report), "%s", report);
    cr_assert(!tg_test_close(x->grad, wrong_dx, F64_RTOL, F64_ATOL, true,
                             report, sizeof report),
              "dx without the xhat term passed the comparison");
    tg_release(wrong_dx);
    tg_release(right_dx);
    tg_release(wrong_y);
    tg_release(right_y);
    tg_release(b);
    tg_release(w);
    tg_release(dy);
    tg_release(x);
}

/* The PyTorch comparison can fail: InstanceNorm's output is not PyTorch's
 * GroupNorm with 2 groups on the same input, nor is the running variance
 * PyTorch's when it is kept biased (var instead of var * S / (S - 1)). */
TG_TEST(group_norm, torch_comparison_catches_wrong_answers)
{
    tolerance t = torch_tol("f64");
    char report[1024];
    tg_tensor *x = ref("gn_ncl_x_f64");
    tg_tensor *y = tg_instance_norm(x, NULL, NULL, NULL, NULL, true, 0.1,
                                    1e-5);
    tg_tensor *torch_gn = torch_ref(TG_FLOAT64, "gn_ncl_g2_f64 y");
    cr_assert(!tg_test_close(y, torch_gn, t.rtol, t.atol, true, report,
                             sizeof report),
              "InstanceNorm passed for PyTorch's GroupNorm with 2 groups");
    /* the biased running variance: batch 0 of set ncl, float64 */
    tg_tensor *xs = ref("in_ncl_x_f64");
    tg_tensor *x0 = tg_select(xs, 0, 0);
    int dims[2] = {0, 2};
    tg_tensor *var = tg_var(x0, dims, 2, 0, false);   // biased, over n, s
    /* running_var = 0.9 * 1 + 0.1 * var, as a wrong update would give
     * (the biased variance of the whole batch, not the mean of the
     * samples' unbiased ones) */
    tg_tensor *scaled = tg_mul_scalar(var, 0.1);
    tg_tensor *wrong_rv = tg_add_scalar(scaled, 0.9);
    tg_tensor *torch_rv =
        torch_ref(TG_FLOAT64, "in_ncl_f64 batch 0 running_var");
    cr_assert(!tg_test_close(wrong_rv, torch_rv, t.rtol, t.atol, true,
                             report, sizeof report),
              "a biased running variance passed the comparison");
    tg_release(torch_rv);
    tg_release(wrong_rv);
    tg_release(scaled);
    tg_release(var);
    tg_release(x0);
    tg_release(xs);
    tg_release(torch_gn);
    tg_release(y);
    tg_release(x);
}

/* GroupNorm on a (2, C, S) x without affine, whose backward FORGETS the
 * variance path. forward (the real op): y = xhat per group;
 * right:  dx = rstd * (g - mean(g) - xhat * mean(g * xhat))
 * here:   dx = rstd * (g - mean(g))
 * written out by hand (so that the library's own backward plays no part)
 * for G = 2 groups. */
static tg_tensor *wrong_gn_forward(tg_ctx *ctx, const tg_tensor *const *in,
                                   int n, const void *args)
{
    (void)n, (void)args;
    tg_ctx_save(ctx, in[0]);
    return tg_group_norm(in[0], 2, NULL, NULL, 1e-5);
}

static int wrong_gn_backward(tg_ctx *ctx, const tg_tensor *g,
                             tg_tensor **gi)
{
    const tg_tensor *x = tg_ctx_saved(ctx, 0);
    int64_t rows = x->shape[0] * 2, len = x->numel / rows;
    double *xv = malloc((size_t)x->numel * sizeof *xv);
    double *gv = malloc((size_t)x->numel * sizeof *gv);
    double *dx = malloc((size_t)x->numel * sizeof *dx);
    cr_assert(xv && gv && dx);
    cr_assert_eq(tg_to_f64_array(x, xv), 0);
    cr_assert_eq(tg_to_f64_array(g, gv), 0);
    for (int64_t r = 0; r < rows; r++) {
        double mean = 0, var = 0, gmean = 0;
        for (int64_t j = 0; j < len; j++)
            mean += xv[r * len + j] / (double)len;
        for (int64_t j = 0; j < len; j++) {
            double d = xv[r * len + j] - mean;
            var += d * d / (double)len;
            gmean += gv[r * len + j] / (double)len;
        }
        double rstd = 1.0 / sqrt(var + 1e-5);
        for (int64_t j = 0; j < len; j++)
            dx[r * len + j] = rstd * (gv[r * len + j] - gmean); // no xhat term
    }
    gi[0] = tg_from_array(dx, x->shape, x->ndim, TG_FLOAT64);
    free(dx);
    free(gv);
    free(xv);
    return gi[0] ? 0 : -1;
}

static const tg_function wrong_gn = {"WrongGroupNormBackward",
                                     wrong_gn_forward, wrong_gn_backward, 0};

static tg_tensor *gn_fn(const tg_tensor *const *x, int n, void *ctx)
{
    (void)n;
    return ctx ? tg_function_apply(&wrong_gn, x, 1, NULL)
               : tg_group_norm(x[0], 2, NULL, NULL, 1e-5);
}

/* gradcheck can fail: the real op passes, the backward without the xhat
 * term does not. */
TG_TEST(group_norm, gradcheck_catches_a_wrong_backward)
{
    tg_generator *gen = tg_generator_new(16);
    const int64_t shape[3] = {2, 4, 3};
    tg_tensor *x = tg_empty(shape, 3, TG_FLOAT64);
    tg_uniform_(x, -1.0, 1.0, gen);
    tg_set_requires_grad(x, true);
    tg_gradcheck_options o = tg_gradcheck_defaults();
    o.quiet = true;
    tg_gradcheck_result r;
    int marker = 1;
    cr_assert_eq(tg_gradcheck(gn_fn, NULL, &x, 1, &o, &r), 1, "%s",
                 r.message);
    cr_assert_eq(tg_gradcheck(gn_fn, &marker, &x, 1, &o, &r), 0,
                 "the wrong backward passed gradcheck");
    tg_release(x);
    tg_generator_free(gen);
}
