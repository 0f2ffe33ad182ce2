/*
 * examples/gradcheck_report.c - what tg_gradcheck checks and how to read
 * its verdict, on three backwards written by hand:
 *
 *   1. LayerNorm, the fused op (closed-form backward, llm.c's layernorm);
 *   2. BatchNorm in training mode, the fused op, checked through a fixed
 *      random weighting of its outputs (sum(BN(x)) would prove nothing,
 *      see check 2) and without running statistics (each call of f would
 *      move them);
 *   3. RMSNorm, an op of our own written here with tg_function: forward,
 *      backward and the math of both.
 *
 * For each it prints the inputs, the output, how many Jacobian entries
 * were compared (checked input elements x output elements), the largest
 * errors, and the verdict. Then the same RMSNorm with a backward that is
 * off by a factor (a sum where a mean belongs) shows a failure report:
 * which input element and which output element disagree, with both values.
 *
 * tg_gradcheck's result gives the verdict, the size of the Jacobian and
 * its largest errors (whether the check passes or not), and on failure the
 * worst entry.
 *
 * Exit status 0 iff the three correct backwards pass and the broken one
 * fails, with every tensor released. The test suite runs it.
 */
#include "tapegrad.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------ RMSNorm */
/*
 * RMSNorm over the last dim of x (N, D) with a weight w (D,):
 *   ms   = mean(x^2) over the row          (N, 1)
 *   rrms = 1 / sqrt(ms + eps)              (N, 1)
 *   xhat = x * rrms                        (N, D)
 *   y    = xhat * w                        (N, D)
 * Saved for backward: x, w and rrms (xhat is recomputed, as LayerNorm's
 * fused backward does).
 */
#define RMS_EPS 1e-5

static tg_tensor *rms_norm_forward(tg_ctx *ctx, const tg_tensor *const *in,
                                   int ninputs, const void *args)
{
    (void)ninputs, (void)args;
    const tg_tensor *x = in[0], *w = in[1];
    tg_tensor *x2 = tg_mul(x, x);
    tg_tensor *ms = tg_mean(x2, TG_DIMS(-1), true);
    tg_tensor *ms_eps = tg_add_scalar(ms, RMS_EPS);
    tg_tensor *rrms = tg_rsqrt(ms_eps);
    tg_tensor *xhat = tg_mul(x, rrms);
    tg_tensor *y = tg_mul(xhat, w);
    tg_ctx_save(ctx, x);
    tg_ctx_save(ctx, w);
    tg_ctx_save(ctx, rrms);
    tg_release(xhat);
    tg_release(rrms);
    tg_release(ms_eps);
    tg_release(ms);
    tg_release(x2);
    return y;
}

/* In the forward this was: y = x * rrms * w, rrms = (mean(x^2) + eps)^-1/2.
 * With g = dy * w (the gradient of xhat) and d rrms / d x_j =
 * -rrms^3 x_j / D:
 *   dx = rrms * g - x * rrms^3 * sum(g * x) / D
 *      = rrms * (g - xhat * mean(g * xhat))
 *   dw = sum over rows of dy * xhat
 * mean_factor is 1 / D for the correct backward (the mean); the broken
 * one passes 1 (a sum), the slip of forgetting the 1 / D of the mean. */
static int rms_norm_backward_scaled(tg_ctx *ctx, const tg_tensor *dy,
                                    tg_tensor **grads, double mean_factor)
{
    const tg_tensor *x = tg_ctx_saved(ctx, 0);
    const tg_tensor *w = tg_ctx_saved(ctx, 1);
    const tg_tensor *rrms = tg_ctx_saved(ctx, 2);
    tg_tensor *xhat = tg_mul(x, rrms);
    if (tg_ctx_needs_grad(ctx, 0)) {
        tg_tensor *g = tg_mul(dy, w);
        tg_tensor *gx = tg_mul(g, xhat);
        tg_tensor *s = tg_sum(gx, TG_DIMS(-1), true);
        tg_tensor *m = tg_mul_scalar(s, mean_factor); // mean(g * xhat)
        tg_tensor *xm = tg_mul(xhat, m);
        tg_tensor *diff = tg_sub(g, xm);
        grads[0] = tg_mul(rrms, diff);
        tg_release(diff);
        tg_release(xm);
        tg_release(m);
        tg_release(s);
        tg_release(gx);
        tg_release(g);
    }
    if (tg_ctx_needs_grad(ctx, 1)) {
        tg_tensor *dyx = tg_mul(dy, xhat);
        grads[1] = tg_sum(dyx, TG_DIMS(0), false);
        tg_release(dyx);
    }
    tg_release(xhat);
    bool ok = (!tg_ctx_needs_grad(ctx, 0) || grads[0]) &&
              (!tg_ctx_needs_grad(ctx, 1) || grads[1]);
    return ok ? 0 : -1;
}

