/*
 * tests/autograd/test_fast_batch_norm.c - the fast BatchNorm kernels
 * against the reference kernels (autograd/ops/batch_norm.c): the same
 * inputs run once with TG_KERNELS_FAST and once with TG_KERNELS_REFERENCE,
 * and y, dx, dweight, dbias, the saved mean and invstd and the running
 * statistics are compared. Shapes cover both layouts of the fast kernels
 * (S == 1: blocks of rows; S > 1: whole channels), sizes that are not a
 * multiple of the vector width or of the 16 partial sums, one and several
 * row blocks, every option, float32 and float64, non-contiguous inputs and
 * empty batches. Also: 1 and 2 threads give the same bits, and the
 * comparison rejects a wrong answer.
 *
 * What it is not: the gradcheck (test_grad_ops, run on both kernels) and
 * the NumPy references (test_norm_reference, idem).
 *
 * Tolerance, as max |fast - reference| / scale per tensor, where scale is
 * max |reference|, except for dx: there it is the size of the terms dx is
 * a difference of, max |dy| * max |w| * max invstd (with two values per
 * channel they cancel almost completely). NaN must match NaN. Both kernels
 * sum in double and compute y and dx in double, rounding once to the
 * dtype; they differ only in the order of the additions and in dx's
 * expanded closed form, i.e. by float64 roundings (~1e-16 relative to the
 * largest term).
 *  - float32, F32_TOL 1e-6: the one rounding to float32 (6e-8 relative)
 *    hides those, so the two differ by at most an ulp of the largest value
 *    (measured: 1.3e-8, most outputs bit for bit).
 *  - float64, F64_TOL 1e-12: the roundings show; sums of up to ~3e4 terms
 *    in different orders (measured: 4e-15).
 *  - float64 with |mean| >> std (mean 1e4, std 1e-2), F64_BIG_TOL 1e-7:
 *    the mean carries an error of ~1e-16 * 1e4 * sqrt(n) from its
 *    summation order, which x - mean turns into an error of ~1e-16 *
 *    (|mean| / std) * sqrt(n) ~ 2e-8 of xhat at n = 32768; that is the
 *    reference's own distance from the exact result too (measured: 6e-9
 *    on dweight, 1.5e-9 on y).
 */
#include "../common.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#define F32_TOL 1e-6
#define F64_TOL 1e-12
#define F64_BIG_TOL 1e-7

/* ------------------------------------------------------------ comparison */

/* True when max |a - r| <= tol * scale, scale being the size of the
 * terms the value is made of (0: max |r|), with NaN matching NaN and the
 * same shape and dtype; otherwise says where and by how much in report.
 * name names the tensor in the report. */
static bool bn_close(const tg_tensor *a, const tg_tensor *r, double tol,
                     double scale, const char *name, char *report,
                     size_t size)
{
    if (!a || !r) {
        snprintf(report, size, "%s: %s is NULL", name, a ? "reference" : "fast");
        return false;
    }
    bool same = a->ndim == r->ndim && a->dtype == r->dtype;
    for (int i = 0; same && i < a->ndim; i++)
        same = a->shape[i] == r->shape[i];
    if (!same) {
        char sa[TG_SHAPE_STR_MAX], sr[TG_SHAPE_STR_MAX];
        snprintf(report, size, "%s: fast is %s %s, reference %s %s", name,
                 tg_dtype_name(a->dtype), tg_shape_str(a, sa),
                 tg_dtype_name(r->dtype), tg_shape_str(r, sr));
        return false;
    }
    int64_t n = r->numel;
    double *va = malloc(((size_t)n + 1) * sizeof *va);
    double *vr = malloc(((size_t)n + 1) * sizeof *vr);
    cr_assert(va && vr);
    cr_assert_eq(tg_to_f64_array(a, va), 0);
    cr_assert_eq(tg_to_f64_array(r, vr), 0);
    double worst = 0.0;
    int64_t at = -1;
    bool own_scale = scale <= 0.0;
    for (int64_t i = 0; own_scale && i < n; i++)
        if (isfinite(vr[i]) && fabs(vr[i]) > scale)
            scale = fabs(vr[i]);
    bool ok = true;
    for (int64_t i = 0; i < n && ok; i++) {
        if (isnan(vr[i]) || isnan(va[i]) || isinf(vr[i]) || isinf(va[i])) {
            ok = (isnan(vr[i]) && isnan(va[i])) || va[i] == vr[i];
            at = i;
            continue;
        }
        double d = fabs(va[i] - vr[i]);
        if (d > worst) {
            worst = d;
            at = i;
        }
    }
    ok = ok && worst <= tol * scale;
    if (!ok)
        snprintf(report, size,
                 "%s: element %lld is %.17g, reference %.17g; max |diff| "
                 "%.3g > %.3g * scale %.3g",
                 name, (long long)at, at >= 0 ? va[at] : NAN,
                 at >= 0 ? vr[at] : NAN, worst, tol, scale);
    free(va);
    free(vr);
    return ok;
}

