/*
 * autograd/gradcheck.c - finite-difference gradient checks, with the
 * semantics of torch.autograd.gradcheck (SEMANTICS.md section 4).
 *
 * For f: inputs -> y, the Jacobian column of element k of input x is
 *   numerical:  (f(x + eps e_k) - f(x - eps e_k)) / (2 eps)   (central)
 * and its row for output element j is
 *   analytical: the gradient of x from a backward of the one-hot e_j.
 * Both are laid out as J[k][j] (input element, output element) and every
 * entry must satisfy |a - n| <= atol + rtol |n|. Central differences have
 * error O(eps^2 f'''), and rounding adds about ulp(f) / eps: with float64
 * and eps 1e-6 that is ~1e-10, far below atol.
 *
 * Fast mode compares one number instead of the matrix: v^T J u for random
 * unit vectors u (over all checked input elements) and v (over outputs),
 * numerically as a directional difference along u, analytically as
 * (backward of v) . u.
 *
 * Not here: the tape (tape.c). The inputs' own .grad are put aside while
 * checking and given back after.
 */
#include "tape.h"

#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

tg_gradcheck_options tg_gradcheck_defaults(void)
{
    return (tg_gradcheck_options){
        .eps = 1e-6, .atol = 1e-5, .rtol = 1e-3, .seed = 0};
}

/* opts with every field that was left 0 replaced by its default. */
static tg_gradcheck_options gradcheck_resolve(const tg_gradcheck_options *opts)
{
    tg_gradcheck_options d = tg_gradcheck_defaults();
    if (!opts)
        return d;
    tg_gradcheck_options o = *opts;
    o.eps = tg_option_or(o.eps, d.eps);
    o.atol = tg_option_or(o.atol, d.atol);
    o.rtol = tg_option_or(o.rtol, d.rtol);
    return o;
}

/* One input being checked. */
typedef struct checked {
    tg_tensor *x;
    int index;          // position in the caller's inputs
    int64_t first;      // its first row in the stacked Jacobian
    tg_tensor *stashed; // the caller's x->grad, given back at the end
} checked;

typedef struct check {
    tg_gradcheck_fn f;
    void *user;
    tg_tensor *const *inputs;
    int ninputs;
    checked in[TG_MAX_INPUTS * 4];
    int nin;
    int64_t rows;  // checked input elements, over all inputs
    int64_t cols;  // output elements
    tg_gradcheck_options o;
    tg_gradcheck_result *r;
} check;

/* Address of the C-order element k of x, whatever its strides. */
static char *element_ptr(const tg_tensor *x, int64_t k)
{
    int64_t off = x->offset;
    for (int d = x->ndim - 1; d >= 0; d--) {
        off += (k % x->shape[d]) * x->strides[d];
        k /= x->shape[d];
    }
    return (char *)x->storage->data + off * (int64_t)tg_dtype_size(x->dtype);
}

static double get(const tg_tensor *x, int64_t k)
{
    char *p = element_ptr(x, k);
    return x->dtype == TG_FLOAT32 ? *(float *)p : *(double *)p;
}

static void put(tg_tensor *x, int64_t k, double v)
{
    char *p = element_ptr(x, k);
    if (x->dtype == TG_FLOAT32)
        *(float *)p = (float)v;
    else
        *(double *)p = v;
}

static void fail(check *c, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c->r->message, sizeof c->r->message, fmt, ap);
    va_end(ap);
    c->r->passed = false;
    if (!c->o.quiet)
        fprintf(c->o.report ? c->o.report : stderr, "%s\n", c->r->message);
}

static int out_of_memory(void)
{
    tg_error("tg_gradcheck",
             "out of memory for the Jacobian work arrays\n"
             "  rule: the check keeps a few arrays of inputs x outputs "
             "doubles\n"
             "  hint: use smaller inputs or fast_mode");
    return -1;
}

/* f(inputs), or NULL with an error: f's own when it reported one. */
static tg_tensor *call_f(check *c)
{
    tg_clear_error(); // to tell an f that reported from one that did not
    /* f only reads its inputs; the check perturbs them between calls. */
    tg_tensor *out = c->f((const tg_tensor *const *)c->inputs, c->ninputs,
                          c->user);
    if (!out && !*tg_last_error())
        tg_error("tg_gradcheck",
                 "f returned NULL without saying why\n"
                 "  rule: f returns its output (a new reference), or NULL "
                 "after an error (a failing tapegrad op reports one)\n"
                 "  hint: look at the function given to tg_gradcheck");
    return out;
}