static int rms_norm_backward(tg_ctx *ctx, const tg_tensor *dy,
                             tg_tensor **grads)
{
    const tg_tensor *x = tg_ctx_saved(ctx, 0);
    return rms_norm_backward_scaled(ctx, dy, grads,
                                    1.0 / (double)x->shape[x->ndim - 1]);
}

static int rms_norm_backward_broken(tg_ctx *ctx, const tg_tensor *dy,
                                    tg_tensor **grads)
{
    return rms_norm_backward_scaled(ctx, dy, grads, 1.0); // sum, not mean
}

static const tg_function rms_norm_fn = {"RMSNormBackward", rms_norm_forward,
                                        rms_norm_backward, 0};
static const tg_function rms_norm_broken_fn = {
    "RMSNormBrokenBackward", rms_norm_forward, rms_norm_backward_broken, 0};

/* ------------------------------------------------ the functions checked */

/* What f needs besides the checked inputs, and how often it ran. */
typedef struct fn_ctx {
    tg_tensor *weighting;   // fixed random R for BatchNorm
    const tg_function *fn;  // the RMSNorm variant
    int64_t calls;          // calls of f so far
    int64_t checker_calls;  // calls of f made by the last tg_gradcheck
} fn_ctx;

/* inputs: x (N, D), weight (D,), bias (D,) -> LayerNorm over D */
static tg_tensor *f_layer_norm(const tg_tensor *const *in, int n, void *user)
{
    (void)n;
    ((fn_ctx *)user)->calls++;
    int64_t d = in[0]->shape[1];
    return tg_layer_norm(in[0], &d, 1, in[1], in[2], 1e-5);
}

/* inputs: x (N, C), weight (C,), bias (C,) -> sum(R * BN(x)), BN in
 * training mode with no running statistics */
static tg_tensor *f_batch_norm(const tg_tensor *const *in, int n, void *user)
{
    (void)n;
    fn_ctx *c = user;
    c->calls++;
    tg_tensor *y = tg_batch_norm(in[0], NULL, NULL, in[1], in[2], true, 0.1,
                                 1e-5);
    tg_tensor *ry = tg_mul(y, c->weighting);
    tg_tensor *loss = tg_sum(ry, NULL, 0, false);
    tg_release(ry);
    tg_release(y);
    return loss;
}

/* the same without the weighting: sum(BN(x)) */
static tg_tensor *f_batch_norm_sum(const tg_tensor *const *in, int n, void *user)
{
    (void)n, (void)user;
    tg_tensor *y = tg_batch_norm(in[0], NULL, NULL, in[1], in[2], true, 0.1,
                                 1e-5);
    tg_tensor *loss = tg_sum(y, NULL, 0, false);
    tg_release(y);
    return loss;
}

/* inputs: x (N, D), weight (D,) -> RMSNorm(x) * weight */
static tg_tensor *f_rms_norm(const tg_tensor *const *in, int n, void *user)
{
    (void)n;
    fn_ctx *c = user;
    c->calls++;
    return tg_function_apply(c->fn, in, 2, NULL); // f's inputs, as they are
}

/* The C-order multi-index of flat element k of x. */
static void unflatten(const tg_tensor *x, int64_t k, int64_t *index)
{
    for (int d = x->ndim - 1; d >= 0; d--) {
        index[d] = k % x->shape[d];
        k /= x->shape[d];
    }
}

/* ---------------------------------------------------------- the report */

typedef struct named_input {
    const char *name;
    tg_tensor *t;
} named_input;