/* True when a and r hold the same values bit for bit (same dtype and
 * element count; float32 to double is exact, so comparing the doubles'
 * bytes compares the floats'). */
static bool bn_identical(const tg_tensor *a, const tg_tensor *r)
{
    if (!a || !r || a->numel != r->numel || a->dtype != r->dtype)
        return a == r;
    size_t bytes = ((size_t)a->numel + 1) * sizeof(double);
    double *va = calloc(1, bytes), *vr = calloc(1, bytes);
    cr_assert(va && vr);
    cr_assert_eq(tg_to_f64_array(a, va), 0);
    cr_assert_eq(tg_to_f64_array(r, vr), 0);
    bool same = memcmp(va, vr, bytes) == 0;
    free(va);
    free(vr);
    return same;
}

/* ---------------------------------------------------------------- a case */

typedef struct bn_case {
    int ndim;
    int64_t shape[4];
    tg_dtype dtype;
    bool affine;       // weight and bias
    bool running;      // running statistics
    bool eval;         // training false (needs running)
    int64_t correction;
    double momentum;
    bool big_mean;     // every other channel: mean 1e4, std 1e-2
    int layout;        // 0 contiguous, 1 permuted in memory, 2 strided
    bool strided_stats; // running statistics as a strided view
} bn_case;

/* What one run produces. */
enum { Y, DX, DW, DB, MEAN, INVSTD, RMEAN, RVAR, NOUT };
static const char *const out_names[NOUT] = {
    "y", "dx", "dweight", "dbias", "mean", "invstd", "running_mean",
    "running_var"};

typedef struct bn_inputs {
    tg_tensor *x, *dy, *w, *b, *rm, *rv;
} bn_inputs;

/* A new tensor of shape with the values of f(i, c) + noise: x's values,
 * channel c = dim 1. */
static tg_tensor *make_x(const bn_case *c, unsigned seed)
{
    tg_manual_seed(seed);
    tg_tensor *z = tg_randn(c->shape, c->ndim, TG_FLOAT64);
    cr_assert(z);
    int64_t n = z->numel, C = c->shape[1], S = 1;
    for (int i = 2; i < c->ndim; i++)
        S *= c->shape[i];
    double *v = malloc(((size_t)n + 1) * sizeof *v);
    cr_assert(v);
    cr_assert_eq(tg_to_f64_array(z, v), 0);
    for (int64_t i = 0; i < n; i++) {
        int64_t ch = (i / S) % C;
        if (c->big_mean && ch % 2 == 0)
            v[i] = 1e4 + 1e-2 * v[i];
        else
            v[i] = 0.5 * (double)(ch % 5) - 1.0 + (1.0 + 0.25 * (double)(ch % 3)) * v[i];
    }
    tg_tensor *x64 = tg_from_array(v, c->shape, c->ndim, TG_FLOAT64);
    tg_tensor *x = tg_to_dtype(x64, c->dtype);
    tg_release(x64);
    tg_release(z);
    free(v);
    cr_assert(x);
    if (c->layout) {
        tg_tensor *nc = tg_test_non_contiguous(x, c->layout == 2);
        tg_release(x);
        x = nc;
    }
    return x;
}