/* f(inputs) as doubles into y[cols] (gradients off). 0 or -1. */
static int eval(check *c, double *y)
{
    tg_no_grad_begin();
    tg_tensor *out = call_f(c);
    tg_no_grad_end();
    if (!out)
        return -1;
    int rc = 0;
    if (out->numel != c->cols) {
        tg_error("tg_gradcheck",
                 "f gave %lld element%s, then %lld\n"
                 "  rule: f must give the same shape on every call\n"
                 "  hint: f must not depend on anything but its inputs",
                 (long long)c->cols, tg_plural(c->cols),
                 (long long)out->numel);
        rc = -1;
    } else {
        rc = tg_to_f64_array(out, y);
    }
    tg_release(out);
    return rc;
}

/* One backward of `seed` (an output gradient, as doubles) through y:
 * stores the gradients of all checked inputs, stacked, into g[rows]. */
static int backward_into(check *c, tg_tensor *y, const double *seed,
                         double *g)
{
    for (int i = 0; i < c->nin; i++)
        tg_clear_grad(c->in[i].x);
    memset(g, 0, (size_t)c->rows * sizeof *g);
    if (!y->requires_grad)
        return 0; // y does not depend on the inputs: all zero
    tg_tensor *v = tg_from_array(seed, y->shape, y->ndim, TG_FLOAT64);
    tg_tensor *leaves[TG_MAX_INPUTS * 4];
    for (int i = 0; i < c->nin; i++)
        leaves[i] = c->in[i].x;
    /* only the checked inputs: other leaves' .grad stay untouched */
    tg_backward_options bo = {.grad = v, .keep_tape = true,
                              .inputs = leaves, .ninputs = c->nin};
    int rc = v ? tg_backward_ex(y, &bo) : -1;
    tg_release(v);
    for (int i = 0; rc == 0 && i < c->nin; i++) {
        tg_tensor *gr = c->in[i].x->grad;
        if (gr)
            rc = tg_to_f64_array(gr, g + c->in[i].first);
    }
    return rc;
}

/* The analytical Jacobian, J[k * cols + j], one backward per output. */
static int analytical(check *c, tg_tensor *y, double *J)
{
    double *seed = tg_calloc((size_t)c->cols + 1, sizeof *seed);
    double *g = tg_malloc((size_t)(c->rows ? c->rows : 1) * sizeof *g);
    int rc = seed && g ? 0 : out_of_memory();
    for (int64_t j = 0; rc == 0 && j < c->cols; j++) {
        seed[j] = 1.0;
        rc = backward_into(c, y, seed, g);
        seed[j] = 0.0;
        for (int64_t k = 0; rc == 0 && k < c->rows; k++)
            J[k * c->cols + j] = g[k];
    }
    free(seed);
    free(g);
    return rc;
}

/* The numerical Jacobian by central differences, J[k * cols + j]. */
static int numerical(check *c, double *J)
{
    double *plus = tg_malloc((size_t)c->cols * sizeof *plus + 1);
    double *minus = tg_malloc((size_t)c->cols * sizeof *minus + 1);
    int rc = plus && minus ? 0 : out_of_memory();
    for (int i = 0; rc == 0 && i < c->nin; i++) {
        tg_tensor *x = c->in[i].x;
        for (int64_t k = 0; rc == 0 && k < x->numel; k++) {
            double orig = get(x, k);
            put(x, k, orig + c->o.eps);
            rc = eval(c, plus);
            put(x, k, orig - c->o.eps);
            if (rc == 0)
                rc = eval(c, minus);
            put(x, k, orig);
            double *row = J + (c->in[i].first + k) * c->cols;
            for (int64_t j = 0; rc == 0 && j < c->cols; j++)
                row[j] = (plus[j] - minus[j]) / (2 * c->o.eps);
        }
    }
    free(plus);
    free(minus);
    return rc;
}

/* Which checked input a stacked row belongs to. */
static int input_of_row(const check *c, int64_t k)
{
    int i = 0;
    while (i + 1 < c->nin && c->in[i + 1].first <= k)
        i++;
    return i;
}

/* Fills the result's location and values for stacked row k (-1: none)
 * and output element j (-1: none). */
