/*
 * tests/autograd/test_conv.c - tg_conv2d, tg_max_pool2d and tg_avg_pool2d,
 * forward and backward, against:
 *   - PyTorch 1.13 (tests/reference/torch-conv-vectors.txt, written by
 *     scripts/reference/torch_conv_vectors.py): float64 inputs, outputs and
 *     the gradients of sum(y * dy), for stride, padding, dilation, groups
 *     and depthwise cases, and pooling windows with ties;
 *   - the NumPy references of scripts/reference/gen_conv.py (exact sums,
 *     rounded once), float64 and float32;
 *   - the plain-loop reference kernels (TG_KERNELS_REFERENCE) against the
 *     im2col path, on a larger case and on non-contiguous inputs.
 * Each comparison runs on both kernels.
 *
 * Tolerances. float64: 1e-12 (the sums have a few dozen terms of size 1,
 * each rounding adds about 1e-16). float32 on the im2col path: the gemm
 * sums K <= 27 float32 products of size <= 1 in float32, an error below
 * K * 2^-24 * sum |products| <= 27 * 6e-8 * 27 = 4.4e-5; the gradients
 * have sums of at most a few hundred such terms. 1e-4 absolute covers
 * both; the plain loops sum in double and round once (1 ulp, 1e-6
 * relative).
 */
#include "../common.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

static tg_tensor *check(tg_tensor *t)
{
    cr_assert_not_null(t, "%s", tg_last_error());
    return t;
}

/* ------------------------------------------------------- PyTorch vectors */

/* The values of the vector titled `title` (first number of each line). */
static int64_t torch_values(const char *title, double *v, int64_t max)
{
    tg_test_section s;
    tg_test_section_open(&s, "torch-conv-vectors.txt", title);
    int64_t n = 0;
    for (const char *line; (line = tg_test_section_next(&s));) {
        if (line[0] != '#') {
            cr_assert_lt(n, max);
            v[n++] = strtod(line, NULL);
        }
    }
    tg_test_section_close(&s);
    cr_assert_gt(n, 0, "no vector titled \"%s\"", title);
    return n;
}

/* PyTorch's vector as a float64 tensor of the given shape, converted to
 * dtype. New reference. */
static tg_tensor *torch_tensor(const char *title, const int64_t *shape,
                               int ndim, tg_dtype dtype)
{
    static double v[4096];
    int64_t n = torch_values(title, v, 4096), numel = 1;
    for (int d = 0; d < ndim; d++)
        numel *= shape[d];
    cr_assert_eq(n, numel, "%s: %lld values for %lld elements", title,
                 (long long)n, (long long)numel);
    tg_tensor *t = check(tg_from_array(v, shape, ndim, TG_FLOAT64));
    if (dtype == TG_FLOAT64)
        return t;
    tg_tensor *c = check(tg_to_dtype(t, dtype));
    tg_release(t);
    return c;
}

/* True when actual is within atol + rtol |expected| of PyTorch's vector
 * `title` everywhere (expected is read in float64, whatever actual's
 * dtype); the worst element in report otherwise. */
static bool torch_close(const tg_tensor *actual, const char *title,
                        double rtol, double atol, char *report, size_t size)
{
    tg_tensor *e = torch_tensor(title, actual->shape, actual->ndim,
                                TG_FLOAT64);
    bool ok = tg_test_close(actual, e, rtol, atol, false, report, size);
    tg_release(e);
    return ok;
}

#define assert_torch(actual, title, rtol, atol)                             \
    do {                                                                    \
        char report_[1024];                                                 \
        cr_assert(torch_close((actual), (title), (rtol), (atol), report_,   \
                              sizeof report_),                              \
                  "%s: %s", (title), report_);                              \
    } while (0)

/* ------------------------------------------------------------- running */

/* The results of one forward and backward: y and the gradients of
 * sum(y * dy) (db NULL without a bias). New references. */
typedef struct results {
    tg_tensor *y, *dx, *dw, *db;
} results;

static void results_release(results *r)
{
    tg_release(r->y);
    tg_release(r->dx);
    tg_release(r->dw);
    tg_release(r->db);
}

/* conv2d of copies of x, w, b made leaves that require grad, then the
 * backward of sum(y * dy). Arguments borrowed (b may be NULL). */