static tg_tensor *randn_of(const int64_t *shape, int ndim, tg_dtype dt,
                           double scale, double shift)
{
    tg_tensor *z = tg_randn(shape, ndim, dt);
    tg_tensor *s = tg_mul_scalar(z, scale);
    tg_tensor *t = tg_add_scalar(s, shift);
    tg_release(s);
    tg_release(z);
    cr_assert(t);
    return t;
}

static bn_inputs make_inputs(const bn_case *c)
{
    bn_inputs in = {0};
    const int64_t C = c->shape[1];
    in.x = make_x(c, 11);
    cr_assert_eq(tg_set_requires_grad(in.x, true), 0);
    tg_manual_seed(12);
    in.dy = randn_of(c->shape, c->ndim, c->dtype, 1.0, 0.0);
    if (c->affine) {
        in.w = randn_of(&C, 1, c->dtype, 0.5, 1.0);
        in.b = randn_of(&C, 1, c->dtype, 1.0, 0.0);
        cr_assert_eq(tg_set_requires_grad(in.w, true), 0);
        cr_assert_eq(tg_set_requires_grad(in.b, true), 0);
    }
    if (c->running) {
        in.rm = randn_of(&C, 1, c->dtype, 0.1, 0.0);
        tg_tensor *z = randn_of(&C, 1, c->dtype, 1.0, 0.0);
        tg_tensor *z2 = tg_mul(z, z);
        in.rv = tg_add_scalar(z2, 0.5);
        tg_release(z2);
        tg_release(z);
    }
    return in;
}

static void free_inputs(bn_inputs *in)
{
    tg_release(in->x);
    tg_release(in->dy);
    tg_release(in->w);
    tg_release(in->b);
    tg_release(in->rm);
    tg_release(in->rv);
}

/* A fresh copy of a running statistic, laid out as the case says. */
static tg_tensor *stat_copy(const bn_case *c, const tg_tensor *t)
{
    if (!t)
        return NULL;
    return c->strided_stats ? tg_test_non_contiguous(t, true) : tg_clone(t);
}

/* Runs the case on `kernels` and fills out[] (new references; NULL where
 * there is nothing: no weight, no running statistics). */
static void run(const bn_case *c, const bn_inputs *in, tg_kernels kernels,
                tg_tensor **out)
{
    tg_kernels before = tg_get_kernels();
    cr_assert_eq(tg_set_kernels(kernels), 0);
    tg_tensor *rm = stat_copy(c, in->rm), *rv = stat_copy(c, in->rv);
    tg_batch_norm_options o = tg_batch_norm_defaults();
    o.eval = c->eval;
    o.correction = c->correction;
    o.momentum = c->momentum;
    tg_tensor *mean = NULL, *invstd = NULL;
    tg_tensor *y = tg_batch_norm_ex(in->x, rm, rv, in->w, in->b, &o, &mean,
                                    &invstd);
    cr_assert(y, "%s", tg_last_error());
    tg_backward_options bo = {.grad = in->dy};
    cr_assert_eq(tg_backward_ex(y, &bo), 0, "%s", tg_last_error());
    out[Y] = tg_detach(y);
    tg_release(y);
    out[DX] = tg_retain(in->x->grad);
    out[DW] = in->w ? tg_retain(in->w->grad) : NULL;
    out[DB] = in->b ? tg_retain(in->b->grad) : NULL;
    out[MEAN] = mean;
    out[INVSTD] = invstd;
    out[RMEAN] = rm;
    out[RVAR] = rv;
    tg_clear_grad(in->x);
    if (in->w) {
        tg_clear_grad(in->w);
        tg_clear_grad(in->b);
    }
    cr_assert_eq(tg_set_kernels(before), 0);
}

static void release_outputs(tg_tensor **out)
{
    for (int k = 0; k < NOUT; k++)
        tg_release(out[k]);
}

static double tol_for(const bn_case *c)
{
    if (c->dtype == TG_FLOAT32)
        return F32_TOL;
    return c->big_mean ? F64_BIG_TOL : F64_TOL;
}