static void blame(check *c, int64_t k, int64_t j, double a, double n)
{
    tg_gradcheck_result *r = c->r;
    int i = k >= 0 ? input_of_row(c, k) : -1;
    r->input = i >= 0 ? c->in[i].index : -1;
    r->input_index = i >= 0 ? k - c->in[i].first : -1;
    r->output_index = j;
    r->analytical = a;
    r->numerical = n;
    r->error = fabs(a - n);
}

static bool within_tolerance(const check *c, double a, double n)
{
    return fabs(a - n) <= c->o.atol + c->o.rtol * fabs(n);
}

/* Compares the two Jacobians; reports the worst entry. */
static void compare(check *c, const double *A, const double *N)
{
    int64_t bad = 0, worst = -1;
    double worst_excess = 0;
    tg_gradcheck_result *r = c->r;
    r->entries = c->rows * c->cols;
    for (int64_t e = 0; e < c->rows * c->cols; e++) {
        double diff = fabs(A[e] - N[e]);
        double tol = c->o.atol + c->o.rtol * fabs(N[e]);
        double ratio = diff == 0 ? 0 : tol > 0 ? diff / tol : INFINITY;
        if (!(diff <= r->max_error)) // NaN sticks
            r->max_error = diff;
        if (!(ratio <= r->max_error_ratio))
            r->max_error_ratio = ratio;
        if (within_tolerance(c, A[e], N[e]))
            continue;
        double excess = fabs(A[e] - N[e]) - c->o.atol - c->o.rtol * fabs(N[e]);
        if (bad++ == 0 || !(excess <= worst_excess)) {
            worst = e;
            worst_excess = excess;
        }
    }
    if (!bad)
        return;
    int64_t k = worst / c->cols, j = worst % c->cols;
    blame(c, k, j, A[worst], N[worst]);
    const tg_tensor *x = c->in[input_of_row(c, k)].x;
    char s[TG_SHAPE_STR_MAX];
    fail(c,
         "tg_gradcheck: backward disagrees with finite differences\n"
         "  input %d (shape %s, %s), element %lld; output element %lld\n"
         "  analytical %.10g, numerical %.10g, |a - n| = %.3g > atol + "
         "rtol * |n| = %.3g\n"
         "  %lld of %lld Jacobian entries differ (eps %g, atol %g, "
         "rtol %g); the worst is shown",
         r->input, tg_shape_str(x, s), tg_dtype_name(x->dtype),
         (long long)r->input_index, (long long)j, r->analytical,
         r->numerical, r->error, c->o.atol + c->o.rtol * fabs(r->numerical),
         (long long)bad, (long long)(c->rows * c->cols), c->o.eps, c->o.atol,
         c->o.rtol);
}

/* The two checks beyond the Jacobian: a zero output gradient gives zero
 * input gradients, and the same backward twice gives the same numbers. */
static int zero_and_repeat(check *c, tg_tensor *y, const double *seed)
{
    int64_t n = c->rows ? c->rows : 1;
    double *g1 = tg_malloc((size_t)n * sizeof *g1);
    double *g2 = tg_malloc((size_t)n * sizeof *g2);
    double *zeros = tg_calloc((size_t)c->cols + 1, sizeof *zeros);
    int rc = g1 && g2 && zeros ? 0 : out_of_memory();
    if (rc == 0)
        rc = backward_into(c, y, zeros, g1);
    for (int64_t k = 0; rc == 0 && c->r->passed && k < c->rows; k++) {
        if (g1[k] == 0.0)
            continue;
        blame(c, k, -1, g1[k], 0.0);
        fail(c,
             "tg_gradcheck: a zero output gradient gave a nonzero input "
             "gradient\n"
             "  input %d, element %lld: %.10g instead of 0\n"
             "  (a backward must scale with the incoming gradient)",
             c->r->input, (long long)c->r->input_index, g1[k]);
    }
    if (rc == 0 && c->r->passed)
        rc = backward_into(c, y, seed, g1);
    if (rc == 0 && c->r->passed)
        rc = backward_into(c, y, seed, g2);
    for (int64_t k = 0; rc == 0 && c->r->passed && k < c->rows; k++) {
        if (g1[k] == g2[k] || (g1[k] != g1[k] && g2[k] != g2[k]))
            continue;
        blame(c, k, -1, g1[k], g2[k]);
        fail(c,
             "tg_gradcheck: backward is not repeatable\n"
             "  input %d, element %lld: %.17g the first time, %.17g the "
             "second\n"
             "  (the same backward must give the same numbers)",
             c->r->input, (long long)c->r->input_index, g1[k], g2[k]);
    }
    free(g1);
    free(g2);
    free(zeros);
    return rc;
}

