/*
 * tests/autograd/test_norm_grad.c - the gradients of LayerNorm and
 * BatchNorm beyond the gradcheck table (grad_cases_norm.c): gradchecks on
 * a weighted loss, the sum(y) trap shown with a deliberately wrong
 * backward, the fused ops against their composed forms, the tape's
 * bookkeeping (grad_fn names, accumulation, which inputs get a gradient,
 * saved tensors changed in place, no_grad), every argument error, and
 * memory.
 *
 * Not here: values against NumPy (test_norm_reference.c) and the modules
 * (tests/nn/).
 *
 * Tolerances used below, and why:
 *  - gradcheck: float64 with PyTorch's defaults (eps 1e-6, atol 1e-5,
 *    rtol 1e-3). Central differences err by O(eps^2) ~ 1e-12 plus
 *    rounding ~1e-16 / eps ~ 1e-10, far below atol.
 *  - fused vs composed, float64 (F64_RTOL 1e-10, F64_ATOL 1e-12): the two
 *    evaluate the same maths with different roundings (the fused op in
 *    double with its closed-form backward, the composed one op by op
 *    through the tape), each ~1e-16 relative on values of size ~1, over
 *    a few dozen operations; cancellation in x - mean and in
 *    n dy - sum(dy) - ... turns that into an absolute error of ~1e-15.
 *    (measured: at most 2e-15). 1e-12 leaves a margin of a thousand and
 *    is still ten orders of magnitude below the O(0.1) gap between
 *    corrections 0 and 1, which the comparison must see.
 *  - fused vs composed, float32 (F32_RTOL 1e-4, F32_ATOL 1e-5): the fused
 *    op computes in double and rounds once (6e-8 relative); the composed
 *    one rounds to float32 after every op (about ten in a chain, each
 *    6e-8 relative of an O(1) value, times rstd of up to ~3), and the
 *    backward sums up to 24 such terms per row or channel: ~1e-6
 *    absolute at worst (measured: 7e-7), 1e-5 is ten times that.
 *  - running statistics, float64: 1e-12 relative, as above.
 *  - accumulation and "which inputs get a gradient": exact (0, 0), since
 *    the same arithmetic runs on the same numbers and g + g = 2 g.
 */
#include "../common.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#define F64_RTOL 1e-10
#define F64_ATOL 1e-12
#define F32_RTOL 1e-4
#define F32_ATOL 1e-5

/* ---------------------------------------------------------------- helpers */

typedef enum layout { CONTIGUOUS, TRANSPOSED, STRIDED } layout;

/* A standard-normal tensor of the given shape, laid out contiguously, as
 * the transpose of (..., n, m) (ndim >= 2; a 1-d tensor is strided
 * instead), or as every second element of the last dim. A leaf that
 * requires grad when grad. New reference. */
static tg_tensor *randn_as(tg_generator *gen, const int64_t *shape, int ndim,
                           tg_dtype dtype, layout lay, bool grad)
{
    int64_t s[TG_MAX_DIMS];
    for (int d = 0; d < ndim; d++)
        s[d] = shape[d];
    if (lay == TRANSPOSED && ndim < 2)
        lay = STRIDED;
    if (lay == TRANSPOSED) {
        s[ndim - 1] = shape[ndim - 2];
        s[ndim - 2] = shape[ndim - 1];
    } else if (lay == STRIDED) {
        s[ndim - 1] = 2 * shape[ndim - 1];
    }
    tg_tensor *base = tg_randn_gen(gen, s, ndim, dtype);
    cr_assert(base, "%s", tg_last_error());
    tg_tensor *x = lay == TRANSPOSED ? tg_transpose(base, -1, -2)
                   : lay == STRIDED  ? tg_slice(base, -1, 0, s[ndim - 1], 2)
                                     : tg_retain(base);
    tg_release(base);
    cr_assert(x, "%s", tg_last_error());
    if (lay != CONTIGUOUS)
        cr_assert_not(tg_is_contiguous(x));
    if (grad)
        cr_assert_eq(tg_set_requires_grad(x, true), 0, "%s", tg_last_error());
    return x;
}

/* A float64 tensor from values, no gradient. New reference. */
static tg_tensor *vec64(const double *v, int64_t n)
{
    tg_tensor *t = tg_from_array(v, &n, 1, TG_FLOAT64);
    cr_assert(t);
    return t;
}

/* x's gradient, handed over: a new reference, x left without one. */
static tg_tensor *take_grad(tg_tensor *x)
{
    cr_assert(x->grad, "no gradient reached the input");
    tg_tensor *g = tg_retain(x->grad);
    tg_clear_grad(x);
    return g;
}

/* The largest |element| of x. */
static double max_abs(const tg_tensor *x)
{
    double *v = malloc((size_t)x->numel * sizeof *v + 1);
    cr_assert(v);
    cr_assert_eq(tg_to_f64_array(x, v), 0);
    double m = 0;
    for (int64_t i = 0; i < x->numel; i++)
        m = fmax(m, fabs(v[i]));
    free(v);
    return m;
}

/* Which normaliser to run, and how. */
typedef struct norm_call {
    const char *name;
    bool batch;    // BatchNorm, else LayerNorm
    bool composed; // the _composed form, else the fused op
    int ln_dims;   // LayerNorm: how many trailing dims make a row
    bool training; // BatchNorm
    int64_t correction;
    /* BatchNorm: running statistics (borrowed, may be NULL). */
    tg_tensor *running_mean, *running_var;
} norm_call;

/* y = the normaliser of c on x with weight w and bias b (each may be
 * NULL). New reference. */
static tg_tensor *norm_apply(const norm_call *c, const tg_tensor *x,
                             const tg_tensor *w, const tg_tensor *b)
{
    if (!c->batch) {
        int64_t ns[TG_MAX_DIMS];
        for (int i = 0; i < c->ln_dims; i++)
            ns[i] = x->shape[x->ndim - c->ln_dims + i];
        return c->composed
                   ? tg_layer_norm_composed(x, ns, c->ln_dims, w, b, 1e-5)
                   : tg_layer_norm(x, ns, c->ln_dims, w, b, 1e-5);
    }
    tg_batch_norm_options o = tg_batch_norm_defaults();
    o.eval = !c->training;
    o.correction = c->correction;
    return c->composed ? tg_batch_norm_composed(x, c->running_mean,
                                                c->running_var, w, b, &o)
                       : tg_batch_norm_ex(x, c->running_mean, c->running_var,
                                          w, b, &o, NULL, NULL);
}

/* The shape of weight and bias for c on x: normalized_shape or (C,). */
static int param_shape(const norm_call *c, const tg_tensor *x,
                       int64_t *shape)
{
    if (c->batch) {
        shape[0] = x->shape[1];
        return 1;
    }
    for (int i = 0; i < c->ln_dims; i++)
        shape[i] = x->shape[x->ndim - c->ln_dims + i];
    return c->ln_dims;
}

/* Running statistics for channel count C: mean 0.1 c - 0.1, var 0.6 +
 * 0.3 c (positive). New references. */
static void running_stats(int64_t C, tg_tensor **rm, tg_tensor **rv)
{
    double m[8], v[8];
    cr_assert(C <= 8);
    for (int64_t c = 0; c < C; c++) {
        m[c] = 0.1 * (double)c - 0.1;
        v[c] = 0.6 + 0.3 * (double)c;
    }
    *rm = vec64(m, C);
    *rv = vec64(v, C);
}

/* -------------------------------------------- gradcheck on a weighted loss */

/* loss = sum(norm(x, w, b) * r), r a fixed random tensor of y's shape. */
typedef struct weighted {
    const norm_call *call;
    const tg_tensor *r; // NULL: loss = sum(y)
} weighted;

static tg_tensor *weighted_loss(const tg_tensor *const *in, int n, void *user)
{
    const weighted *wl = user;
    tg_tensor *y = norm_apply(wl->call, in[0], n > 1 ? in[1] : NULL,
                              n > 2 ? in[2] : NULL);
    tg_tensor *yr = wl->r ? tg_mul(y, wl->r) : tg_retain(y);
    tg_tensor *loss = tg_sum(yr, NULL, 0, false);
    tg_release(yr);
    tg_release(y);
    return loss;
}