static void describe(const bn_case *c, char *buf, size_t size)
{
    char s[TG_SHAPE_STR_MAX];
    int len = snprintf(s, sizeof s, "(");
    for (int i = 0; i < c->ndim; i++)
        len += snprintf(s + len, sizeof s - (size_t)len, "%s%lld",
                        i ? ", " : "", (long long)c->shape[i]);
    snprintf(s + len, sizeof s - (size_t)len, ")");
    if (snprintf(buf, size,
             "%s %s%s%s%s correction %lld momentum %g%s%s%s",
             tg_dtype_name(c->dtype), s,
             c->affine ? " affine" : "", c->running ? " running" : "",
             c->eval ? " eval" : " train", (long long)c->correction,
             c->momentum, c->big_mean ? " mean 1e4 std 1e-2" : "",
             c->layout == 1 ? " permuted" : c->layout == 2 ? " strided" : "",
             c->strided_stats ? " strided running stats" : "") >= (int)size)
        buf[size - 1] = '\0';
}

/* The largest |value| of t, or 1 for NULL (no weight). */
static double max_abs(const tg_tensor *t)
{
    if (!t)
        return 1.0;
    double *v = malloc(((size_t)t->numel + 1) * sizeof *v), m = 0.0;
    cr_assert(v);
    cr_assert_eq(tg_to_f64_array(t, v), 0);
    for (int64_t i = 0; i < t->numel; i++)
        if (fabs(v[i]) > m)
            m = fabs(v[i]);
    free(v);
    return m;
}

/* The scale each output is compared at: dx = w invstd (dy - mean(dy) -
 * xhat mean(dy xhat)) is a difference of terms of size up to |w| invstd
 * |dy|, which can cancel almost completely (with two values per channel
 * xhat is +-1 and dx nearly 0); the other outputs are compared with their
 * own largest value. */
static double scale_for(int k, const bn_inputs *in, tg_tensor *const *ref)
{
    if (k != DX || in->x->numel == 0)
        return 0.0;
    return max_abs(in->dy) * max_abs(in->w) * max_abs(ref[INVSTD]);
}

/* Fast against reference on one case; both runs start from the same
 * running statistics. */
static void check_case(const bn_case *c)
{
    char what[256], report[768];
    describe(c, what, sizeof what);
    bn_inputs in = make_inputs(c);
    tg_tensor *fast[NOUT], *ref[NOUT];
    run(c, &in, TG_KERNELS_REFERENCE, ref);
    run(c, &in, TG_KERNELS_FAST, fast);
    for (int k = 0; k < NOUT; k++) {
        if (!ref[k] && !fast[k])
            continue;
        cr_assert(bn_close(fast[k], ref[k], tol_for(c),
                           scale_for(k, &in, ref), out_names[k], report,
                           sizeof report),
                  "%s: %s", what, report);
    }
    release_outputs(fast);
    release_outputs(ref);
    free_inputs(&in);
}

/* ----------------------------------------------------------------- tests */

static const struct {
    int ndim;
    int64_t shape[4];
} shapes[] = {
    {2, {2, 1}},       {2, {2, 3}},        {2, {5, 7}},
    {2, {4096, 13}},   {2, {3, 768}},      {3, {2, 3, 5}},
    {4, {4, 64, 3, 3}}, {3, {3, 4, 37}},   {2, {300, 600}},
    {2, {601, 500}},   // over 1 MiB, under TG_BN_STREAM_BYTES: the cache loops
    {2, {1401, 1000}}, // over TG_BN_STREAM_BYTES in float32: the hints
};