/* Two analytical Jacobians must agree bit for bit. */
static void repeatable(check *c, const double *A1, const double *A2)
{
    for (int64_t e = 0; e < c->rows * c->cols; e++) {
        if (A1[e] == A2[e] || (A1[e] != A1[e] && A2[e] != A2[e]))
            continue;
        int64_t k = e / c->cols, j = e % c->cols;
        blame(c, k, j, A1[e], A2[e]);
        fail(c,
             "tg_gradcheck: backward is not repeatable\n"
             "  input %d, element %lld, output element %lld: %.17g the "
             "first time, %.17g the second\n"
             "  (the same backward must give the same numbers)",
             c->r->input, (long long)c->r->input_index, (long long)j,
             A1[e], A2[e]);
        return;
    }
}

/* u and v for fast mode: normal draws, scaled to unit length. */
static int unit_vector(tg_generator *gen, double *u, int64_t n)
{
    int64_t shape[1] = {n};
    tg_tensor *t = tg_randn_gen(gen, shape, 1, TG_FLOAT64);
    if (!t)
        return -1;
    tg_to_f64_array(t, u);
    tg_release(t);
    double norm = 0;
    for (int64_t k = 0; k < n; k++)
        norm += u[k] * u[k];
    norm = sqrt(norm);
    for (int64_t k = 0; k < n && norm > 0; k++)
        u[k] /= norm;
    return 0;
}

static int fast(check *c, tg_tensor *y)
{
    double *u = tg_malloc((size_t)c->rows * sizeof *u + 1);
    double *v = tg_malloc((size_t)c->cols * sizeof *v + 1);
    double *g = tg_malloc((size_t)c->rows * sizeof *g + 1);
    double *plus = tg_malloc((size_t)c->cols * sizeof *plus + 1);
    double *minus = tg_malloc((size_t)c->cols * sizeof *minus + 1);
    double *orig = tg_malloc((size_t)c->rows * sizeof *orig + 1);
    tg_generator *gen = tg_generator_new(c->o.seed);
    int rc = u && v && g && plus && minus && orig && gen ? 0
                                                        : out_of_memory();
    if (rc == 0)
        rc = unit_vector(gen, u, c->rows);
    if (rc == 0)
        rc = unit_vector(gen, v, c->cols);
    /* numerical: v . (f(x + eps u) - f(x - eps u)) / (2 eps) */
    bool saved = rc == 0;
    for (int i = 0; saved && i < c->nin; i++)
        for (int64_t k = 0; k < c->in[i].x->numel; k++)
            orig[c->in[i].first + k] = get(c->in[i].x, k);
    for (int sign = 1; rc == 0 && sign >= -1; sign -= 2) {
        for (int i = 0; i < c->nin; i++)
            for (int64_t k = 0; k < c->in[i].x->numel; k++) {
                int64_t row = c->in[i].first + k;
                put(c->in[i].x, k, orig[row] + sign * c->o.eps * u[row]);
            }
        rc = eval(c, sign > 0 ? plus : minus);
    }
    for (int i = 0; saved && i < c->nin; i++) // restore the inputs
        for (int64_t k = 0; k < c->in[i].x->numel; k++)
            put(c->in[i].x, k, orig[c->in[i].first + k]);
    double n = 0, a = 0;
    for (int64_t j = 0; rc == 0 && j < c->cols; j++)
        n += v[j] * (plus[j] - minus[j]) / (2 * c->o.eps);
    /* analytical: (v^T J) . u */
    if (rc == 0)
        rc = backward_into(c, y, v, g);
    for (int64_t k = 0; rc == 0 && k < c->rows; k++)
        a += g[k] * u[k];
    if (rc == 0 && !within_tolerance(c, a, n)) {
        blame(c, -1, -1, a, n);
        fail(c,
             "tg_gradcheck (fast mode): backward disagrees with finite "
             "differences\n"
             "  v^T J u: analytical %.10g, numerical %.10g, |a - n| = %.3g "
             "> atol + rtol * |n| = %.3g\n"
             "  (random unit u, v from seed %llu; run without fast_mode to "
             "see which entry is wrong)",
             a, n, c->r->error, c->o.atol + c->o.rtol * fabs(n),
             (unsigned long long)c->o.seed);
    }
    if (rc == 0 && c->r->passed)
        rc = zero_and_repeat(c, y, v);
    tg_generator_free(gen);
    free(u);
    free(v);
    free(g);
    free(plus);
    free(minus);
    free(orig);
    return rc;
}