/*
 * Why not loss = sum(y): a normaliser makes each row (LayerNorm) or each
 * channel (BatchNorm in training) of xhat = (x - mean) * rstd sum to zero
 * whatever x is, so
 *   BatchNorm:                sum(y) = sum_c (w_c * 0 + n * b_c)
 *   LayerNorm without weight: sum(y) = M * sum(b)
 * do not depend on x at all: d sum(y) / dx = 0, and finite differences
 * agree with ANY backward whose x-gradient also sums to nothing under a
 * constant dy. (LayerNorm with a non-uniform weight escapes: sum_j w_j
 * xhat_j does depend on x.) A fixed random weighting r breaks the
 * symmetry: sum(y * r) has a gradient that uses every term of the
 * backward.
 */
TG_TEST(norm_grad, gradcheck_on_a_weighted_loss)
{
    tg_tensor *rm, *rv;
    running_stats(3, &rm, &rv);
    const norm_call calls[] = {
        {"layer_norm over (4,)", false, false, 1, 0, 0, NULL, NULL},
        {"layer_norm over (3, 4)", false, false, 2, 0, 0, NULL, NULL},
        {"layer_norm_composed over (4,)", false, true, 1, 0, 0, NULL, NULL},
        {"layer_norm_composed over (3, 4)", false, true, 2, 0, 0, NULL,
         NULL},
        {"batch_norm train", true, false, 0, true, 0, NULL, NULL},
        {"batch_norm train correction 1", true, false, 0, true, 1, NULL,
         NULL},
        {"batch_norm eval", true, false, 0, false, 0, rm, rv},
        {"batch_norm_composed train", true, true, 0, true, 0, NULL, NULL},
        {"batch_norm_composed train correction 1", true, true, 0, true, 1,
         NULL, NULL},
        {"batch_norm_composed eval", true, true, 0, false, 0, rm, rv},
    };
    tg_generator *gen = tg_generator_new(11);
    for (size_t i = 0; i < sizeof calls / sizeof *calls; i++) {
        const norm_call *c = &calls[i];
        layout lay = i % 2 ? TRANSPOSED : CONTIGUOUS;
        tg_tensor *x = randn_as(gen, TG_SHAPE(2, 3, 4), TG_FLOAT64, lay,
                                true);
        int64_t ps[TG_MAX_DIMS];
        int pn = param_shape(c, x, ps);
        tg_tensor *in[3] = {x, NULL, NULL};
        in[1] = randn_as(gen, ps, pn, TG_FLOAT64, lay, true);
        in[2] = randn_as(gen, ps, pn, TG_FLOAT64, CONTIGUOUS, true);
        tg_tensor *r = randn_as(gen, TG_SHAPE(2, 3, 4), TG_FLOAT64,
                                CONTIGUOUS, false);
        weighted wl = {c, r};
        tg_gradcheck_options o = tg_gradcheck_defaults();
        o.quiet = true;
        tg_gradcheck_result res;
        int rc = tg_gradcheck(weighted_loss, &wl, in, 3, &o, &res);
        cr_assert_eq(rc, 1, "%s: %s%s", c->name, res.message,
                     tg_last_error());
        /* the x-gradient is not trivially zero: the check had teeth */
        tg_tensor *loss = weighted_loss(tg_test_inputs(in), 3, &wl);
        cr_assert_eq(tg_backward(loss), 0, "%s", tg_last_error());
        tg_release(loss);
        cr_assert_gt(max_abs(x->grad), 1e-3, "%s", c->name);
        for (int k = 0; k < 3; k++)
            tg_release(in[k]);
        tg_release(r);
    }
    tg_generator_free(gen);
    tg_release(rv);
    tg_release(rm);
}

/* The fact behind the trap, on the real ops: the x-gradient of sum(y) is
 * zero up to rounding for BatchNorm in training (with any weight) and for
 * LayerNorm without weight; with a weight LayerNorm's is not. */
TG_TEST(norm_grad, sum_of_a_normaliser_has_zero_gradient)
{
    const norm_call ln = {"layer_norm", false, false, 1, 0, 0, NULL, NULL};
    const norm_call bn = {"batch_norm", true, false, 0, true, 0, NULL, NULL};
    tg_generator *gen = tg_generator_new(12);
    tg_tensor *x = randn_as(gen, TG_SHAPE(5, 4), TG_FLOAT64, CONTIGUOUS,
                            true);
    tg_tensor *w = randn_as(gen, TG_SHAPE(4), TG_FLOAT64, CONTIGUOUS, true);
    struct {
        const norm_call *call;
        tg_tensor *w;
        bool zero;
    } cases[] = {{&bn, w, true}, {&ln, NULL, true}, {&ln, w, false}};
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        /* x is (5, 4): BatchNorm's weight is (C,) = (4,), LayerNorm's
         * normalized_shape is (4,) */
        tg_tensor *in[2] = {x, cases[i].w};
        weighted wl = {cases[i].call, NULL};
        tg_tensor *loss =
            weighted_loss(tg_test_inputs(in), cases[i].w ? 2 : 1, &wl);
        cr_assert_eq(tg_backward(loss), 0, "%s", tg_last_error());
        tg_release(loss);
        tg_tensor *dx = take_grad(x);
        /* 1e-12: a sum of a few terms of size ~1 that cancel exactly in
         * exact arithmetic leaves ~1e-16 */
        if (cases[i].zero)
            cr_assert_lt(max_abs(dx), 1e-12, "case %zu: %g", i, max_abs(dx));
        else
            cr_assert_gt(max_abs(dx), 1e-2, "case %zu", i);
        tg_release(dx);
        tg_clear_grad(w);
    }
    tg_release(w);
    tg_release(x);
    tg_generator_free(gen);
}

/* ------------------------------------------ the trap: a wrong backward */

/* Reads a float64 (rows, cols) tensor of any layout into a new array. */
static double *read_matrix(const tg_tensor *t)
{
    double *v = malloc((size_t)t->numel * sizeof *v + 1);
    cr_assert(v);
    cr_assert_eq(tg_to_f64_array(t, v), 0);
    return v;
}

/* LayerNorm over the last dim of a 2-D x without affine, whose backward
 * FORGETS the variance path. forward (the real op):
 *   y = xhat = (x - mean) * rstd
 * right:  dx = rstd * (g - mean(g) - xhat * mean(g * xhat))
 * here:   dx = rstd * (g - mean(g))
 * Under a constant g (the loss sum(y)), mean(g * xhat) = g * mean(xhat) = 0,
 * so the two agree there and nowhere else. */
static tg_tensor *wrong_ln_forward(tg_ctx *ctx, const tg_tensor *const *in,
                                   int n, const void *args)
{
    (void)n, (void)args;
    tg_ctx_save(ctx, in[0]);
    return tg_layer_norm(in[0], &in[0]->shape[1], 1, NULL, NULL, 1e-5);
}

static int wrong_ln_backward(tg_ctx *ctx, const tg_tensor *g,
                             tg_tensor **gi)
{
    const tg_tensor *x = tg_ctx_saved(ctx, 0);
    int64_t M = x->shape[0], N = x->shape[1];
    double *xv = read_matrix(x), *gv = read_matrix(g);
    double *dx = malloc((size_t)(M * N) * sizeof *dx);
    cr_assert(dx);
    for (int64_t r = 0; r < M; r++) {
        double mean = 0, var = 0, gmean = 0;
        for (int64_t j = 0; j < N; j++)
            mean += xv[r * N + j] / (double)N;
        for (int64_t j = 0; j < N; j++) {
            double d = xv[r * N + j] - mean;
            var += d * d / (double)N;
            gmean += gv[r * N + j] / (double)N;
        }
        double rstd = 1.0 / sqrt(var + 1e-5);
        for (int64_t j = 0; j < N; j++)
            dx[r * N + j] = rstd * (gv[r * N + j] - gmean); // no xhat term
    }
    gi[0] = tg_from_array(dx, x->shape, x->ndim, TG_FLOAT64);
    free(dx);
    free(gv);
    free(xv);
    return gi[0] ? 0 : -1;
}