/* Every shape with each option varied in turn, float32 and float64. */
TG_TEST(fast_batch_norm, matches_reference_on_every_shape_and_option)
{
    const tg_dtype dtypes[] = {TG_FLOAT32, TG_FLOAT64};
    for (size_t s = 0; s < sizeof shapes / sizeof *shapes; s++)
        for (int d = 0; d < 2; d++) {
            bn_case base = {.ndim = shapes[s].ndim, .dtype = dtypes[d],
                            .affine = true, .running = true,
                            .momentum = 0.1};
            memcpy(base.shape, shapes[s].shape, sizeof base.shape);
            bn_case variants[8];
            int nv = 0;
            variants[nv++] = base;
            bn_case v = base;
            v.affine = false;
            v.running = false;
            variants[nv++] = v;
            v = base;
            v.correction = 1;
            v.momentum = 0.7;
            variants[nv++] = v;
            v = base;
            v.eval = true;
            variants[nv++] = v;
            v = base;
            v.eval = true;
            v.affine = false;
            variants[nv++] = v;
            v = base;
            v.big_mean = true;
            variants[nv++] = v;
            v = base;
            v.momentum = 1.0;
            v.strided_stats = base.shape[1] > 1; // (1,) is contiguous
            variants[nv++] = v;
            for (int k = 0; k < nv; k++)
                check_case(&variants[k]);
        }
}

/* Non-contiguous x (transposed in memory, and every other element) takes
 * a contiguous copy first: same results. */
TG_TEST(fast_batch_norm, matches_reference_on_non_contiguous_input)
{
    for (size_t s = 1; s < sizeof shapes / sizeof *shapes; s++)
        for (int layout = 1; layout <= 2; layout++)
            for (int d = 0; d < 2; d++) {
                bn_case c = {.ndim = shapes[s].ndim,
                             .dtype = d ? TG_FLOAT64 : TG_FLOAT32,
                             .affine = true, .running = true,
                             .momentum = 0.1, .layout = layout,
                             .eval = s % 2 == 0};
                memcpy(c.shape, shapes[s].shape, sizeof c.shape);
                check_case(&c);
            }
}

/* BatchNorm2d's benchmark shape, once, in training. */
TG_TEST(fast_batch_norm, matches_reference_on_a_batch_of_images)
{
    bn_case c = {.ndim = 4, .shape = {32, 64, 32, 32}, .dtype = TG_FLOAT32,
                 .affine = true, .running = true, .momentum = 0.1};
    check_case(&c);
    c.big_mean = true;
    c.dtype = TG_FLOAT64;
    check_case(&c);
}

/* Batches with no values: training on (0, 3) and (2, 3, 0) gives empty
 * outputs and NaN statistics and leaves the running statistics alone,
 * as the reference; eval on (0, 3) too. */
TG_TEST(fast_batch_norm, matches_reference_on_empty_batches)
{
    bn_case cases[] = {
        {.ndim = 2, .shape = {0, 3}, .dtype = TG_FLOAT32, .affine = true,
         .running = true, .momentum = 0.1},
        {.ndim = 3, .shape = {2, 3, 0}, .dtype = TG_FLOAT64, .affine = true,
         .running = true, .momentum = 0.1},
        {.ndim = 2, .shape = {0, 3}, .dtype = TG_FLOAT32, .affine = true,
         .running = true, .momentum = 0.1, .eval = true},
    };
    for (size_t k = 0; k < sizeof cases / sizeof *cases; k++)
        check_case(&cases[k]);
}

/* With one block of rows (S == 1, N * C <= 65536) the fast statistics are
 * the reference's sums in the reference's order, so y, mean, invstd and
 * the running statistics (updated without tensor ops on the fast path)
 * match bit for bit; dx is computed in another form and only within the
 * tolerance. */
TG_TEST(fast_batch_norm, one_block_matches_the_reference_bit_for_bit)
{
    bn_case cases[] = {
        {.ndim = 2, .shape = {5, 7}, .dtype = TG_FLOAT32, .affine = true,
         .running = true, .momentum = 0.3},
        {.ndim = 2, .shape = {64, 100}, .dtype = TG_FLOAT64, .affine = true,
         .running = true, .momentum = 0.1, .correction = 1},
        {.ndim = 2, .shape = {33, 17}, .dtype = TG_FLOAT32, .affine = false,
         .running = true, .momentum = 1.0, .big_mean = true},
    };
    for (size_t k = 0; k < sizeof cases / sizeof *cases; k++) {
        char what[256];
        describe(&cases[k], what, sizeof what);
        bn_inputs in = make_inputs(&cases[k]);
        tg_tensor *fast[NOUT], *ref[NOUT];
        run(&cases[k], &in, TG_KERNELS_REFERENCE, ref);
        run(&cases[k], &in, TG_KERNELS_FAST, fast);
        const int exact[] = {Y, MEAN, INVSTD, RMEAN, RVAR};
        for (size_t e = 0; e < sizeof exact / sizeof *exact; e++)
            cr_assert(bn_identical(fast[exact[e]], ref[exact[e]]),
                      "%s: %s differs", what, out_names[exact[e]]);
        release_outputs(fast);
        release_outputs(ref);
        free_inputs(&in);
    }
}