static results run_conv(const tg_tensor *x, const tg_tensor *w,
                        const tg_tensor *b, const tg_conv2d_options *o,
                        const tg_tensor *dy)
{
    tg_tensor *xl = check(tg_clone(x)), *wl = check(tg_clone(w));
    tg_tensor *bl = b ? check(tg_clone(b)) : NULL;
    tg_set_requires_grad(xl, true);
    tg_set_requires_grad(wl, true);
    if (bl)
        tg_set_requires_grad(bl, true);
    tg_tensor *y = check(tg_conv2d(xl, wl, bl, o));
    cr_assert_str_eq(tg_grad_fn_name(y), "ConvolutionBackward0");
    tg_tensor *yd = check(tg_mul(y, dy));
    tg_tensor *loss = check(tg_sum(yd, NULL, 0, false));
    cr_assert_eq(tg_backward(loss), 0, "%s", tg_last_error());
    results r = {check(tg_detach(y)), tg_retain(xl->grad),
                 tg_retain(wl->grad), bl ? tg_retain(bl->grad) : NULL};
    cr_assert(r.dx && r.dw && (!bl || r.db));
    tg_release(loss);
    tg_release(yd);
    tg_release(y);
    tg_release(bl);
    tg_release(wl);
    tg_release(xl);
    return r;
}

/* The same for a pool (max when is_max). */
static results run_pool(const tg_tensor *x, const int64_t k[2],
                        const int64_t s[2], const int64_t p[2], bool is_max,
                        const tg_tensor *dy)
{
    tg_tensor *xl = check(tg_clone(x));
    tg_set_requires_grad(xl, true);
    tg_tensor *y = check(is_max ? tg_max_pool2d(xl, k, s, p)
                                : tg_avg_pool2d(xl, k, s, p));
    cr_assert_str_eq(tg_grad_fn_name(y), is_max
                                             ? "MaxPool2DWithIndicesBackward0"
                                             : "AvgPool2DBackward0");
    tg_tensor *yd = check(tg_mul(y, dy));
    tg_tensor *loss = check(tg_sum(yd, NULL, 0, false));
    cr_assert_eq(tg_backward(loss), 0, "%s", tg_last_error());
    results r = {check(tg_detach(y)), tg_retain(xl->grad), NULL, NULL};
    tg_release(loss);
    tg_release(yd);
    tg_release(y);
    tg_release(xl);
    return r;
}

/* Element i of a contiguous float64 tensor. */
static double at(const tg_tensor *t, int64_t i)
{
    cr_assert(t->dtype == TG_FLOAT64 && tg_is_contiguous(t) && i < t->numel);
    return tg_data_f64(t)[i];
}

static const tg_kernels KERNELS[] = {TG_KERNELS_FAST, TG_KERNELS_REFERENCE};

/* ---------------------------------------------------- against PyTorch */

/* The cases of torch_conv_vectors.py, in its order. */
typedef struct conv_case {
    const char *name;
    int64_t x[4], w[4];
    bool bias;
    tg_conv2d_options o;
} conv_case;

static const conv_case TORCH_CONV[] = {
    {"plain", {2, 3, 6, 5}, {4, 3, 3, 3}, true, {{1, 1}, {0, 0}, {1, 1}, 1}},
    {"stride_pad", {2, 2, 7, 6}, {3, 2, 3, 2}, true,
     {{2, 1}, {1, 2}, {1, 1}, 1}},
    {"dilation", {1, 2, 8, 7}, {2, 2, 3, 2}, true,
     {{1, 2}, {1, 0}, {2, 3}, 1}},
    {"groups", {2, 4, 5, 6}, {6, 2, 2, 3}, false,
     {{1, 2}, {1, 1}, {1, 1}, 2}},
    {"depthwise", {1, 3, 5, 5}, {3, 1, 3, 3}, true,
     {{2, 2}, {1, 1}, {1, 1}, 3}},
};
#define NTORCH (sizeof TORCH_CONV / sizeof *TORCH_CONV)

/* The inputs of case c in dtype; b NULL without a bias; dy in y's shape
 * as PyTorch computed it. New references. */
static void torch_inputs(const conv_case *c, tg_dtype dtype, tg_tensor **x,
                         tg_tensor **w, tg_tensor **b, tg_tensor **dy,
                         char title[][64])
{
    snprintf(title[0], 64, "conv %s x", c->name);
    snprintf(title[1], 64, "conv %s w", c->name);
    snprintf(title[2], 64, "conv %s b", c->name);
    snprintf(title[3], 64, "conv %s dy", c->name);
    *x = torch_tensor(title[0], c->x, 4, dtype);
    *w = torch_tensor(title[1], c->w, 4, dtype);
    *b = c->bias ? torch_tensor(title[2], c->w, 1, dtype) : NULL;
    int64_t ho = (c->x[2] + 2 * c->o.padding[0] -
                  c->o.dilation[0] * (c->w[2] - 1) - 1) / c->o.stride[0] + 1;
    int64_t wo = (c->x[3] + 2 * c->o.padding[1] -
                  c->o.dilation[1] * (c->w[3] - 1) - 1) / c->o.stride[1] + 1;
    *dy = torch_tensor(title[3], (int64_t[]){c->x[0], c->w[0], ho, wo}, 4,
                       dtype);
}