/* BatchNorm in training on a 2-D (n, C) x without affine, correction 0
 * (PyTorch's biased variance) in the forward, whose backward uses the
 * formula of the unbiased variance (correction 1):
 *   right: dx = invstd / n * (n dy - sum(dy) - xhat * sum(dy * xhat))
 *   here:  dx = invstd / n * (n dy - sum(dy) - n/(n-1) * xhat * sum(dy * xhat))
 * Under a constant dy, sum(dy * xhat) = 0 and the slip vanishes. */
static tg_tensor *wrong_bn_forward(tg_ctx *ctx, const tg_tensor *const *in,
                                   int n, const void *args)
{
    (void)n, (void)args;
    tg_ctx_save(ctx, in[0]);
    return tg_batch_norm(in[0], NULL, NULL, NULL, NULL, true, 0.1, 1e-5);
}

static int wrong_bn_backward(tg_ctx *ctx, const tg_tensor *g,
                             tg_tensor **gi)
{
    const tg_tensor *x = tg_ctx_saved(ctx, 0);
    int64_t n = x->shape[0], C = x->shape[1];
    double *xv = read_matrix(x), *gv = read_matrix(g);
    double *dx = malloc((size_t)(n * C) * sizeof *dx);
    cr_assert(dx);
    double dn = (double)n;
    for (int64_t c = 0; c < C; c++) {
        double mean = 0, m2 = 0, sdy = 0, sdyx = 0;
        for (int64_t i = 0; i < n; i++)
            mean += xv[i * C + c] / dn;
        for (int64_t i = 0; i < n; i++) {
            double d = xv[i * C + c] - mean;
            m2 += d * d;
        }
        double invstd = 1.0 / sqrt(m2 / dn + 1e-5); // biased, as forward
        for (int64_t i = 0; i < n; i++) {
            double xhat = (xv[i * C + c] - mean) * invstd;
            sdy += gv[i * C + c];
            sdyx += gv[i * C + c] * xhat;
        }
        for (int64_t i = 0; i < n; i++) {
            double xhat = (xv[i * C + c] - mean) * invstd;
            dx[i * C + c] = invstd / dn *
                            (dn * gv[i * C + c] - sdy -
                             dn / (dn - 1) * xhat * sdyx); // the slip
        }
    }
    gi[0] = tg_from_array(dx, x->shape, x->ndim, TG_FLOAT64);
    free(dx);
    free(gv);
    free(xv);
    return gi[0] ? 0 : -1;
}

static const tg_function wrong_ln = {"WrongLayerNormBackward",
                                     wrong_ln_forward, wrong_ln_backward, 0};
static const tg_function wrong_bn = {"WrongBatchNormBackward",
                                     wrong_bn_forward, wrong_bn_backward, 0};

/* What f below computes from x: y itself (the full Jacobian), sum(y), or
 * sum(y * r). */
typedef enum reduction { FULL, SUM, WEIGHTED } reduction;

typedef struct trap {
    const tg_function *wrong; // NULL: the real op
    bool batch;
    reduction red;
    const tg_tensor *r;
} trap;

static tg_tensor *trap_fn(const tg_tensor *const *in, int n, void *user)
{
    (void)n;
    const trap *t = user;
    const tg_tensor *x = in[0];
    tg_tensor *y = t->wrong ? tg_function_apply(t->wrong, &x, 1, NULL)
                   : t->batch
                       ? tg_batch_norm(x, NULL, NULL, NULL, NULL, true, 0.1,
                                       1e-5)
                       : tg_layer_norm(x, &x->shape[1], 1, NULL, NULL, 1e-5);
    if (t->red == FULL)
        return y;
    tg_tensor *yr = t->red == WEIGHTED ? tg_mul(y, t->r) : tg_retain(y);
    tg_tensor *loss = tg_sum(yr, NULL, 0, false);
    tg_release(yr);
    tg_release(y);
    return loss;
}

/* The checker fed a wrong answer: each wrong backward passes gradcheck on
 * sum(y), and fails it on the full Jacobian and on sum(y * r), naming x
 * as the input at fault; the real ops pass all three. */
TG_TEST(norm_grad, wrong_backward_passes_sum_but_not_the_jacobian)
{
    tg_generator *gen = tg_generator_new(13);
    tg_tensor *x = randn_as(gen, TG_SHAPE(4, 3), TG_FLOAT64, CONTIGUOUS,
                            true);
    tg_tensor *r = randn_as(gen, TG_SHAPE(4, 3), TG_FLOAT64, CONTIGUOUS,
                            false);
    tg_gradcheck_options o = tg_gradcheck_defaults();
    o.quiet = true;
    const char *names[2] = {"LayerNorm", "BatchNorm"};
    const tg_function *wrongs[2] = {&wrong_ln, &wrong_bn};
    const char *reds[3] = {"full Jacobian", "sum(y)", "sum(y * r)"};
    for (int b = 0; b < 2; b++) {
        for (int red = FULL; red <= WEIGHTED; red++) {
            tg_gradcheck_result res;
            trap right = {NULL, b == 1, (reduction)red, r};
            cr_assert_eq(tg_gradcheck(trap_fn, &right, &x, 1, &o, &res), 1,
                         "real %s on %s: %s", names[b], reds[red],
                         res.message);
            trap wrong = {wrongs[b], b == 1, (reduction)red, r};
            int rc = tg_gradcheck(trap_fn, &wrong, &x, 1, &o, &res);
            if (red == SUM) {
                cr_assert_eq(rc, 1, "wrong %s should pass on sum(y): %s",
                             names[b], res.message);
            } else {
                cr_assert_eq(rc, 0, "wrong %s should fail on %s", names[b],
                             reds[red]);
                cr_assert_not(res.passed);
                cr_assert_eq(res.input, 0);
                cr_assert_gt(res.error, o.atol);
            }
        }
    }
    cr_assert_null(x->grad, "gradcheck gives x's .grad back untouched");
    tg_release(r);
    tg_release(x);
    tg_generator_free(gen);
}

/* ------------------------------------------------ fused == composed */

typedef struct run_result {
    tg_tensor *y, *dx, *dw, *db; // new references
} run_result;

/* Forward c on (x, w, b), backward with output gradient r; hands over the
 * output and the three gradients, leaving the leaves without one. */
static run_result run(const norm_call *c, tg_tensor *x, tg_tensor *w,
                      tg_tensor *b, const tg_tensor *r)
{
    run_result out;
    out.y = norm_apply(c, x, w, b);
    cr_assert(out.y, "%s: %s", c->name, tg_last_error());
    cr_assert_eq(tg_backward_ex(out.y, &(tg_backward_options){.grad = r}), 0,
                 "%s: %s", c->name, tg_last_error());
    /* y's node (and through its links the composed chain) lives while y
     * does; the tape empties with y */
    tg_tensor *y = tg_detach(out.y);
    tg_release(out.y);
    out.y = y;
    cr_assert_eq(tg_tape_size(), 0, "%s", c->name);
    out.dx = take_grad(x);
    out.dw = take_grad(w);
    out.db = take_grad(b);
    return out;
}

static void release_result(run_result *r)
{
    tg_release(r->y);
    tg_release(r->dx);
    tg_release(r->dw);
    tg_release(r->db);
}

/* Asserts a and b close, naming what is compared. */
static void expect_close(const tg_tensor *a, const tg_tensor *b, double rtol,
                         double atol, const char *what, const char *name,
                         const char *dtype, int lay)
{
    char report[1024];
    cr_assert(tg_test_close(a, b, rtol, atol, true, report, sizeof report),
              "%s of %s (%s, layout %d): %s", what, name, dtype, lay,
              report);
}