/* Shapes big enough to run on several threads (several blocks of rows;
 * whole channels) give the same bits on 1 and on 2 threads. */
TG_TEST(fast_batch_norm, results_do_not_depend_on_the_thread_count)
{
    bn_case cases[] = {
        {.ndim = 2, .shape = {700, 300}, .dtype = TG_FLOAT32, .affine = true,
         .running = true, .momentum = 0.1},
        {.ndim = 4, .shape = {8, 64, 16, 17}, .dtype = TG_FLOAT32,
         .affine = true, .running = true, .momentum = 0.1},
        {.ndim = 2, .shape = {700, 300}, .dtype = TG_FLOAT64, .affine = true,
         .running = true, .momentum = 0.1, .eval = true},
        {.ndim = 3, .shape = {8, 64, 300}, .dtype = TG_FLOAT64,
         .affine = true, .running = true, .momentum = 0.1,
         .correction = 1},
    };
    int threads_before = tg_get_num_threads();
    for (size_t k = 0; k < sizeof cases / sizeof *cases; k++) {
        char what[256];
        describe(&cases[k], what, sizeof what);
        bn_inputs in = make_inputs(&cases[k]);
        tg_tensor *one[NOUT], *two[NOUT];
        cr_assert_eq(tg_set_num_threads(1), 0);
        run(&cases[k], &in, TG_KERNELS_FAST, one);
        cr_assert_eq(tg_set_num_threads(2), 0);
        run(&cases[k], &in, TG_KERNELS_FAST, two);
        for (int o = 0; o < NOUT; o++)
            cr_assert(bn_identical(one[o], two[o]),
                      "%s: %s differs between 1 and 2 threads", what,
                      out_names[o]);
        release_outputs(one);
        release_outputs(two);
        free_inputs(&in);
    }
    cr_assert_eq(tg_set_num_threads(threads_before), 0);
}

/* The comparison can fail: a value off by 10 float32 ulps of the largest,
 * a NaN where a number is expected, another shape, and bytes that differ
 * in the last bit. */
TG_TEST(fast_batch_norm, the_comparison_rejects_a_wrong_answer)
{
    char report[512];
    tg_tensor *r = tg_from_array((float[]){1.0f, -2.0f, 0.5f, 4.0f},
                                 TG_SHAPE(2, 2), TG_FLOAT32);
    tg_tensor *same = tg_clone(r);
    cr_assert(bn_close(same, r, F32_TOL, 0.0, "t", report, sizeof report), "%s",
              report);
    tg_tensor *off = tg_from_array(
        (float[]){1.0f, -2.0f, 0.5f + 10 * 4.0f * 1.2e-7f, 4.0f},
        TG_SHAPE(2, 2), TG_FLOAT32);
    cr_assert_not(bn_close(off, r, F32_TOL, 0.0, "t", report, sizeof report));
    cr_assert(strstr(report, "element 2") != NULL, "%s", report);
    cr_assert_not(bn_identical(off, r));
    tg_tensor *nan = tg_from_array((float[]){1.0f, NAN, 0.5f, 4.0f},
                                   TG_SHAPE(2, 2), TG_FLOAT32);
    cr_assert_not(bn_close(nan, r, F32_TOL, 0.0, "t", report, sizeof report));
    tg_tensor *flat = tg_reshape(r, TG_SHAPE(4));
    cr_assert_not(bn_close(flat, r, F32_TOL, 0.0, "t", report, sizeof report));
    cr_assert_not(bn_close(NULL, r, F32_TOL, 0.0, "t", report, sizeof report));
    tg_tensor *ulp = tg_from_array((float[]){1.0f, -2.0f, 0.5f,
                                             nextafterf(4.0f, 5.0f)},
                                   TG_SHAPE(2, 2), TG_FLOAT32);
    cr_assert_not(bn_identical(ulp, r));
    cr_assert(bn_identical(same, r));
    tg_release(ulp);
    tg_release(flat);
    tg_release(nan);
    tg_release(off);
    tg_release(same);
    tg_release(r);
}