static void check_torch_conv(tg_dtype dtype, tg_kernels k, double rtol,
                             double atol)
{
    cr_assert_eq(tg_set_kernels(k), 0);
    for (size_t i = 0; i < NTORCH; i++) {
        const conv_case *c = &TORCH_CONV[i];
        tg_tensor *x, *w, *b, *dy;
        char title[4][64], t[64];
        torch_inputs(c, dtype, &x, &w, &b, &dy, title);
        results r = run_conv(x, w, b, &c->o, dy);
        cr_assert_eq(r.y->dtype, dtype);
        snprintf(t, sizeof t, "conv %s y", c->name);
        assert_torch(r.y, t, rtol, atol);
        snprintf(t, sizeof t, "conv %s dx", c->name);
        assert_torch(r.dx, t, rtol, atol);
        snprintf(t, sizeof t, "conv %s dw", c->name);
        assert_torch(r.dw, t, rtol, atol);
        if (c->bias) {
            snprintf(t, sizeof t, "conv %s db", c->name);
            assert_torch(r.db, t, rtol, atol);
        }
        results_release(&r);
        tg_release(x);
        tg_release(w);
        tg_release(b);
        tg_release(dy);
    }
    tg_set_kernels(TG_KERNELS_FAST);
}

TG_TEST(conv, matches_torch_f64)
{
    for (size_t k = 0; k < 2; k++)
        check_torch_conv(TG_FLOAT64, KERNELS[k], 1e-12, 1e-12);
}

TG_TEST(conv, matches_torch_f32)
{
    /* float32 inputs rounded from PyTorch's float64 ones: the difference
     * is the rounding of the inputs (2^-24 relative each) plus the float32
     * sums (see the top of the file) */
    for (size_t k = 0; k < 2; k++)
        check_torch_conv(TG_FLOAT32, KERNELS[k], 1e-4, 1e-4);
}

/* A true convolution (the kernel flipped) is what a reader might expect
 * from the name; PyTorch computes the cross-correlation, and the reference
 * must tell the two apart. A result off by 1e-9 must fail too. */
TG_TEST(conv, torch_reference_catches_wrong_answers)
{
    const conv_case *c = &TORCH_CONV[0];
    tg_tensor *x, *w, *b, *dy;
    char title[4][64], report[1024];
    torch_inputs(c, TG_FLOAT64, &x, &w, &b, &dy, title);
    tg_tensor *wf = check(tg_clone(w));
    double *v = tg_data_f64(wf);
    const double *src = tg_data_f64(w);
    int64_t kh = c->w[2], kw = c->w[3];
    for (int64_t oc = 0; oc < c->w[0] * c->w[1]; oc++)
        for (int64_t i = 0; i < kh; i++)
            for (int64_t j = 0; j < kw; j++)
                v[(oc * kh + i) * kw + j] =
                    src[(oc * kh + kh - 1 - i) * kw + kw - 1 - j];
    tg_tensor *flipped = check(tg_conv2d(x, wf, b, &c->o));
    cr_assert(!torch_close(flipped, "conv plain y", 1e-6, 1e-6, report,
                           sizeof report));
    tg_tensor *y = check(tg_conv2d(x, w, b, &c->o));
    cr_assert(torch_close(y, "conv plain y", 1e-12, 1e-12, report,
                          sizeof report), "%s", report);
    tg_data_f64(y)[7] += 1e-9;
    cr_assert(!torch_close(y, "conv plain y", 1e-12, 1e-12, report,
                           sizeof report));
    cr_assert(strstr(report, "7") != NULL, "%s", report);
    tg_release(y);
    tg_release(flipped);
    tg_release(wf);
    tg_release(x);
    tg_release(w);
    tg_release(b);
    tg_release(dy);
}

/* The pooling cases of torch_conv_vectors.py: small integers, so most
 * windows hold ties, and the gradient shows which one PyTorch picks. */
typedef struct pool_case {
    const char *name;
    int ndim;
    int64_t x[4];
    int64_t k[2], s[2], p[2];
} pool_case;

static const pool_case TORCH_POOL[] = {
    {"k3s2p1", 4, {2, 2, 7, 6}, {3, 3}, {2, 2}, {1, 1}},
    {"k2", 4, {1, 3, 6, 4}, {2, 2}, {2, 2}, {0, 0}},
    {"k3x2s1p1x0", 3, {3, 5, 5}, {3, 2}, {1, 1}, {1, 0}},
};