TG_TEST(norm_grad, fused_equals_composed)
{
    struct {
        norm_call call; // fused; the composed one is the same with
                        // composed = true and its own running stats
        int ndim;
        int64_t shape[4];
        bool stats;
    } cases[] = {
        {{"layer_norm over (6,)", false, false, 1, 0, 0, NULL, NULL}, 2,
         {4, 6}, false},
        {{"layer_norm over (3, 4)", false, false, 2, 0, 0, NULL, NULL}, 3,
         {2, 3, 4}, false},
        {{"layer_norm over (2, 2, 3)", false, false, 3, 0, 0, NULL, NULL}, 4,
         {2, 2, 2, 3}, false},
        {{"batch_norm train (6, 3)", true, false, 0, true, 0, NULL, NULL}, 2,
         {6, 3}, true},
        {{"batch_norm train (3, 2, 4)", true, false, 0, true, 0, NULL, NULL},
         3, {3, 2, 4}, true},
        {{"batch_norm train (2, 3, 2, 2) correction 1", true, false, 0, true,
          1, NULL, NULL},
         4, {2, 3, 2, 2}, true},
        {{"batch_norm train (5, 3) correction 1, no running stats", true,
          false, 0, true, 1, NULL, NULL},
         2, {5, 3}, false},
        {{"batch_norm eval (5, 3, 2)", true, false, 0, false, 0, NULL, NULL},
         3, {5, 3, 2}, true},
        {{"batch_norm eval (2, 3, 2, 3)", true, false, 0, false, 0, NULL,
          NULL},
         4, {2, 3, 2, 3}, true},
    };
    const tg_dtype dtypes[2] = {TG_FLOAT64, TG_FLOAT32};
    const double rtols[2] = {F64_RTOL, F32_RTOL};
    const double atols[2] = {F64_ATOL, F32_ATOL};
    tg_generator *gen = tg_generator_new(14);
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        for (int t = 0; t < 2; t++) {
            for (int lay = CONTIGUOUS; lay <= STRIDED; lay++) {
                const char *dt = tg_dtype_name(dtypes[t]);
                norm_call fused = cases[i].call;
                norm_call composed = fused;
                composed.composed = true;
                tg_tensor *x = randn_as(gen, cases[i].shape, cases[i].ndim,
                                        dtypes[t], (layout)lay, true);
                int64_t ps[TG_MAX_DIMS];
                int pn = param_shape(&fused, x, ps);
                tg_tensor *w = randn_as(gen, ps, pn, dtypes[t], (layout)lay,
                                        true);
                tg_tensor *b = randn_as(gen, ps, pn, dtypes[t], CONTIGUOUS,
                                        true);
                tg_tensor *r = randn_as(gen, cases[i].shape, cases[i].ndim,
                                        dtypes[t], CONTIGUOUS, false);
                tg_tensor *rm[2] = {0}, *rv[2] = {0};
                if (cases[i].stats) {
                    for (int k = 0; k < 2; k++) {
                        tg_tensor *m64, *v64;
                        running_stats(x->shape[1], &m64, &v64);
                        rm[k] = tg_to_dtype(m64, dtypes[t]);
                        rv[k] = tg_to_dtype(v64, dtypes[t]);
                        tg_release(m64);
                        tg_release(v64);
                    }
                    fused.running_mean = rm[0];
                    fused.running_var = rv[0];
                    composed.running_mean = rm[1];
                    composed.running_var = rv[1];
                }
                run_result a = run(&fused, x, w, b, r);
                run_result e = run(&composed, x, w, b, r);
                const char *n = fused.name;
                expect_close(a.y, e.y, rtols[t], atols[t], "y", n, dt, lay);
                expect_close(a.dx, e.dx, rtols[t], atols[t], "dx", n, dt,
                             lay);
                expect_close(a.dw, e.dw, rtols[t], atols[t], "dweight", n,
                             dt, lay);
                expect_close(a.db, e.db, rtols[t], atols[t], "dbias", n, dt,
                             lay);
                if (cases[i].stats) {
                    expect_close(rm[0], rm[1], rtols[t], atols[t],
                                 "running_mean", n, dt, lay);
                    expect_close(rv[0], rv[1], rtols[t], atols[t],
                                 "running_var", n, dt, lay);
                }
                release_result(&a);
                release_result(&e);
                for (int k = 0; k < 2; k++) {
                    tg_release(rm[k]);
                    tg_release(rv[k]);
                }
                tg_release(r);
                tg_release(b);
                tg_release(w);
                tg_release(x);
            }
        }
    }
    tg_generator_free(gen);
}

/* The comparison above can fail: the fused op with correction 1 against
 * the composed one with correction 0 differs by more than even the
 * float32 tolerance, in y and in dx. */
TG_TEST(norm_grad, fused_vs_composed_comparison_tells_corrections_apart)
{
    tg_generator *gen = tg_generator_new(15);
    tg_tensor *x = randn_as(gen, TG_SHAPE(6, 3), TG_FLOAT64, CONTIGUOUS,
                            true);
    tg_tensor *w = randn_as(gen, TG_SHAPE(3), TG_FLOAT64, CONTIGUOUS, true);
    tg_tensor *b = randn_as(gen, TG_SHAPE(3), TG_FLOAT64, CONTIGUOUS, true);
    tg_tensor *r = randn_as(gen, TG_SHAPE(6, 3), TG_FLOAT64, CONTIGUOUS,
                            false);
    norm_call c1 = {"batch_norm c1", true, false, 0, true, 1, NULL, NULL};
    norm_call c0 = {"batch_norm_composed c0", true, true, 0, true, 0, NULL,
                    NULL};
    run_result a = run(&c1, x, w, b, r);
    run_result e = run(&c0, x, w, b, r);
    char report[1024];
    cr_assert_not(tg_test_close(a.y, e.y, F32_RTOL, F32_ATOL, true, report,
                                sizeof report));
    cr_assert_not(tg_test_close(a.dx, e.dx, F32_RTOL, F32_ATOL, true, report,
                                sizeof report));
    /* db = sum(dy) does not see the variance: it agrees */
    cr_assert(tg_test_close(a.db, e.db, F64_RTOL, F64_ATOL, true, report,
                            sizeof report),
              "%s", report);
    release_result(&a);
    release_result(&e);
    tg_release(r);
    tg_release(b);
    tg_release(w);
    tg_release(x);
    tg_generator_free(gen);
}

/* ------------------------------------------------ the tape's bookkeeping */

TG_TEST(norm_grad, grad_fn_names_and_one_node_per_fused_op)
{
    tg_tensor *rm, *rv;
    running_stats(3, &rm, &rv);
    tg_tensor *x = tg_randn(TG_SHAPE(4, 3), TG_FLOAT64);
    tg_set_requires_grad(x, true);
    tg_tensor *y = tg_layer_norm(x, TG_SHAPE(3), NULL, NULL, 1e-5);
    cr_assert_str_eq(tg_grad_fn_name(y), "NativeLayerNormBackward0");
    cr_assert_eq(tg_tape_size(), 1);
    tg_release(y);
    y = tg_layer_norm_ex(x, TG_SHAPE(3), NULL, NULL, 1e-5, NULL, NULL);
    cr_assert_str_eq(tg_grad_fn_name(y), "NativeLayerNormBackward0");
    tg_release(y);
    y = tg_batch_norm(x, NULL, NULL, NULL, NULL, true, 0.1, 1e-5);
    cr_assert_str_eq(tg_grad_fn_name(y), "NativeBatchNormBackward0");
    cr_assert_eq(tg_tape_size(), 1);
    tg_release(y);
    tg_batch_norm_options o = tg_batch_norm_defaults();
    o.eval = true;
    y = tg_batch_norm_ex(x, rm, rv, NULL, NULL, &o, NULL, NULL);
    cr_assert_str_eq(tg_grad_fn_name(y), "NativeBatchNormBackward0");
    cr_assert_eq(tg_tape_size(), 1);
    tg_release(y);
    /* the composed forms are chains of primitive nodes */
    y = tg_layer_norm_composed(x, TG_SHAPE(3), NULL, NULL, 1e-5);
    cr_assert_str_neq(tg_grad_fn_name(y), "NativeLayerNormBackward0");
    cr_assert_gt(tg_tape_size(), 3);
    tg_release(y);
    y = tg_batch_norm_composed(x, NULL, NULL, NULL, NULL, NULL);
    cr_assert_str_neq(tg_grad_fn_name(y), "NativeBatchNormBackward0");
    cr_assert_gt(tg_tape_size(), 3);
    tg_release(y);
    cr_assert_eq(tg_tape_size(), 0);
    tg_release(x);
    tg_release(rv);
    tg_release(rm);
}