/* Inputs that can be checked: leaves, float, no overlapping elements. */
static int collect(check *c)
{
    for (int i = 0; i < c->ninputs; i++) {
        tg_tensor *x = c->inputs[i];
        if (!x)
            return -1;
        if (!x->requires_grad)
            continue;
        if (x->grad_fn) {
            tg_error("tg_gradcheck",
                     "input %d was made by %s, it is not a leaf\n"
                     "  rule: gradcheck perturbs leaves and reads their "
                     ".grad\n"
                     "  hint: pass tg_detach(x) with requires_grad set",
                     i, x->grad_fn->name);
            return -1;
        }
        int d = tg_expanded_dim(x);
        if (d >= 0) {
            char s[TG_SHAPE_STR_MAX];
            tg_error("tg_gradcheck",
                     "input %d of shape %s has stride 0 in dim %d\n"
                     "  rule: each element must have its own memory, or "
                     "perturbing one perturbs several\n"
                     "  hint: pass tg_contiguous(x) (then set "
                     "requires_grad on it)",
                     i, tg_shape_str(x, s), d);
            return -1;
        }
        if (x->dtype == TG_FLOAT32 && !c->o.quiet)
            fprintf(c->o.report ? c->o.report : stderr,
                    "tg_gradcheck: warning: input %d is float32; the "
                    "default eps and tolerances are meant for float64 "
                    "(for float32 try eps 1e-3, atol 1e-2, rtol 1e-2)\n",
                    i);
        for (int j = 0; j < c->ninputs; j++) {
            const tg_tensor *o = c->inputs[j];
            if (j == i || !o || o->storage != x->storage)
                continue;
            tg_error("tg_gradcheck",
                     "inputs %d and %d share memory%s\n"
                     "  rule: perturbing an element of input %d must not "
                     "change any other input\n"
                     "  hint: pass a tensor once and use it twice inside f, "
                     "or pass tg_clone(x)",
                     i, j, o == x ? " (the same tensor twice)" : "", i);
            return -1;
        }
        checked *k = &c->in[c->nin++];
        k->x = x;
        k->index = i;
        k->first = c->rows;
        c->rows += x->numel;
    }
    if (c->nin == 0) {
        tg_error("tg_gradcheck",
                 "no input requires grad (%d given)\n"
                 "  rule: gradcheck checks the gradients of the inputs "
                 "with requires_grad\n"
                 "  hint: tg_set_requires_grad(x, true) on the inputs to "
                 "check",
                 c->ninputs);
        return -1;
    }
    return 0;
}

/* 0 when every element of f's output y (float, at the inputs as given) is
 * finite. A NaN or Inf there has no derivative to check, and would only
 * show up later as a mismatch against a "numerical nan". */
static int finite_output(const tg_tensor *y)
{
    for (int64_t j = 0; j < y->numel; j++) {
        double v = get(y, j);
        if (isfinite(v))
            continue;
        char s[TG_SHAPE_STR_MAX];
        tg_error("tg_gradcheck",
                 "f's output is %s at element %lld (output shape %s), at "
                 "the inputs as given\n"
                 "  rule: a gradient can only be checked where f is "
                 "finite\n"
                 "  hint: choose inputs inside f's domain (tg_log and "
                 "tg_sqrt need positive inputs, a division a nonzero "
                 "divisor)",
                 isnan(v) ? "nan" : v > 0 ? "inf" : "-inf", (long long)j,
                 tg_shape_str(y, s));
        return -1;
    }
    return 0;
}