TG_TEST(pool, matches_torch_with_ties)
{
    for (size_t i = 0; i < sizeof TORCH_POOL / sizeof *TORCH_POOL; i++) {
        const pool_case *c = &TORCH_POOL[i];
        char t[64];
        snprintf(t, sizeof t, "pool %s x", c->name);
        tg_tensor *x = torch_tensor(t, c->x, c->ndim, TG_FLOAT64);
        for (int m = 0; m < 2; m++) {
            const char *op = m == 0 ? "max" : "avg";
            int64_t ys[4];
            for (int d = 0; d < c->ndim; d++)
                ys[d] = c->x[d];
            ys[c->ndim - 2] = (c->x[c->ndim - 2] + 2 * c->p[0] - c->k[0]) /
                                  c->s[0] + 1;
            ys[c->ndim - 1] = (c->x[c->ndim - 1] + 2 * c->p[1] - c->k[1]) /
                                  c->s[1] + 1;
            snprintf(t, sizeof t, "pool %s %s dy", op, c->name);
            tg_tensor *dy = torch_tensor(t, ys, c->ndim, TG_FLOAT64);
            results r = run_pool(x, c->k, c->s, c->p, m == 0, dy);
            snprintf(t, sizeof t, "pool %s %s y", op, c->name);
            assert_torch(r.y, t, 0, m == 0 ? 0 : 1e-15); // max is exact
            snprintf(t, sizeof t, "pool %s %s dx", op, c->name);
            assert_torch(r.dx, t, 1e-14, 1e-15);
            results_release(&r);
            tg_release(dy);
        }
        tg_release(x);
    }
}

/* ----------------------------------------------------- against NumPy */

static tg_tensor *ref(const char *fmt, const char *name)
{
    char buf[96];
    snprintf(buf, sizeof buf, fmt, name);
    return tg_test_load_ref(buf);
}

static void check_numpy_conv(const char *name, const tg_conv2d_options *o,
                             bool bias, double rtol, double atol)
{
    for (size_t k = 0; k < 2; k++) {
        cr_assert_eq(tg_set_kernels(KERNELS[k]), 0);
        tg_tensor *x = ref("conv_%s_x", name), *w = ref("conv_%s_w", name);
        tg_tensor *b = bias ? ref("conv_%s_b", name) : NULL;
        tg_tensor *dy = ref("conv_%s_dy", name);
        results r = run_conv(x, w, b, o, dy);
        char t[96];
        snprintf(t, sizeof t, "conv_%s_y", name);
        tg_test_check_ref(r.y, t, rtol, atol);
        snprintf(t, sizeof t, "conv_%s_dx", name);
        tg_test_check_ref(r.dx, t, rtol, atol);
        snprintf(t, sizeof t, "conv_%s_dw", name);
        tg_test_check_ref(r.dw, t, rtol, atol);
        if (bias) {
            snprintf(t, sizeof t, "conv_%s_db", name);
            tg_test_check_ref(r.db, t, rtol, atol);
        }
        tg_release(x);
        tg_release(w);
        tg_release(b);
        tg_release(dy);
    }
    tg_set_kernels(TG_KERNELS_FAST);
}

TG_TEST(conv, matches_numpy)
{
    check_numpy_conv("s2p1", &(tg_conv2d_options){.stride = {2, 2},
                                                  .padding = {1, 1}},
                     true, 1e-13, 1e-13);
    check_numpy_conv("dil_groups",
                     &(tg_conv2d_options){.stride = {1, 2},
                                          .padding = {2, 1},
                                          .dilation = {2, 2}, .groups = 2},
                     false, 1e-13, 1e-13);
    check_numpy_conv("s2p1_f32", &(tg_conv2d_options){.stride = {2, 2},
                                                      .padding = {1, 1}},
                     true, 1e-5, 1e-4);
}

static void check_numpy_pool(const char *name, const int64_t k[2],
                             const int64_t s[2], const int64_t p[2],
                             double rtol, double atol)
{
    tg_tensor *x = ref("pool_%s_x", name);
    for (int m = 0; m < 2; m++) {
        char t[96];
        const char *op = m == 0 ? "max" : "avg";
        snprintf(t, sizeof t, "pool_%s_%s_dy", name, op);
        tg_tensor *dy = tg_test_load_ref(t);
        results r = run_pool(x, k, s, p, m == 0, dy);
        snprintf(t, sizeof t, "pool_%s_%s_y", name, op);
        tg_test_check_ref(r.y, t, rtol, atol);
        snprintf(t, sizeof t, "pool_%s_%s_dx", name, op);
        tg_test_check_ref(r.dx, t, rtol, atol);
        tg_release(dy);
    }
    tg_release(x);
}

TG_TEST(pool, matches_numpy)
{
    /* the pools sum at most 9 terms in double and round once: the
     * references, also rounded once from exact sums, agree to an ulp */
    check_numpy_pool("k3s2p1", (int64_t[]){3, 3}, (int64_t[]){2, 2},
                     (int64_t[]){1, 1}, 1e-15, 1e-16);
    check_numpy_pool("k2x3s1", (int64_t[]){2, 3}, (int64_t[]){1, 2},
                     (int64_t[]){1, 0}, 1e-15, 1e-16);
    check_numpy_pool("k3s2p1_f32", (int64_t[]){3, 3}, (int64_t[]){2, 2},
                     (int64_t[]){1, 1}, 1.2e-7, 1e-8);
}