/* Backward adds into .grad: two backwards give twice one, exactly. */
TG_TEST(norm_grad, gradients_accumulate)
{
    tg_tensor *rm, *rv;
    running_stats(3, &rm, &rv);
    const norm_call calls[] = {
        {"layer_norm", false, false, 2, 0, 0, NULL, NULL},
        {"batch_norm train", true, false, 0, true, 0, NULL, NULL},
        {"batch_norm eval", true, false, 0, false, 0, rm, rv},
    };
    tg_generator *gen = tg_generator_new(16);
    for (size_t i = 0; i < sizeof calls / sizeof *calls; i++) {
        const norm_call *c = &calls[i];
        tg_tensor *x = randn_as(gen, TG_SHAPE(2, 3, 4), TG_FLOAT64,
                                STRIDED, true);
        int64_t ps[TG_MAX_DIMS];
        int pn = param_shape(c, x, ps);
        tg_tensor *p[3] = {x, NULL, NULL};
        p[1] = randn_as(gen, ps, pn, TG_FLOAT64, CONTIGUOUS, true);
        p[2] = randn_as(gen, ps, pn, TG_FLOAT64, CONTIGUOUS, true);
        tg_tensor *r = randn_as(gen, TG_SHAPE(2, 3, 4), TG_FLOAT64,
                                CONTIGUOUS, false);
        tg_tensor *once[3], *grad_objects[3];
        for (int pass = 0; pass < 2; pass++) {
            tg_tensor *y = norm_apply(c, p[0], p[1], p[2]);
            cr_assert_eq(
                tg_backward_ex(y, &(tg_backward_options){.grad = r}), 0,
                "%s", tg_last_error());
            tg_release(y);
            for (int k = 0; k < 3 && pass == 0; k++) {
                once[k] = tg_clone(p[k]->grad);
                grad_objects[k] = p[k]->grad;
            }
        }
        for (int k = 0; k < 3; k++) {
            cr_assert_eq(p[k]->grad, grad_objects[k],
                         "%s: .grad keeps its identity", c->name);
            tg_tensor *twice = tg_mul_scalar(once[k], 2.0);
            tg_assert_close(p[k]->grad, twice, 0, 0);
            tg_release(twice);
            tg_release(once[k]);
            tg_release(p[k]);
        }
        tg_release(r);
    }
    tg_generator_free(gen);
    tg_release(rv);
    tg_release(rm);
}

/* Only inputs that require grad receive one, and the ones that do get the
 * same numbers as when every input requires grad. */
TG_TEST(norm_grad, only_inputs_that_need_grad_get_one)
{
    tg_tensor *rm, *rv;
    running_stats(3, &rm, &rv);
    const norm_call calls[] = {
        {"layer_norm", false, false, 1, 0, 0, NULL, NULL},
        {"batch_norm train", true, false, 0, true, 0, NULL, NULL},
        {"batch_norm eval", true, false, 0, false, 0, rm, rv},
    };
    /* which of x, weight, bias require grad */
    const bool needs[][3] = {{false, true, false}, {true, false, false},
                             {false, false, true}, {false, true, true}};
    tg_generator *gen = tg_generator_new(17);
    for (size_t i = 0; i < sizeof calls / sizeof *calls; i++) {
        const norm_call *c = &calls[i];
        tg_tensor *p[3];
        p[0] = randn_as(gen, TG_SHAPE(4, 3), TG_FLOAT64, CONTIGUOUS, true);
        p[1] = randn_as(gen, TG_SHAPE(3), TG_FLOAT64, CONTIGUOUS, true);
        p[2] = randn_as(gen, TG_SHAPE(3), TG_FLOAT64, CONTIGUOUS, true);
        tg_tensor *r = randn_as(gen, TG_SHAPE(4, 3), TG_FLOAT64, CONTIGUOUS,
                                false);
        run_result all = run(c, p[0], p[1], p[2], r);
        tg_tensor *expected[3] = {all.dx, all.dw, all.db};
        for (size_t s = 0; s < sizeof needs / sizeof *needs; s++) {
            for (int k = 0; k < 3; k++)
                tg_set_requires_grad(p[k], needs[s][k]);
            tg_tensor *y = norm_apply(c, p[0], p[1], p[2]);
            cr_assert(y->requires_grad && y->grad_fn, "%s", c->name);
            cr_assert_eq(
                tg_backward_ex(y, &(tg_backward_options){.grad = r}), 0,
                "%s", tg_last_error());
            tg_release(y);
            for (int k = 0; k < 3; k++) {
                if (!needs[s][k]) {
                    cr_assert_null(p[k]->grad, "%s: setting %zu, input %d",
                                   c->name, s, k);
                    continue;
                }
                tg_assert_close(p[k]->grad, expected[k], 0, 0);
                tg_clear_grad(p[k]);
            }
        }
        /* nothing needs grad: nothing is recorded */
        for (int k = 0; k < 3; k++)
            tg_set_requires_grad(p[k], false);
        tg_tensor *y = norm_apply(c, p[0], p[1], p[2]);
        cr_assert(y);
        cr_assert_not(y->requires_grad);
        cr_assert_null(y->grad_fn);
        cr_assert_eq(tg_tape_size(), 0);
        tg_release(y);
        release_result(&all);
        for (int k = 0; k < 3; k++)
            tg_release(p[k]);
        tg_release(r);
    }
    tg_generator_free(gen);
    tg_release(rv);
    tg_release(rm);
}

/* x and weight are saved for backward: changing one in place between the
 * forward and the backward (an optimiser step at the wrong time) is an
 * error at backward, and no gradient is accumulated. */
TG_TEST(norm_grad, in_place_change_of_a_saved_input_is_caught)
{
    struct {
        bool batch;
        const char *node;
    } ops[] = {{false, "saved by NativeLayerNormBackward0"},
               {true, "saved by NativeBatchNormBackward0"}};
    for (int op = 0; op < 2; op++) {
        for (int which = 0; which < 2; which++) { // 0: x, 1: weight
            tg_tensor *x = tg_randn(TG_SHAPE(4, 3), TG_FLOAT64);
            tg_tensor *w = tg_randn(TG_SHAPE(3), TG_FLOAT64);
            tg_tensor *b = tg_randn(TG_SHAPE(3), TG_FLOAT64);
            tg_set_requires_grad(x, true);
            tg_set_requires_grad(w, true);
            tg_set_requires_grad(b, true);
            tg_tensor *y =
                ops[op].batch
                    ? tg_batch_norm(x, NULL, NULL, w, b, true, 0.1, 1e-5)
                    : tg_layer_norm(x, TG_SHAPE(3), w, b, 1e-5);
            tg_no_grad_begin();
            cr_assert_eq(tg_fill_(which ? w : x, 0.5), 0, "%s",
                         tg_last_error());
            tg_no_grad_end();
            tg_tensor *g = tg_ones_like(y);
            cr_assert_eq(tg_backward_ex(y, &(tg_backward_options){.grad = g}),
                         -1, "op %d, input %d", op, which);
            tg_assert_error("tg_backward", ops[op].node, "modified in place",
                            "hint: modify a copy instead (tg_clone)");
            cr_assert_null(x->grad);
            cr_assert_null(w->grad);
            cr_assert_null(b->grad);
            tg_release(g);
            tg_release(y);
            cr_assert_eq(tg_tape_size(), 0);
            tg_release(b);
            tg_release(w);
            tg_release(x);
        }
    }
}

/* Under no_grad nothing is recorded, yet BatchNorm in training still
 * updates its running statistics (torch.no_grad does the same):
 *   running_mean = 0.9 running_mean + 0.1 mean_c
 *   running_var  = 0.9 running_var  + 0.1 var_c (unbiased, n - 1)
 * computed here with tg_mean and tg_var. In eval they stay unchanged. */