/* The running statistics are moved by one function whatever their layout:
 * contiguous buffers and every-second-element views of larger ones end up
 * with the same bits, on both kernels and in both dtypes, after three
 * training batches; and a batch of all 3s moves a float32 running_mean of
 * 1 to exactly (float)((double)(1 * 0.9f) + 3 * 0.1), the rounding the
 * update documents: 0.9f is 0.899999976, plus 0.3 in double is
 * 1.19999998, which rounds to the float32 1.19999993, one below 1.2f
 * (checked in NumPy). */
TG_TEST(fast_batch_norm, running_update_is_one_function_for_every_layout)
{
    const tg_kernels kernels[2] = {TG_KERNELS_PORTABLE, TG_KERNELS_REFERENCE};
    const tg_dtype dtypes[2] = {TG_FLOAT32, TG_FLOAT64};
    tg_kernels before = tg_get_kernels();
    for (int k = 0; k < 2; k++)
        for (int t = 0; t < 2; t++) {
            tg_set_kernels(kernels[k]);
            tg_manual_seed(5);
            tg_tensor *rm[2], *rv[2], *big[2];
            rm[0] = tg_zeros(TG_SHAPE(3), dtypes[t]);
            rv[0] = tg_ones(TG_SHAPE(3), dtypes[t]);
            big[0] = tg_zeros(TG_SHAPE(6), dtypes[t]);
            big[1] = tg_ones(TG_SHAPE(6), dtypes[t]);
            rm[1] = tg_slice(big[0], 0, 0, 6, 2);
            rv[1] = tg_slice(big[1], 0, 0, 6, 2);
            for (int step = 0; step < 3; step++) {
                tg_tensor *x = tg_randn(TG_SHAPE(8, 3), dtypes[t]);
                for (int l = 0; l < 2; l++) {
                    tg_tensor *y =
                        tg_batch_norm(x, rm[l], rv[l], NULL, NULL, true, 0.1,
                                      1e-5);
                    cr_assert_not_null(y, "%s", tg_last_error());
                    tg_release(y);
                }
                tg_release(x);
            }
            cr_assert(bn_identical(rm[1], rm[0]), "running_mean, %s, %s",
                      k ? "reference" : "fast", tg_dtype_name(dtypes[t]));
            cr_assert(bn_identical(rv[1], rv[0]), "running_var, %s, %s",
                      k ? "reference" : "fast", tg_dtype_name(dtypes[t]));
            for (int l = 0; l < 2; l++) {
                tg_release(rm[l]);
                tg_release(rv[l]);
                tg_release(big[l]);
            }
        }
    tg_set_kernels(TG_KERNELS_PORTABLE);
    tg_tensor *x = tg_full(TG_SHAPE(4, 1), 3.0, TG_FLOAT32);
    tg_tensor *m = tg_ones(TG_SHAPE(1), TG_FLOAT32);
    tg_tensor *v = tg_ones(TG_SHAPE(1), TG_FLOAT32);
    tg_tensor *y = tg_batch_norm(x, m, v, NULL, NULL, true, 0.1, 1e-5);
    cr_assert_not_null(y);
    double got;
    tg_get(m, (int64_t[]){0}, 1, &got);
    cr_assert_eq((float)got, (float)((double)(1.0f * 0.9f) + 3.0 * 0.1),
                 "running_mean %.9g", got);
    cr_assert_eq((float)got, nextafterf(1.2f, 0.0f));
    tg_release(y);
    tg_release(v);
    tg_release(m);
    tg_release(x);
    tg_set_kernels(before);
}