static void print_inputs(const named_input *in, int n, const char *out)
{
    for (int i = 0; i < n; i++) {
        char s[TG_SHAPE_STR_MAX];
        printf("  input %d  %-7s %-9s %s%s\n", i, in[i].name,
               tg_shape_str(in[i].t, s), tg_dtype_name(in[i].t->dtype),
               in[i].t->requires_grad ? ", checked" : "");
    }
    printf("  output   %s\n", out);
}

/* Prints flat element k of t as name[i, j, ...]. */
static void print_index(const char *name, const tg_tensor *t, int64_t k)
{
    int64_t ix[TG_MAX_DIMS];
    unflatten(t, k, ix);
    printf("%s[", name);
    for (int d = 0; d < t->ndim; d++)
        printf("%s%lld", d ? ", " : "", (long long)ix[d]);
    printf("]");
}

/* Runs tg_gradcheck and the measurement on one function; prints the
 * report. Returns tg_gradcheck's verdict (1 pass, 0 fail, -1 error). */
static int report(const char *title, tg_gradcheck_fn f, fn_ctx *ctx,
                  const named_input *named, int n, const char *out)
{
    printf("== %s ==\n", title);
    tg_tensor *in[TG_MAX_INPUTS];       // for tg_gradcheck, which perturbs
    const tg_tensor *cin[TG_MAX_INPUTS]; // for f, which only reads
    for (int i = 0; i < n; i++)
        cin[i] = in[i] = named[i].t;
    print_inputs(named, n, out);
    tg_gradcheck_options o = tg_gradcheck_defaults();
    o.report = stdout;
    ctx->calls = 0;
    tg_gradcheck_result r;
    int verdict = tg_gradcheck(f, ctx, in, n, &o, &r);
    ctx->checker_calls = ctx->calls;
    if (verdict < 0) {
        printf("  ERROR: %s\n\n", tg_last_error());
        return -1;
    }
    printf("  %lld Jacobian entries compared; f evaluated %lld times\n",
           (long long)r.entries, (long long)ctx->checker_calls);
    printf("  eps %g; an entry passes iff |a - n| <= %g + %g |n|\n", o.eps,
           o.atol, o.rtol);
    printf("  max |a - n|                       = %.2e\n", r.max_error);
    printf("  worst |a - n| / (atol + rtol |n|) = %.2g   (<= 1 passes)\n",
           r.max_error_ratio);
    if (verdict == 1) {
        printf("  PASSED\n\n");
        return 1;
    }
    /* f once more, without the tape, for the output's shape */
    tg_no_grad_begin();
    tg_tensor *y = f(cin, n, ctx);
    tg_no_grad_end();
    printf("  FAILED at input %d (%s) element %lld = ", r.input,
           named[r.input].name, (long long)r.input_index);
    print_index(named[r.input].name, in[r.input], r.input_index);
    printf(", output element %lld", (long long)r.output_index);
    if (y && r.output_index >= 0) {
        printf(" = ");
        print_index("y", y, r.output_index);
    }
    printf(":\n  analytical %.10g, numerical %.10g\n\n", r.analytical,
           r.numerical);
    tg_release(y);
    return 0;
}

/* A float64 tensor of N(0, 1) draws scaled by `scale` plus `shift`, that
 * requires grad when `checked`. */
static tg_tensor *input(tg_generator *g, const int64_t *shape, int ndim,
                        double scale, double shift, bool checked)
{
    tg_tensor *r = tg_randn_gen(g, shape, ndim, TG_FLOAT64);
    tg_tensor *s = tg_mul_scalar(r, scale);
    tg_tensor *t = tg_add_scalar(s, shift);
    tg_release(s);
    tg_release(r);
    if (t && checked)
        tg_set_requires_grad(t, true);
    return t;
}