/* -------------------------------------------- im2col against the loops */

/* The im2col path against the plain loops on one case: x (shape x),
 * weight (shape w), options o, random values from seed, dy of y's shape;
 * x and w as strided views when non_contiguous. */
typedef struct loops_case {
    int64_t x[4], w[4];
    tg_conv2d_options o;
    uint64_t seed;
} loops_case;

static void fast_vs_loops(const loops_case *c, tg_dtype dtype,
                          bool non_contiguous, double rtol, double atol)
{
    const tg_conv2d_options *o = &c->o;
    int64_t ho = (c->x[2] + 2 * o->padding[0] -
                  o->dilation[0] * (c->w[2] - 1) - 1) / o->stride[0] + 1;
    int64_t wo = (c->x[3] + 2 * o->padding[1] -
                  o->dilation[1] * (c->w[3] - 1) - 1) / o->stride[1] + 1;
    tg_generator *g = tg_generator_new(c->seed);
    tg_tensor *x0 = check(tg_randn_gen(g, c->x, 4, dtype));
    tg_tensor *w0 = check(tg_randn_gen(g, c->w, 4, dtype));
    tg_tensor *b = check(tg_randn_gen(g, &c->w[0], 1, dtype));
    tg_tensor *dy = check(
        tg_randn_gen(g, TG_SHAPE(c->x[0], c->w[0], ho, wo), dtype));
    tg_tensor *x = non_contiguous ? check(tg_test_non_contiguous(x0, false))
                                  : tg_retain(x0);
    tg_tensor *w = non_contiguous ? check(tg_test_non_contiguous(w0, true))
                                  : tg_retain(w0);
    cr_assert_eq(tg_set_kernels(TG_KERNELS_REFERENCE), 0);
    results want = run_conv(x0, w0, b, o, dy);
    cr_assert_eq(tg_set_kernels(TG_KERNELS_FAST), 0);
    results got = run_conv(x, w, b, o, dy);
    tg_assert_close(got.y, want.y, rtol, atol);
    tg_assert_close(got.dx, want.dx, rtol, atol);
    tg_assert_close(got.dw, want.dw, rtol, atol);
    tg_assert_close(got.db, want.db, rtol, atol);
    results_release(&want);
    results_release(&got);
    tg_release(x);
    tg_release(w);
    tg_release(x0);
    tg_release(w0);
    tg_release(b);
    tg_release(dy);
    tg_generator_free(g);
}

/* A case larger than the references, with groups, padding, stride and
 * dilation, on a batch of n images. The im2col path takes the images in
 * chunks of 256 / 30 = 8 here (conv.c, CONV_CHUNK_COLS), so n = 20 makes
 * chunks of 8, 8 and 4. */
static void fast_vs_reference(tg_dtype dtype, bool non_contiguous,
                              int64_t n, double rtol, double atol)
{
    loops_case c = {{n, 6, 11, 9}, {8, 3, 3, 2},
                    {.stride = {2, 2}, .padding = {1, 2},
                     .dilation = {2, 1}, .groups = 2}, 5};
    fast_vs_loops(&c, dtype, non_contiguous, rtol, atol);
}

TG_TEST(conv, im2col_matches_plain_loops)
{
    fast_vs_reference(TG_FLOAT64, false, 3, 1e-12, 1e-12);
    fast_vs_reference(TG_FLOAT64, true, 3, 1e-12, 1e-12);
    fast_vs_reference(TG_FLOAT64, false, 20, 1e-12, 1e-12);
    /* randn values: sums of 18 products of size about 1 (forward), 40
     * (dw; 270 at n = 20): a float32 sum's error stays below 1e-4 */
    fast_vs_reference(TG_FLOAT32, false, 3, 1e-4, 1e-4);
    fast_vs_reference(TG_FLOAT32, true, 3, 1e-4, 1e-4);
    fast_vs_reference(TG_FLOAT32, true, 20, 1e-4, 1e-4);
}

/* Stride 1 with the width kept ("same" padding, Wo == W) takes im2col's
 * shifted-copy path (conv.c, same_width_cols): against the plain loops,
 * with dilation, a kernel taller than wide, groups, and images shorter
 * than the kernel's reach (every row of some cols rows in the padding). */