TG_TEST(norm_grad, no_grad_records_nothing_but_updates_running_stats)
{
    tg_generator *gen = tg_generator_new(18);
    tg_tensor *x = randn_as(gen, TG_SHAPE(5, 3, 2), TG_FLOAT64, TRANSPOSED,
                            true);
    tg_tensor *w = randn_as(gen, TG_SHAPE(3), TG_FLOAT64, CONTIGUOUS, true);
    tg_tensor *lw = randn_as(gen, TG_SHAPE(3, 2), TG_FLOAT64, CONTIGUOUS,
                             true);
    /* expected statistics, per channel over dims 0 and 2 */
    tg_tensor *rm0, *rv0;
    running_stats(3, &rm0, &rv0);
    tg_no_grad_begin();
    tg_tensor *mean = tg_mean(x, TG_DIMS(0, 2), false);
    tg_tensor *var = tg_var(x, TG_DIMS(0, 2), 1, false);
    tg_tensor *m_keep = tg_mul_scalar(rm0, 0.9);
    tg_tensor *m_add = tg_mul_scalar(mean, 0.1);
    tg_tensor *v_keep = tg_mul_scalar(rv0, 0.9);
    tg_tensor *v_add = tg_mul_scalar(var, 0.1);
    tg_tensor *em = tg_add(m_keep, m_add);
    tg_tensor *ev = tg_add(v_keep, v_add);
    for (int composed = 0; composed < 2; composed++) {
        tg_tensor *rm = tg_clone(rm0), *rv = tg_clone(rv0);
        tg_batch_norm_options o = tg_batch_norm_defaults();
        tg_tensor *y = composed
                           ? tg_batch_norm_composed(x, rm, rv, w, NULL, &o)
                           : tg_batch_norm_ex(x, rm, rv, w, NULL, &o, NULL,
                                              NULL);
        cr_assert(y, "%s", tg_last_error());
        cr_assert_not(y->requires_grad);
        cr_assert_null(y->grad_fn);
        cr_assert_eq(tg_tape_size(), 0);
        tg_assert_close(rm, em, 1e-12, 1e-15);
        tg_assert_close(rv, ev, 1e-12, 1e-15);
        tg_release(y);
        /* eval: running statistics are read, not written */
        o.eval = true;
        tg_tensor *rm1 = tg_clone(rm), *rv1 = tg_clone(rv);
        y = composed ? tg_batch_norm_composed(x, rm, rv, w, NULL, &o)
                     : tg_batch_norm_ex(x, rm, rv, w, NULL, &o, NULL, NULL);
        cr_assert(y && !y->requires_grad && tg_tape_size() == 0);
        tg_assert_close(rm, rm1, 0, 0);
        tg_assert_close(rv, rv1, 0, 0);
        tg_release(y);
        tg_release(rv1);
        tg_release(rm1);
        tg_release(rv);
        tg_release(rm);
    }
    tg_tensor *y = tg_layer_norm(x, TG_SHAPE(3, 2), lw, NULL, 1e-5);
    cr_assert(y && !y->requires_grad && !y->grad_fn);
    tg_release(y);
    y = tg_layer_norm_composed(x, TG_SHAPE(3, 2), lw, NULL, 1e-5);
    cr_assert(y && !y->requires_grad && !y->grad_fn);
    tg_release(y);
    cr_assert_eq(tg_tape_size(), 0);
    tg_no_grad_end();
    tg_release(ev);
    tg_release(em);
    tg_release(v_add);
    tg_release(v_keep);
    tg_release(m_add);
    tg_release(m_keep);
    tg_release(var);
    tg_release(mean);
    tg_release(rv0);
    tg_release(rm0);
    tg_release(lw);
    tg_release(w);
    tg_release(x);
    tg_generator_free(gen);
}

/* -------------------------------------------------------------- errors */

/* call must fail (NULL) with a message containing every fragment, and,
 * as STYLE.md asks of every error, a rule and a hint. */