/* The checks of tg_gradcheck on a prepared c: 1, 0 or -1. */
static int gradcheck(check *c)
{
    if (!c->f || !c->inputs || c->ninputs < 1 ||
        c->ninputs > TG_MAX_INPUTS * 4) {
        tg_error("tg_gradcheck",
                 "no function or no inputs (f %s, %d input%s)\n"
                 "  rule: gradcheck needs f and 1 to %d inputs\n"
                 "  hint: tg_gradcheck(f, user, inputs, ninputs, NULL, "
                 "&result)",
                 c->f ? "given" : "NULL", c->ninputs, tg_plural(c->ninputs),
                 TG_MAX_INPUTS * 4);
        return -1;
    }
    if (!(c->o.eps > 0) || !(c->o.atol >= 0) || !(c->o.rtol >= 0)) {
        tg_error("tg_gradcheck",
                 "eps %g, atol %g, rtol %g\n"
                 "  rule: eps must be > 0 and the tolerances >= 0\n"
                 "  hint: start from tg_gradcheck_defaults()",
                 c->o.eps, c->o.atol, c->o.rtol);
        return -1;
    }
    if (!tg_is_grad_enabled()) {
        tg_error("tg_gradcheck",
                 "gradients are disabled here\n"
                 "  rule: the analytical Jacobian needs the tape, which "
                 "records nothing inside tg_no_grad_begin/end\n"
                 "  hint: call tg_gradcheck outside the no_grad scope");
        return -1;
    }
    if (collect(c) < 0)
        return -1;
    for (int i = 0; i < c->nin; i++) {
        c->in[i].stashed = c->in[i].x->grad;
        c->in[i].x->grad = NULL;
    }

    int rc = -1;
    double *A = NULL, *N = NULL;
    tg_tensor *y = call_f(c);
    if (!y)
        goto out;
    if (!tg_dtype_is_float(y->dtype)) {
        tg_error("tg_gradcheck",
                 "f gave an %s tensor\n"
                 "  rule: only float outputs have gradients\n"
                 "  hint: check the op you meant to differentiate",
                 tg_dtype_name(y->dtype));
        goto out;
    }
    c->cols = y->numel;
    if (finite_output(y) < 0)
        goto out;
    if (c->o.fast_mode) {
        rc = fast(c, y);
        goto out;
    }
    size_t n = (size_t)(c->rows * c->cols) + 1;
    A = tg_malloc(n * sizeof *A);
    N = tg_malloc(n * sizeof *N);
    if (!A || !N) {
        tg_error("tg_gradcheck",
                 "out of memory for two %lld x %lld Jacobians\n"
                 "  rule: the full check stores both Jacobians\n"
                 "  hint: use smaller inputs or fast_mode",
                 (long long)c->rows, (long long)c->cols);
        goto out;
    }
    rc = analytical(c, y, A);
    if (rc == 0)
        rc = numerical(c, N);
    if (rc == 0)
        compare(c, A, N);
    if (rc == 0 && c->r->passed) {
        /* a zero gradient gives zero, then the whole analytical pass
         * again, compared exactly (N is free now) */
        double *ones = tg_malloc((size_t)c->cols * sizeof *ones + 1);
        rc = ones ? 0 : out_of_memory();
        for (int64_t j = 0; rc == 0 && j < c->cols; j++)
            ones[j] = 1.0;
        if (rc == 0)
            rc = zero_and_repeat(c, y, ones);
        free(ones);
        if (rc == 0 && c->r->passed)
            rc = analytical(c, y, N);
        if (rc == 0 && c->r->passed)
            repeatable(c, A, N);
    }
out:
    free(A);
    free(N);
    tg_release(y);
    for (int i = 0; i < c->nin; i++) {
        tg_release(c->in[i].x->grad);
        c->in[i].x->grad = c->in[i].stashed;
    }
    if (rc < 0)
        return -1;
    return c->r->passed ? 1 : 0;
}

int tg_gradcheck(tg_gradcheck_fn f, void *user, tg_tensor *const *inputs,
                 int ninputs, const tg_gradcheck_options *opts,
                 tg_gradcheck_result *result)
{
    tg_gradcheck_result local;
    check c = {.f = f, .user = user, .inputs = inputs, .ninputs = ninputs,
               .o = gradcheck_resolve(opts),
               .r = result ? result : &local};
    memset(c.r, 0, sizeof *c.r);
    c.r->passed = true;
    c.r->input = -1;
    c.r->input_index = c.r->output_index = -1;
    for (int i = 0; inputs && i < ninputs; i++)
        tg_check_alive("tg_gradcheck", inputs[i]);
    int rc = gradcheck(&c);
    if (rc < 0) // an error is not a pass, whatever was compared before it
        c.r->passed = false;
    return rc;
}