static void same_width_vs_reference(tg_dtype dtype, int64_t h, int64_t kh,
                                    int64_t kw, int64_t dil, double tol)
{
    loops_case c = {{5, 4, h, 7}, {6, 2, kh, kw},
                    {.stride = {1, 1},
                     .padding = {dil * (kh - 1) / 2, dil * (kw - 1) / 2},
                     .dilation = {dil, dil}, .groups = 2}, 9};
    cr_assert_eq(7 + 2 * c.o.padding[1] - dil * (kw - 1), 7,
                 "not the same-width case");
    fast_vs_loops(&c, dtype, false, tol, tol);
}

TG_TEST(conv, same_width_im2col_matches_plain_loops)
{
    same_width_vs_reference(TG_FLOAT64, 6, 3, 3, 1, 1e-12);
    same_width_vs_reference(TG_FLOAT64, 6, 5, 3, 2, 1e-12);
    same_width_vs_reference(TG_FLOAT64, 2, 5, 5, 2, 1e-12);
    same_width_vs_reference(TG_FLOAT32, 6, 3, 3, 1, 1e-4);
}

/* ------------------------------------------------------------- details */

TG_TEST(conv, options_zero_null_and_defaults_agree)
{
    tg_tensor *x = check(tg_randn(TG_SHAPE(2, 3, 5, 5), TG_FLOAT64));
    tg_tensor *w = check(tg_randn(TG_SHAPE(4, 3, 3, 3), TG_FLOAT64));
    tg_conv2d_options d = tg_conv2d_defaults();
    cr_assert(d.stride[0] == 1 && d.stride[1] == 1 && d.padding[0] == 0 &&
              d.padding[1] == 0 && d.dilation[0] == 1 &&
              d.dilation[1] == 1 && d.groups == 1);
    tg_tensor *a = check(tg_conv2d(x, w, NULL, NULL));
    tg_tensor *b = check(tg_conv2d(x, w, NULL, &(tg_conv2d_options){0}));
    tg_tensor *c = check(tg_conv2d(x, w, NULL, &d));
    cr_assert_eq(a->shape[2], 3);
    tg_assert_close(b, a, 0, 0);
    tg_assert_close(c, a, 0, 0);
    tg_tensor *same = check(
        tg_conv2d(x, w, NULL, &(tg_conv2d_options){.padding = {1, 1}}));
    cr_assert(same->shape[2] == 5 && same->shape[3] == 5);
    tg_release(same);
    tg_release(a);
    tg_release(b);
    tg_release(c);
    tg_release(x);
    tg_release(w);
}

/* One (C, H, W) image gives what a batch of one gives, without the
 * batch dim, and its gradient flows back to the 3-D input. */
TG_TEST(conv, unbatched_image)
{
    tg_tensor *x = check(tg_randn(TG_SHAPE(2, 6, 5), TG_FLOAT64));
    tg_tensor *w = check(tg_randn(TG_SHAPE(3, 2, 3, 3), TG_FLOAT64));
    tg_set_requires_grad(x, true);
    tg_tensor *y = check(tg_conv2d(x, w, NULL, NULL));
    cr_assert(y->ndim == 3 && y->shape[0] == 3 && y->shape[1] == 4 &&
              y->shape[2] == 3);
    tg_tensor *x4 = check(tg_unsqueeze(x, 0));
    tg_tensor *y4 = check(tg_conv2d(x4, w, NULL, NULL));
    tg_tensor *y3 = check(tg_squeeze(y4, 0));
    tg_assert_close(y, y3, 0, 0);
    tg_tensor *loss = check(tg_sum(y, NULL, 0, false));
    cr_assert_eq(tg_backward(loss), 0);
    cr_assert(x->grad && x->grad->ndim == 3);
    tg_tensor *m = check(tg_max_pool2d(x, (int64_t[]){2, 2}, NULL, NULL));
    cr_assert(m->ndim == 3 && m->shape[1] == 3 && m->shape[2] == 2);
    tg_release(m);
    tg_release(loss);
    tg_release(y3);
    tg_release(y4);
    tg_release(x4);
    tg_release(y);
    tg_release(x);
    tg_release(w);
}

TG_TEST(conv, no_grad_records_nothing)
{
    tg_tensor *x = check(tg_randn(TG_SHAPE(1, 1, 4, 4), TG_FLOAT32));
    tg_tensor *w = check(tg_randn(TG_SHAPE(1, 1, 2, 2), TG_FLOAT32));
    tg_set_requires_grad(w, true);
    tg_no_grad_begin();
    tg_tensor *y = check(tg_conv2d(x, w, NULL, NULL));
    tg_tensor *p = check(tg_max_pool2d(y, (int64_t[]){3, 3}, NULL, NULL));
    tg_no_grad_end();
    cr_assert(!y->requires_grad && !y->grad_fn && !p->grad_fn);
    tg_release(p);
    tg_release(y);
    tg_release(x);
    tg_release(w);
}

/* Only the input that needs a gradient gets one; the others are not even
 * computed (x is not saved when the weight needs none). */