#define EXPECT_ERROR(call, ...)                                             \
    do {                                                                    \
        tg_clear_error();                                                   \
        tg_tensor *r_ = (call);                                             \
        cr_assert_null(r_, "%s should have failed", #call);                 \
        tg_assert_error(__VA_ARGS__);                                       \
        tg_assert_error("\n  rule: ", "\n  hint: ");                        \
    } while (0)

TG_TEST(norm_grad, layer_norm_errors)
{
    tg_tensor *x = tg_randn(TG_SHAPE(4, 5), TG_FLOAT64);
    tg_tensor *xi = tg_randint(0, 5, TG_SHAPE(4, 5));
    tg_tensor *w = tg_ones(TG_SHAPE(5), TG_FLOAT64);
    tg_tensor *w4 = tg_ones(TG_SHAPE(4), TG_FLOAT64);
    tg_tensor *w15 = tg_ones(TG_SHAPE(1, 5), TG_FLOAT64);
    tg_tensor *b32 = tg_zeros(TG_SHAPE(5), TG_FLOAT32);
    tg_tensor *x0 = tg_scalar(1.0, TG_FLOAT64);
    const int64_t ns[3] = {4, 5, 5};

    EXPECT_ERROR(tg_layer_norm(xi, TG_SHAPE(5), NULL, NULL, 1e-5),
                 "tg_layer_norm: cannot normalise an int64 tensor",
                 "rule: LayerNorm needs a float32 or float64 input",
                 "hint: convert first: tg_to_dtype(x, TG_FLOAT32)");
    EXPECT_ERROR(tg_layer_norm(x, ns, 0, NULL, NULL, 1e-5),
                 "tg_layer_norm: normalized_shape has 0 dims but the input "
                 "of shape (4, 5) has 2",
                 "rule: normalized_shape lists the 1..ndim trailing dims",
                 "hint: for x of shape (4, 5), normalized_shape (5,) "
                 "normalises over the last dim");
    EXPECT_ERROR(tg_layer_norm(x, ns, 3, NULL, NULL, 1e-5),
                 "normalized_shape has 3 dims but the input of shape (4, 5) "
                 "has 2",
                 "hint: for x of shape (4, 5)");
    EXPECT_ERROR(tg_layer_norm(x, TG_SHAPE(4), NULL, NULL, 1e-5),
                 "the input of shape (4, 5) does not end with "
                 "normalized_shape (4,)",
                 "rule: the last 1 dim of x must equal normalized_shape",
                 "hint: to normalise over the last dim of this x, pass "
                 "normalized_shape (5,)");
    EXPECT_ERROR(tg_layer_norm(x, TG_SHAPE(5, 4), NULL, NULL, 1e-5),
                 "the input of shape (4, 5) does not end with "
                 "normalized_shape (5, 4)");
    EXPECT_ERROR(tg_layer_norm(x, TG_SHAPE(5), w4, NULL, 1e-5),
                 "weight of shape (4,) does not match normalized_shape (5,)",
                 "rule: weight and bias have exactly the shape "
                 "normalized_shape",
                 "hint: make it with tg_ones(normalized_shape)");
    EXPECT_ERROR(tg_layer_norm(x, TG_SHAPE(5), w, w15, 1e-5),
                 "bias of shape (1, 5) does not match normalized_shape (5,)",
                 "hint:");
    EXPECT_ERROR(tg_layer_norm(x, TG_SHAPE(5), w, b32, 1e-5),
                 "tg_layer_norm: bias is float32 but the input is float64",
                 "rule: weight, bias and x have one dtype",
                 "hint: convert x with tg_to_dtype(x, TG_FLOAT32), or the "
                 "layer with tg_module_to_dtype(layer, TG_FLOAT64)");
    EXPECT_ERROR(tg_layer_norm(x, TG_SHAPE(5), b32, NULL, 1e-5),
                 "weight is float32 but the input is float64",
                 "hint: convert x with tg_to_dtype(x, TG_FLOAT32)");
    EXPECT_ERROR(tg_layer_norm(x, TG_SHAPE(5), w, NULL, -1e-5),
                 "tg_layer_norm: eps is -1e-05",
                 "rule: eps is a finite number >= 0",
                 "hint: PyTorch's default is 1e-5");
    EXPECT_ERROR(tg_layer_norm(x, TG_SHAPE(5), w, NULL, NAN), "eps is ",
                 "nan", "rule: eps is a finite number >= 0", "hint:");
    EXPECT_ERROR(tg_layer_norm(x, TG_SHAPE(5), w, NULL, INFINITY),
                 "eps is inf", "hint:");
    EXPECT_ERROR(tg_layer_norm(x0, TG_SHAPE(1), NULL, NULL, 1e-5),
                 "tg_layer_norm: cannot normalise a 0-d tensor",
                 "rule: LayerNorm normalises rows made of the trailing dims",
                 "hint: tg_reshape(x, TG_SHAPE(1, -1)) makes one row");
    EXPECT_ERROR(tg_layer_norm(x, NULL, 1, NULL, NULL, 1e-5),
                 "tg_layer_norm: normalized_shape is NULL but has 1 dim\n",
                 "rule: normalized_shape is an array of ndim sizes",
                 "hint: pass it as TG_SHAPE(...)");
    /* the composed form checks the same, under its own name */
    EXPECT_ERROR(tg_layer_norm_composed(x, TG_SHAPE(4), NULL, NULL, 1e-5),
                 "tg_layer_norm_composed: the input of shape (4, 5) does "
                 "not end with normalized_shape (4,)",
                 "hint:");
    EXPECT_ERROR(tg_layer_norm_composed(xi, TG_SHAPE(5), NULL, NULL, 1e-5),
                 "tg_layer_norm_composed: cannot normalise an int64");
    /* _ex leaves its statistics NULL on failure */
    tg_tensor *mean = x, *rstd = x;
    EXPECT_ERROR(
        tg_layer_norm_ex(x, TG_SHAPE(4), NULL, NULL, 1e-5, &mean, &rstd),
        "does not end with normalized_shape");
    cr_assert_null(mean);
    cr_assert_null(rstd);
    /* eps 0 is allowed */
    tg_tensor *y = tg_layer_norm(x, TG_SHAPE(5), w, NULL, 0.0);
    cr_assert(y, "%s", tg_last_error());
    tg_release(y);

    tg_release(x0);
    tg_release(b32);
    tg_release(w15);
    tg_release(w4);
    tg_release(w);
    tg_release(xi);
    tg_release(x);
}

TG_TEST(norm_grad, batch_norm_errors)
{
    tg_tensor *x = tg_randn(TG_SHAPE(5, 3), TG_FLOAT64);
    tg_tensor *xi = tg_randint(0, 5, TG_SHAPE(5, 3));
    tg_tensor *x1 = tg_randn(TG_SHAPE(5), TG_FLOAT64);
    tg_tensor *x0 = tg_scalar(1.0, TG_FLOAT64);
    tg_tensor *one = tg_randn(TG_SHAPE(1, 3), TG_FLOAT64);
    tg_tensor *one3 = tg_randn(TG_SHAPE(1, 3, 1), TG_FLOAT64);
    tg_tensor *rm = tg_zeros(TG_SHAPE(3), TG_FLOAT64);
    tg_tensor *rv = tg_ones(TG_SHAPE(3), TG_FLOAT64);
    tg_tensor *w = tg_ones(TG_SHAPE(3), TG_FLOAT64);
    tg_tensor *w4 = tg_ones(TG_SHAPE(4), TG_FLOAT64);
    tg_tensor *w13 = tg_ones(TG_SHAPE(1, 3), TG_FLOAT64);
    tg_tensor *w32 = tg_ones(TG_SHAPE(3), TG_FLOAT32);
    tg_tensor *rg = tg_zeros(TG_SHAPE(3), TG_FLOAT64);
    tg_set_requires_grad(rg, true);
    tg_batch_norm_options o = tg_batch_norm_defaults();

    EXPECT_ERROR(tg_batch_norm(xi, NULL, NULL, NULL, NULL, true, 0.1, 1e-5),
                 "tg_batch_norm: cannot normalise an int64 tensor",
                 "rule: BatchNorm needs a float32 or float64 input",
                 "hint: convert first: tg_to_dtype(x, TG_FLOAT32)");
    EXPECT_ERROR(tg_batch_norm(x1, NULL, NULL, NULL, NULL, true, 0.1, 1e-5),
                 "tg_batch_norm: the input of shape (5,) has 1 dim\n",
                 "rule: BatchNorm needs (N, C) or (N, C, ...)",
                 "hint: a batch of feature vectors is (N, C)");
    EXPECT_ERROR(tg_batch_norm(x0, NULL, NULL, NULL, NULL, true, 0.1, 1e-5),
                 "the input of shape () has 0 dims", "hint:");
    EXPECT_ERROR(tg_batch_norm(one, NULL, NULL, NULL, NULL, true, 0.1, 1e-5),
                 "tg_batch_norm: expected more than 1 value per channel "
                 "when training, got input of shape (1, 3)",
                 "n = N * (product of dims after C) = 1 values",
                 "hint: use a batch of at least 2 samples, or eval mode");
    EXPECT_ERROR(tg_batch_norm(one3, rm, rv, NULL, NULL, true, 0.1, 1e-5),
                 "expected more than 1 value per channel when training, got "
                 "input of shape (1, 3, 1)",
                 "hint:");
    /* the same single sample is fine in eval, with running statistics */
    tg_tensor *y = tg_batch_norm(one, rm, rv, NULL, NULL, false, 0.1, 1e-5);
    cr_assert(y, "%s", tg_last_error());
    tg_release(y);
    EXPECT_ERROR(tg_batch_norm(x, rm, rv, w4, NULL, true, 0.1, 1e-5),
                 "tg_batch_norm: weight of shape (4,) does not match the 3 "
                 "channels of the input of shape (5, 3)",
                 "rule: dim 1 of x is the channel dim",
                 "hint: make the layer with num_features = x.shape[1] = 3");
    EXPECT_ERROR(tg_batch_norm(x, rm, rv, w, w13, true, 0.1, 1e-5),
                 "bias of shape (1, 3) does not match the 3 channels",
                 "hint: make the layer with num_features");
    EXPECT_ERROR(tg_batch_norm(x, w4, w4, NULL, NULL, true, 0.1, 1e-5),
                 "running_mean of shape (4,) does not match the 3 channels",
                 "hint:");
    EXPECT_ERROR(tg_batch_norm(x, rm, w4, NULL, NULL, false, 0.1, 1e-5),
                 "running_var of shape (4,) does not match the 3 channels",
                 "hint:");
    EXPECT_ERROR(tg_batch_norm(x, rm, rv, w32, NULL, true, 0.1, 1e-5),
                 "tg_batch_norm: weight is float32 but the input is "
                 "float64",
                 "rule: the input, running statistics, weight and bias "
                 "have one dtype",
                 "hint: convert x with tg_to_dtype(x, TG_FLOAT32), or the "
                 "layer with tg_module_to_dtype(layer, TG_FLOAT64)");
    EXPECT_ERROR(tg_batch_norm(x, w32, w32, NULL, NULL, true, 0.1, 1e-5),
                 "running_mean is float32 but the input is float64",
                 "hint: convert x with tg_to_dtype(x, TG_FLOAT32)");
    EXPECT_ERROR(tg_batch_norm(x, rm, NULL, NULL, NULL, true, 0.1, 1e-5),
                 "tg_batch_norm: running_mean is given but running_var is "
                 "NULL",
                 "rule: pass both running statistics or neither",
                 "hint: running_mean starts as zeros (C,), running_var as "
                 "ones (C,)");
    EXPECT_ERROR(tg_batch_norm(x, NULL, rv, NULL, NULL, false, 0.1, 1e-5),
                 "running_var is given but running_mean is NULL", "hint:");
    EXPECT_ERROR(tg_batch_norm(x, rg, rv, NULL, NULL, true, 0.1, 1e-5),
                 "tg_batch_norm: running_mean requires grad",
                 "rule: running statistics are buffers updated in place",
                 "hint: create them without tg_set_requires_grad");
    EXPECT_ERROR(tg_batch_norm(x, rm, rg, NULL, NULL, false, 0.1, 1e-5),
                 "running_var requires grad", "hint:");
    EXPECT_ERROR(tg_batch_norm(x, NULL, NULL, w, NULL, false, 0.1, 1e-5),
                 "tg_batch_norm: eval mode needs running statistics, but "
                 "running_mean and running_var are NULL",
                 "rule: in eval BatchNorm normalises with the running mean",
                 "hint: pass them, or train (training = true)");
    EXPECT_ERROR(tg_batch_norm(x, rm, rv, NULL, NULL, true, 1.5, 1e-5),
                 "tg_batch_norm: momentum is 1.5",
                 "rule: momentum is in [0, 1]",
                 "hint: PyTorch's default is 0.1");
    EXPECT_ERROR(tg_batch_norm(x, rm, rv, NULL, NULL, true, -0.1, 1e-5),
                 "momentum is -0.1", "hint:");
    EXPECT_ERROR(tg_batch_norm(x, rm, rv, NULL, NULL, true, NAN, 1e-5),
                 "momentum is ", "nan", "hint:");
    EXPECT_ERROR(tg_batch_norm(x, rm, rv, NULL, NULL, true, 0.1, -1.0),
                 "tg_batch_norm: eps is -1",
                 "rule: eps is a finite number >= 0",
                 "hint: PyTorch's default is 1e-5");
    EXPECT_ERROR(tg_batch_norm(x, rm, rv, NULL, NULL, true, 0.1, NAN),
                 "eps is ", "nan", "hint:");
    o.correction = 2;
    EXPECT_ERROR(tg_batch_norm_ex(x, NULL, NULL, NULL, NULL, &o, NULL, NULL),
                 "tg_batch_norm: correction is 2",
                 "rule: the training variance divides by n - correction",
                 "hint: use 0 unless you are following makemore part 4");
    o.correction = -1;
    EXPECT_ERROR(tg_batch_norm_ex(x, NULL, NULL, NULL, NULL, &o, NULL, NULL),
                 "correction is -1", "hint:");
    /* the composed form checks the same, under its own name */
    o = tg_batch_norm_defaults();
    EXPECT_ERROR(tg_batch_norm_composed(one, NULL, NULL, NULL, NULL, &o),
                 "tg_batch_norm_composed: expected more than 1 value per "
                 "channel when training");
    o.momentum = 2.0;
    EXPECT_ERROR(tg_batch_norm_composed(x, rm, rv, NULL, NULL, &o),
                 "tg_batch_norm_composed: momentum is 2");
    /* _ex leaves its statistics NULL on failure */
    tg_tensor *mean = x, *invstd = x;
    EXPECT_ERROR(tg_batch_norm_ex(x1, NULL, NULL, NULL, NULL, NULL, &mean,
                                  &invstd),
                 "has 1 dim");
    cr_assert_null(mean);
    cr_assert_null(invstd);
    /* nothing was written into the running statistics by the failures */
    tg_tensor *z = tg_zeros(TG_SHAPE(3), TG_FLOAT64);
    tg_tensor *u = tg_ones(TG_SHAPE(3), TG_FLOAT64);
    tg_assert_close(rm, z, 0, 0);
    tg_assert_close(rv, u, 0, 0);
    tg_release(u);
    tg_release(z);

    tg_release(rg);
    tg_release(w32);
    tg_release(w13);
    tg_release(w4);
    tg_release(w);
    tg_release(rv);
    tg_release(rm);
    tg_release(one3);
    tg_release(one);
    tg_release(x0);
    tg_release(x1);
    tg_release(xi);
    tg_release(x);
}

/* A NULL x returns NULL without a new error, whatever else is wrong, so a
 * chain of calls fails once. */
TG_TEST(norm_grad, null_input_fails_silently)
{
    tg_tensor *w4 = tg_ones(TG_SHAPE(4), TG_FLOAT64);
    tg_batch_norm_options o = tg_batch_norm_defaults();
    tg_tensor *a = w4, *b = w4;
    tg_clear_error();
    cr_assert_null(tg_layer_norm(NULL, TG_SHAPE(5), w4, NULL, 1e-5));
    cr_assert_null(tg_layer_norm_ex(NULL, TG_SHAPE(5), NULL, NULL, -1.0, &a,
                                    &b));
    cr_assert_null(a);
    cr_assert_null(b);
    cr_assert_null(tg_layer_norm_composed(NULL, TG_SHAPE(5), NULL, NULL,
                                          1e-5));
    cr_assert_null(tg_batch_norm(NULL, w4, NULL, NULL, NULL, false, 7, 1e-5));
    a = b = w4;
    cr_assert_null(tg_batch_norm_ex(NULL, NULL, NULL, NULL, NULL, &o, &a,
                                    &b));
    cr_assert_null(a);
    cr_assert_null(b);
    cr_assert_null(tg_batch_norm_composed(NULL, NULL, NULL, NULL, NULL, &o));
    cr_assert_str_eq(tg_last_error(), "", "a new error: %s",
                     tg_last_error());
    tg_release(w4);
}

/* -------------------------------------------------------------- memory */

/* After forward and backward (with the statistics of the _ex forms
 * asked for too) nothing is left on the tape, and the only tensors alive
 * are the inputs and the three gradients. */
TG_TEST(norm_grad, forward_and_backward_leave_nothing_behind)
{
    int64_t before = tg_live_tensors();
    tg_tensor *x = tg_randn(TG_SHAPE(4, 3, 2), TG_FLOAT32);
    tg_tensor *w = tg_randn(TG_SHAPE(3), TG_FLOAT32);  // BatchNorm
    tg_tensor *b = tg_randn(TG_SHAPE(3), TG_FLOAT32);
    tg_tensor *lw = tg_randn(TG_SHAPE(3, 2), TG_FLOAT32); // LayerNorm
    tg_tensor *lb = tg_randn(TG_SHAPE(3, 2), TG_FLOAT32);
    tg_tensor *rm = tg_zeros(TG_SHAPE(3), TG_FLOAT32);
    tg_tensor *rv = tg_ones(TG_SHAPE(3), TG_FLOAT32);
    tg_tensor *leaves[5] = {x, w, b, lw, lb};
    for (int k = 0; k < 5; k++)
        tg_set_requires_grad(leaves[k], true);
    const int64_t made = 7;
    cr_assert_eq(tg_live_tensors() - before, made);
    for (int form = 0; form < 4; form++) {
        tg_tensor *s1 = NULL, *s2 = NULL, *y;
        tg_batch_norm_options o = tg_batch_norm_defaults();
        if (form == 0)
            y = tg_layer_norm_ex(x, TG_SHAPE(3, 2), lw, lb, 1e-5, &s1, &s2);
        else if (form == 1)
            y = tg_layer_norm_composed(x, TG_SHAPE(3, 2), lw, lb, 1e-5);
        else if (form == 2)
            y = tg_batch_norm_ex(x, rm, rv, w, b, &o, &s1, &s2);
        else
            y = tg_batch_norm_composed(x, rm, rv, w, b, &o);
        cr_assert(y, "form %d: %s", form, tg_last_error());
        cr_assert_eq(form % 2 == 0, s1 && s2, "form %d: statistics", form);
        tg_tensor *sq = tg_mul(y, y);
        tg_tensor *loss = tg_sum(sq, NULL, 0, false);
        cr_assert_eq(tg_backward(loss), 0, "%s", tg_last_error());
        tg_release(loss);
        tg_release(sq);
        tg_release(y);
        tg_release(s1);
        tg_release(s2);
        cr_assert_eq(tg_tape_size(), 0, "form %d", form);
        for (int k = 0; k < 5; k++) { // x, then this form's two params
            bool used = k == 0 || (form < 2) == (k >= 3);
            cr_assert_eq(leaves[k]->grad != NULL, used, "form %d, leaf %d",
                         form, k);
        }
        cr_assert_eq(tg_live_tensors() - before, made + 3,
                     "form %d: %lld tensors alive, expected %lld", form,
                     (long long)(tg_live_tensors() - before),
                     (long long)(made + 3));
        for (int k = 0; k < 5; k++)
            tg_clear_grad(leaves[k]);
    }
    tg_release(rv);
    tg_release(rm);
    for (int k = 0; k < 5; k++)
        tg_release(leaves[k]);
    cr_assert_eq(tg_live_tensors(), before);
}