int main(void)
{
    int failures = 0;
    tg_generator *g = tg_generator_new(42);
    printf("tg_gradcheck compares backward with central differences, "
           "entry by entry:\n"
           "  analytical J[j, k]: element k of the input gradient of a "
           "backward of\n"
           "                      the one-hot output gradient e_j\n"
           "  numerical  J[j, k]: (f(x + eps e_k) - f(x - eps e_k))[j] / "
           "(2 eps)\n"
           "and passes iff every entry is within tolerance; it also checks "
           "that a zero\noutput gradient gives zero input gradients and "
           "that backward gives the same\nnumbers twice. All inputs are "
           "float64 (the defaults are meant for it).\n\n");

    /* 1. LayerNorm: rows of 5 with their own offset and scale */
    named_input ln[3] = {
        {"x", input(g, TG_SHAPE(3, 5), 2.0, 1.0, true)},
        {"weight", input(g, TG_SHAPE(5), 0.5, 1.0, true)},
        {"bias", input(g, TG_SHAPE(5), 0.5, 0.0, true)},
    };
    fn_ctx ctx = {0};
    failures += report("1. LayerNorm (fused): y = layer_norm(x, (5,), w, b)",
                       f_layer_norm, &ctx, ln, 3,
                       "y (3, 5), every element") != 1;

    /* 2. BatchNorm, training mode */
    named_input bn[3] = {
        {"x", input(g, TG_SHAPE(6, 4), 1.5, -0.5, true)},
        {"weight", input(g, TG_SHAPE(4), 0.5, 1.0, true)},
        {"bias", input(g, TG_SHAPE(4), 0.5, 0.0, true)},
    };
    ctx.weighting = input(g, TG_SHAPE(6, 4), 1.0, 0.0, false);
    printf("Why a weighting: in training mode each output channel has mean "
           "bias_c over the\nbatch whatever x is, so sum(BN(x)) does not "
           "depend on x. Its x gradient is\n0 and a gradcheck of it passes "
           "whatever backward computes for x. Here:\n");
    const tg_tensor *bn_in[3] = {bn[0].t, bn[1].t, bn[2].t};
    tg_tensor *s = f_batch_norm_sum(bn_in, 3, NULL);
    double max_gx = NAN;
    if (s && tg_backward(s) == 0) {
        tg_tensor *a = tg_abs(bn[0].t->grad);
        tg_tensor *mx = tg_max(a, NULL, 0, false);
        max_gx = tg_item(mx);
        tg_release(mx);
        tg_release(a);
    }
    tg_release(s);
    for (int i = 0; i < 3; i++)
        tg_clear_grad(bn[i].t);
    printf("  max |d sum(BN(x)) / dx| = %.2e\n", max_gx);
    printf("so the check below differentiates sum(R * BN(x)) for a fixed "
           "random R (6, 4).\nNo running statistics are passed: every call "
           "of f would move them.\n\n");
    failures += !(max_gx < 1e-12); // float64 roundings of terms of size ~1
    failures += report("2. BatchNorm (fused, training): sum(R * BN(x))",
                       f_batch_norm, &ctx, bn, 3, "loss (), one number") != 1;
    printf("(With running statistics, those %lld evaluations would have "
           "moved them %lld\ntimes.)\n\n",
           (long long)ctx.checker_calls, (long long)ctx.checker_calls);

    /* 3. the custom RMSNorm */
    named_input rms[2] = {
        {"x", input(g, TG_SHAPE(4, 6), 1.0, 0.3, true)},
        {"weight", input(g, TG_SHAPE(6), 0.5, 1.0, true)},
    };
    ctx.fn = &rms_norm_fn;
    failures += report("3. RMSNorm, a tg_function written here",
                       f_rms_norm, &ctx, rms, 2,
                       "y (4, 6), every element") != 1;

    /* 4. the same with sum(g * xhat) where mean(g * xhat) belongs */
    printf("The same RMSNorm with a broken backward: sum(g * xhat) instead "
           "of its mean,\nso one term of dx is 6 times too large. The "
           "library's report comes first:\n\n");
    ctx.fn = &rms_norm_broken_fn;
    failures += report("4. RMSNorm, broken backward (expected to FAIL)",
                       f_rms_norm, &ctx, rms, 2,
                       "y (4, 6), every element") != 0;

    tg_release(ctx.weighting);
    for (int i = 0; i < 3; i++) {
        tg_release(ln[i].t);
        tg_release(bn[i].t);
    }
    for (int i = 0; i < 2; i++)
        tg_release(rms[i].t);
    tg_generator_free(g);
    if (tg_live_tensors() != 0 || tg_tape_size() != 0) {
        printf("leak: %lld tensors, %lld tape nodes alive\n",
               (long long)tg_live_tensors(), (long long)tg_tape_size());
        failures++;
    }
    printf("%s\n", failures == 0
                       ? "As expected: the three backwards pass, the broken "
                         "one fails."
                       : "NOT as expected (see above).");
    return failures == 0 ? 0 : 1;
}