TG_TEST(conv, gradient_of_one_input_only)
{
    for (int which = 0; which < 3; which++) {
        tg_tensor *in[3] = {
            check(tg_randn(TG_SHAPE(2, 2, 5, 5), TG_FLOAT64)),
            check(tg_randn(TG_SHAPE(2, 2, 3, 3), TG_FLOAT64)),
            check(tg_randn(TG_SHAPE(2), TG_FLOAT64))};
        tg_set_requires_grad(in[which], true);
        tg_tensor *y = check(tg_conv2d(in[0], in[1], in[2], NULL));
        tg_tensor *loss = check(tg_sum(y, NULL, 0, false));
        cr_assert_eq(tg_backward(loss), 0, "%s", tg_last_error());
        for (int k = 0; k < 3; k++)
            cr_assert_eq(in[k]->grad != NULL, k == which);
        /* d sum(y) / db = the number of outputs per channel */
        if (which == 2)
            cr_assert_eq(at(in[2]->grad, 0), 2 * 3 * 3);
        tg_release(loss);
        tg_release(y);
        for (int k = 0; k < 3; k++)
            tg_release(in[k]);
    }
}

/* PyTorch's CPU kernel keeps the first maximum of a window, and a NaN
 * over any number. */
/* The maximum is taken in float32 on float32 input (choosing rounds
 * nothing): the same values and the same argmax (so the same gradient) as
 * on a float64 copy, with padding, overlapping windows, ties and NaNs. */
TG_TEST(pool, max_float32_picks_what_float64_picks)
{
    tg_manual_seed(3);
    tg_tensor *r = check(tg_randn(TG_SHAPE(2, 3, 7, 6), TG_FLOAT32));
    float *v = tg_data_f32(r);
    v[5] = v[6]; // a tie in one window
    v[40] = NAN;
    v[41] = NAN; // two NaNs in one window: the last wins
    const int64_t k[2] = {3, 3}, st[2] = {2, 1}, pd[2] = {1, 1};
    tg_tensor *x[2] = {check(tg_clone(r)),
                       check(tg_to_dtype(r, TG_FLOAT64))};
    tg_tensor *y[2], *dx[2];
    for (int d = 0; d < 2; d++) {
        tg_set_requires_grad(x[d], true);
        y[d] = check(tg_max_pool2d(x[d], k, st, pd));
        tg_tensor *loss = check(tg_sum(y[d], NULL, 0, false));
        cr_assert_eq(tg_backward(loss), 0);
        dx[d] = tg_retain(x[d]->grad);
        tg_release(loss);
    }
    cr_assert_eq(y[0]->dtype, TG_FLOAT32);
    for (int64_t i = 0; i < y[1]->numel; i++) {
        double a = tg_data_f32(y[0])[i], b = tg_data_f64(y[1])[i];
        cr_assert((isnan(a) && isnan(b)) || a == b, "y[%lld]: %g vs %g",
                  (long long)i, a, b);
    }
    for (int64_t i = 0; i < dx[1]->numel; i++)
        cr_assert_eq((double)tg_data_f32(dx[0])[i], tg_data_f64(dx[1])[i],
                     "dx[%lld]", (long long)i);
    for (int d = 0; d < 2; d++) {
        tg_release(dx[d]);
        tg_release(y[d]);
        tg_release(x[d]);
    }
    tg_release(r);
}

TG_TEST(pool, max_ties_and_nan)
{
    /* window 0: 3 3 / 2 1, a tie; window 1: 3 0 / NaN 5 */
    double v[8] = {3, 3, 3, 0, 2, 1, NAN, 5};
    tg_tensor *x = check(tg_from_array(v, TG_SHAPE(1, 1, 2, 4), TG_FLOAT64));
    tg_set_requires_grad(x, true);
    tg_tensor *y = check(tg_max_pool2d(x, (int64_t[]){2, 2}, NULL, NULL));
    cr_assert_eq(at(y, 0), 3.0);
    cr_assert(isnan(at(y, 1)));
    tg_tensor *loss = check(tg_sum(y, NULL, 0, false));
    cr_assert_eq(tg_backward(loss), 0);
    const double want[8] = {1, 0, 0, 0, 0, 0, 1, 0};
    for (int i = 0; i < 8; i++)
        cr_assert_eq(at(x->grad, i), want[i], "dx[%d]", i);
    tg_release(loss);
    tg_release(y);
    tg_release(x);
}

/* -------------------------------------------------- gradcheck can fail */

/* y = conv2d(x, w, b) with x and w fixed, as a tg_function of b whose
 * backward is db = sum of dy over (p, q) and over the batch when
 * `batch_sum` (right), or over (p, q) of the first image only (the
 * mistake of forgetting that the bias is shared by every image). */
static tg_tensor *bias_forward(tg_ctx *ctx, const tg_tensor *const *in,
                               int n, const void *args)
{
    (void)ctx, (void)n, (void)args;
    return tg_conv2d(in[0], in[1], in[2], NULL);
}

static int bias_backward(tg_ctx *ctx, const tg_tensor *g, tg_tensor **grads,
                         bool batch_sum)
{
    if (!tg_ctx_needs_grad(ctx, 2))
        return 0;
    tg_tensor *first = batch_sum ? tg_retain((tg_tensor *)g)
                                 : tg_slice(g, 0, 0, 1, 1);
    grads[2] = tg_sum(first, (int[]){0, 2, 3}, 3, false);
    tg_release(first);
    return grads[2] ? 0 : -1;
}

static int bias_backward_right(tg_ctx *ctx, const tg_tensor *g,
                               tg_tensor **grads)
{
    return bias_backward(ctx, g, grads, true);
}

static int bias_backward_wrong(tg_ctx *ctx, const tg_tensor *g,
                               tg_tensor **grads)
{
    return bias_backward(ctx, g, grads, false);
}

static const tg_function bias_right = {"ConvBiasRight", bias_forward,
                                       bias_backward_right, 0};
static const tg_function bias_wrong = {"ConvBiasWrong", bias_forward,
                                       bias_backward_wrong, 0};

static tg_tensor *apply_right(const tg_tensor *const *in, int n, void *c)
{
    (void)c;
    return tg_function_apply(&bias_right, in, n, NULL);
}

static tg_tensor *apply_wrong(const tg_tensor *const *in, int n, void *c)
{
    (void)c;
    return tg_function_apply(&bias_wrong, in, n, NULL);
}

TG_TEST(conv, gradcheck_catches_a_bias_gradient_of_one_image)
{
    tg_tensor *in[3] = {check(tg_randn(TG_SHAPE(2, 2, 4, 4), TG_FLOAT64)),
                        check(tg_randn(TG_SHAPE(3, 2, 3, 3), TG_FLOAT64)),
                        check(tg_randn(TG_SHAPE(3), TG_FLOAT64))};
    tg_set_requires_grad(in[2], true);
    tg_gradcheck_options o = tg_gradcheck_defaults();
    o.quiet = true;
    tg_gradcheck_result r;
    cr_assert_eq(tg_gradcheck(apply_right, NULL, in, 3, &o, &r), 1, "%s",
                 r.message);
    cr_assert_eq(tg_gradcheck(apply_wrong, NULL, in, 3, &o, &r), 0);
    cr_assert(strstr(r.message, "backward disagrees") != NULL, "%s",
              r.message);
    for (int k = 0; k < 3; k++)
        tg_release(in[k]);
}

/* ----------------------------------------------------- out of memory */

/* With every allocation after the first n failing, for each n until one
 * run gets through: the forward or the backward fails with an error (or
 * succeeds), nothing crashes and nothing leaks (the teardown counts the
 * live tensors), on both kernels and for the pools. */
TG_TEST(conv, out_of_memory_anywhere)
{
    for (size_t k = 0; k < 2; k++) {
        cr_assert_eq(tg_set_kernels(KERNELS[k]), 0);
        bool done = false;
        for (int64_t n = 0; n < 400 && !done; n++) {
            tg_tensor *x = check(tg_randn(TG_SHAPE(2, 2, 5, 5), TG_FLOAT32));
            tg_tensor *w = check(tg_randn(TG_SHAPE(4, 1, 3, 3), TG_FLOAT32));
            tg_tensor *b = check(tg_randn(TG_SHAPE(4), TG_FLOAT32));
            tg_set_requires_grad(x, true);
            tg_set_requires_grad(w, true);
            tg_set_requires_grad(b, true);
            tg_clear_error();
            tg_fail_allocations_after(n);
            tg_tensor *y = tg_conv2d(x, w, b,
                                     &(tg_conv2d_options){.groups = 2,
                                                          .padding = {1, 1}});
            tg_tensor *p = tg_max_pool2d(y, (int64_t[]){2, 2}, NULL, NULL);
            tg_tensor *a = tg_avg_pool2d(p, (int64_t[]){2, 2}, NULL, NULL);
            tg_tensor *loss = tg_sum(a, NULL, 0, false);
            int rc = loss ? tg_backward(loss) : -1;
            tg_fail_allocations_after(-1);
            if (rc != 0)
                cr_assert(tg_last_error()[0] != '\0');
            done = rc == 0;
            if (done)
                cr_assert(x->grad && w->grad && b->grad);
            tg_release(loss);
            tg_release(a);
            tg_release(p);
            tg_release(y);
            tg_release(x);
            tg_release(w);
            tg_release(b);
        }
        cr_assert(done, "never got through with 400 allocations");
    }
    tg_set_kernels(TG_KERNELS_FAST);
}
