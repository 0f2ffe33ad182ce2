/*
 * tests/autograd/test_fast_matmul.c - the fast matmul kernels (the
 * blocked C kernel, its direct variant for small products, and OpenBLAS
 * in a build with it) against the reference kernel, on the same inputs,
 * forward and backward.
 *
 * Tolerance (autograd/ops/gemm.c derives it): a float32 output of the
 * fast kernels is a k-term sum accumulated in float32, within
 *     (k + 2) * 2^-24 * (|a| @ |b|)[i, j]
 * of the reference, which sums in double and rounds once. The same bound
 * with 2^-53 holds for float64 on OpenBLAS; the C kernels add float64
 * products in the reference's order and must agree bit for bit. The C
 * kernels also agree bit for bit with each other (direct and blocked, any
 * thread count), since each output is the same sum in the same order.
 */
#include "../common.h"

#include "autograd/ops/gemm.h" // tg_gemm_force_path, tg_gemm_force_kernel
#include "tensor/internal.h"   // tg_matmul_reference, tg_contiguous_as

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

/* ------------------------------------------------------------ checker */

/* x as contiguous float64 values (new reference). */
static tg_tensor *as_f64(const tg_tensor *x)
{
    return tg_contiguous_as(x, TG_FLOAT64);
}

/* True when every |fast - ref| <= scale * bound (same shapes; bound is
 * (|a| @ |b|) for the product compared); else the worst element goes to
 * report. */
static bool within_bound(const tg_tensor *fast, const tg_tensor *ref,
                         const tg_tensor *bound, double scale, char *report,
                         size_t report_size)
{
    if (fast->numel != ref->numel || fast->numel != bound->numel ||
        fast->dtype != ref->dtype) {
        snprintf(report, report_size, "sizes or dtypes differ");
        return false;
    }
    tg_tensor *f = as_f64(fast), *r = as_f64(ref), *b = as_f64(bound);
    const double *pf = tg_data_f64(f), *pr = tg_data_f64(r),
                 *pb = tg_data_f64(b);
    bool ok = true;
    double worst = 0;
    for (int64_t i = 0; i < f->numel; i++) {
        double err = fabs(pf[i] - pr[i]), tol = scale * pb[i];
        if (!(err <= tol) && (ok || err - tol > worst)) {
            worst = err - tol;
            snprintf(report, report_size,
                     "flat index %lld: fast %.17g, reference %.17g, error "
                     "%.3g > tolerance %.3g",
                     (long long)i, pf[i], pr[i], err, tol);
            ok = false;
        }
    }
    tg_release(f);
    tg_release(r);
    tg_release(b);
    return ok;
}

/* |a| @ |b| by the reference kernel, in float64. */
static tg_tensor *abs_product(const tg_tensor *a, const tg_tensor *b)
{
    tg_tensor *aa = tg_abs(a), *ab = tg_abs(b);
    tg_tensor *a64 = as_f64(aa), *b64 = as_f64(ab);
    tg_tensor *p = tg_matmul_reference(a64, b64);
    tg_release(aa);
    tg_release(ab);
    tg_release(a64);
    tg_release(b64);
    return p;
}

static double unit_roundoff(tg_dtype dtype)
{
    return dtype == TG_FLOAT32 ? ldexp(1, -24) : ldexp(1, -53);
}

/* Whether a product of this dtype on these kernels must equal the
 * reference bit for bit: float64 on the C kernels. */
static bool exact_expected(tg_dtype dtype, tg_kernels kernels)
{
    if (dtype != TG_FLOAT64)
        return false;
    /* With OpenBLAS built in, TG_KERNELS_FAST runs dgemm: its order. */
    tg_kernels saved = tg_get_kernels();
    tg_set_kernels(kernels);
    bool blas = tg_use_blas();
    tg_set_kernels(saved);
    return !blas;
}

/* tg_matmul(a, b) on `kernels` compared with the reference kernel, within
 * the bound above (or bit for bit where exact_expected). */
static void check_product(const tg_tensor *a, const tg_tensor *b,
                          tg_kernels kernels, const char *what)
{
    tg_set_kernels(kernels);
    tg_tensor *fast = tg_matmul(a, b);
    tg_set_kernels(TG_KERNELS_FAST);
    tg_tensor *ref = tg_matmul_reference(a, b);
    cr_assert_not_null(fast, "%s: %s", what, tg_last_error());
    cr_assert_not_null(ref, "%s: %s", what, tg_last_error());
    cr_assert_eq(fast->ndim, ref->ndim, "%s", what);
    for (int d = 0; d < fast->ndim; d++)
        cr_assert_eq(fast->shape[d], ref->shape[d], "%s", what);
    int64_t k = a->shape[a->ndim - 1];
    if (exact_expected(fast->dtype, kernels)) {
        tg_assert_close(fast, ref, 0, 0);
    } else {
        tg_tensor *bound = abs_product(a, b);
        char report[512];
        cr_assert(within_bound(fast, ref, bound,
                               (double)(k + 2) * unit_roundoff(fast->dtype),
                               report, sizeof report),
                  "%s (kernels %d): %s", what, (int)kernels, report);
        tg_release(bound);
    }
    tg_release(fast);
    tg_release(ref);
}

/* The checker can fail: a product with one element moved by more than
 * the bound is rejected, and one moved by less is accepted. */
TG_TEST(fast_matmul, checker_rejects_a_wrong_product)
{
    tg_tensor *a = tg_randn(TG_SHAPE(7, 13), TG_FLOAT32);
    tg_tensor *b = tg_randn(TG_SHAPE(13, 5), TG_FLOAT32);
    tg_tensor *ref = tg_matmul_reference(a, b);
    tg_tensor *bound = abs_product(a, b);
    double scale = 15 * ldexp(1, -24);
    tg_tensor *wrong = tg_add_scalar(ref, 0); // a copy
    float *w = tg_data_f32(wrong);
    double tol = scale * tg_data_f64(bound)[12];
    w[12] = (float)(w[12] + 4 * tol);
    char report[512] = "";
    cr_assert_not(within_bound(wrong, ref, bound, scale, report,
                               sizeof report));
    cr_assert(strstr(report, "flat index 12") != NULL, "%s", report);
    w[12] = tg_data_f32(ref)[12];
    w[3] = nextafterf(w[3], INFINITY); // one ulp: within (k + 2) u
    cr_assert(within_bound(wrong, ref, bound, scale, report, sizeof report),
              "%s", report);
    tg_release(wrong);
    tg_release(bound);
    tg_release(ref);
    tg_release(a);
    tg_release(b);
}

/* ------------------------------------------------------------- shapes */

static const struct {
    int64_t sa[4];
    int na;
    int64_t sb[4];
    int nb;
} shapes[] = {
    {{1, 1}, 2, {1, 1}, 2},
    {{1, 5}, 2, {5, 1}, 2},
    {{7, 13}, 2, {13, 5}, 2},
    {{33, 65}, 2, {65, 17}, 2},
    {{129, 300}, 2, {300, 257}, 2},
    {{4, 0}, 2, {0, 3}, 2},          // k = 0: zeros
    {{1, 1}, 2, {1, 40}, 2},         // k = 1
    {{40, 1}, 2, {1, 40}, 2},        // an outer product, blocked
    {{31}, 1, {31}, 1},              // dot
    {{300}, 1, {300, 70}, 2},        // vector @ matrix
    {{70, 300}, 2, {300}, 1},        // matrix @ vector
    {{3, 20, 30}, 3, {30, 40}, 2},   // batched a
    {{2, 1, 19, 23}, 4, {3, 23, 18}, 3}, // broadcast batches
    {{17}, 1, {2, 17, 33}, 3},
};
#define N_SHAPES (int)(sizeof shapes / sizeof shapes[0])

/* x (ndim >= 2) stored transposed: its last two dims swapped in memory,
 * then swapped back by a view (new reference). */
static tg_tensor *transposed_in_memory(const tg_tensor *x)
{
    tg_tensor *xt = tg_transpose(x, -1, -2);
    tg_tensor *copy = tg_contiguous_as(xt, x->dtype);
    tg_tensor *v = tg_transpose(copy, -1, -2);
    tg_release(copy);
    tg_release(xt);
    return v;
}

/* Every shape, float32 and float64, contiguous and with each operand
 * transposed in memory (a view whose last two strides are swapped), on
 * the given kernels and forced path. */
static void check_all_shapes(tg_kernels kernels, tg_gemm_path path)
{
    tg_generator *g = tg_generator_new(77);
    tg_dtype dtypes[] = {TG_FLOAT32, TG_FLOAT64};
    tg_gemm_force_path(path);
    for (int s = 0; s < N_SHAPES; s++)
        for (int t = 0; t < 2; t++) {
            tg_tensor *a = tg_randn_gen(g, shapes[s].sa, shapes[s].na,
                                        dtypes[t]);
            tg_tensor *b = tg_randn_gen(g, shapes[s].sb, shapes[s].nb,
                                        dtypes[t]);
            for (int layout = 0; layout < 4; layout++) {
                bool ta = layout & 1, tb = layout & 2;
                tg_tensor *ua = ta && a->ndim >= 2
                                    ? transposed_in_memory(a)
                                    : tg_retain(a);
                tg_tensor *ub = tb && b->ndim >= 2
                                    ? transposed_in_memory(b)
                                    : tg_retain(b);
                char what[128];
                snprintf(what, sizeof what, "shape %d, %s, layout %d", s,
                         t ? "float64" : "float32", layout);
                check_product(ua, ub, kernels, what);
                tg_release(ua);
                tg_release(ub);
            }
            tg_release(a);
            tg_release(b);
        }
    tg_gemm_force_path(TG_GEMM_AUTO);
    tg_generator_free(g);
}

TG_TEST(fast_matmul, portable_matches_reference)
{
    check_all_shapes(TG_KERNELS_PORTABLE, TG_GEMM_AUTO);
}

TG_TEST(fast_matmul, portable_direct_matches_reference)
{
    check_all_shapes(TG_KERNELS_PORTABLE, TG_GEMM_DIRECT);
}

TG_TEST(fast_matmul, portable_blocked_matches_reference)
{
    check_all_shapes(TG_KERNELS_PORTABLE, TG_GEMM_BLOCKED);
}

TG_TEST(fast_matmul, portable_small_matches_reference)
{
    check_all_shapes(TG_KERNELS_PORTABLE, TG_GEMM_SMALL);
}

/* TG_KERNELS_FAST: OpenBLAS in a build with it, else the C kernels. */
TG_TEST(fast_matmul, fast_matches_reference)
{
    check_all_shapes(TG_KERNELS_FAST, TG_GEMM_AUTO);
}

/* Strided views that are transposed nowhere: every other row and column
 * of a bigger matrix, and a broadcast (stride 0) operand. */
TG_TEST(fast_matmul, strided_and_expanded_operands)
{
    tg_tensor *big = tg_randn(TG_SHAPE(60, 80), TG_FLOAT32);
    tg_tensor *rows = tg_slice(big, 0, 0, 60, 2);      // (30, 80)
    tg_tensor *a = tg_slice(rows, 1, 0, 80, 2);        // (30, 40), strides 160, 2
    tg_tensor *b = tg_randn(TG_SHAPE(40, 50), TG_FLOAT32);
    tg_tensor *bt = tg_transpose(b, 0, 1);
    tg_tensor *b_rows = tg_slice(bt, 0, 0, 50, 3);     // (17, 40)
    tg_tensor *col = tg_randn(TG_SHAPE(40, 1), TG_FLOAT32);
    tg_tensor *wide = tg_expand(col, TG_SHAPE(40, 33)); // stride 0 columns
    for (int kern = TG_KERNELS_FAST; kern <= TG_KERNELS_PORTABLE; kern++)
        for (int path = TG_GEMM_AUTO; path <= TG_GEMM_SMALL; path++) {
            tg_gemm_force_path((tg_gemm_path)path);
            check_product(a, b, (tg_kernels)kern, "sliced a");
            check_product(b_rows, b, (tg_kernels)kern, "sliced b^T rows");
            check_product(a, wide, (tg_kernels)kern, "expanded b");
        }
    tg_gemm_force_path(TG_GEMM_AUTO);
    tg_release(wide);
    tg_release(col);
    tg_release(b_rows);
    tg_release(bt);
    tg_release(b);
    tg_release(a);
    tg_release(rows);
    tg_release(big);
}

/* The product of big means (|mean| >> std): the bound scales with
 * |a| @ |b|, so it still holds where the result cancels. */
TG_TEST(fast_matmul, cancelling_sums_stay_within_the_bound)
{
    tg_tensor *x = tg_randn(TG_SHAPE(50, 70), TG_FLOAT32);
    tg_tensor *a = tg_add_scalar(x, 1000);
    tg_tensor *y = tg_randn(TG_SHAPE(70, 40), TG_FLOAT32);
    tg_tensor *b = tg_sub_scalar(y, 0.5);
    check_product(a, b, TG_KERNELS_PORTABLE, "big means");
    check_product(a, b, TG_KERNELS_FAST, "big means");
    tg_release(a);
    tg_release(b);
    tg_release(x);
    tg_release(y);
}

/* ----------------------------------------------- the C kernels agree */

/* Direct, blocked and every thread count give the same bits: each output
 * is the same float sum in the same order. 200 x 300 x 250 is large
 * enough to be split between threads. */
TG_TEST(fast_matmul, c_kernels_agree_bit_for_bit)
{
    int saved_threads = tg_get_num_threads();
    tg_dtype dtypes[] = {TG_FLOAT32, TG_FLOAT64};
    tg_set_kernels(TG_KERNELS_PORTABLE);
    for (int t = 0; t < 2; t++) {
        tg_tensor *a = tg_randn(TG_SHAPE(200, 300), dtypes[t]);
        tg_tensor *b0 = tg_randn(TG_SHAPE(250, 300), dtypes[t]);
        tg_tensor *b = tg_transpose(b0, 0, 1); // Linear's x @ W.T
        tg_gemm_force_path(TG_GEMM_DIRECT);
        tg_tensor *direct = tg_matmul(a, b);
        tg_gemm_force_path(TG_GEMM_BLOCKED);
        tg_set_num_threads(1);
        tg_tensor *one = tg_matmul(a, b);
        tg_set_num_threads(2);
        tg_tensor *two = tg_matmul(a, b);
        tg_gemm_force_path(TG_GEMM_AUTO);
        cr_assert_eq(memcmp((void *)tg_base_ptr(direct), (void *)tg_base_ptr(one),
                            (size_t)one->numel * tg_dtype_size(one->dtype)),
                     0, "direct and blocked differ");
        cr_assert_eq(memcmp((void *)tg_base_ptr(one), (void *)tg_base_ptr(two),
                            (size_t)one->numel * tg_dtype_size(one->dtype)),
                     0, "1 and 2 threads differ");
        tg_release(direct);
        tg_release(one);
        tg_release(two);
        tg_release(b);
        tg_release(b0);
        tg_release(a);
    }
    tg_set_kernels(TG_KERNELS_FAST);
    tg_set_num_threads(saved_threads);
}

/* Without memory for its packing buffers the blocked kernel runs the
 * direct one: the product still succeeds, with the same bits. The direct
 * kernel allocates nothing of its own, so failing the allocation after
 * the ones it needs fails exactly the blocked kernel's buffers. The same
 * for the small kernel's copy of b (60 columns: a partial panel). */
static void without_memory_falls_back_to_direct(tg_gemm_path path)
{
    tg_set_kernels(TG_KERNELS_PORTABLE);
    tg_tensor *a = tg_randn(TG_SHAPE(40, 50), TG_FLOAT32);
    tg_tensor *b = tg_randn(TG_SHAPE(50, 60), TG_FLOAT32);
    tg_gemm_force_path(path);
    tg_tensor *full = tg_matmul(a, b);
    tg_gemm_force_path(TG_GEMM_DIRECT);
    int64_t n = 0; // allocations the direct path needs
    tg_tensor *direct = NULL;
    for (; n < 50 && !direct; n++) {
        tg_fail_allocations_after(n);
        direct = tg_matmul(a, b);
        tg_fail_allocations_after(-1);
    }
    cr_assert_not_null(direct);
    tg_gemm_force_path(path);
    tg_fail_allocations_after(n - 1);
    tg_tensor *fallback = tg_matmul(a, b);
    tg_fail_allocations_after(-1);
    tg_gemm_force_path(TG_GEMM_AUTO);
    tg_set_kernels(TG_KERNELS_FAST);
    cr_assert_not_null(fallback, "%s", tg_last_error());
    tg_assert_close(fallback, full, 0, 0);
    tg_assert_close(direct, full, 0, 0);
    tg_release(direct);
    tg_release(fallback);
    tg_release(full);
    tg_release(a);
    tg_release(b);
}

TG_TEST(fast_matmul, blocked_without_memory_falls_back_to_direct)
{
    without_memory_falls_back_to_direct(TG_GEMM_BLOCKED);
}

TG_TEST(fast_matmul, small_without_memory_falls_back_to_direct)
{
    without_memory_falls_back_to_direct(TG_GEMM_SMALL);
}

/* ------------------------------------------------------------ backward */

/* da and db of sum(w * (a @ b)) on `kernels` against the reference
 * kernels: da = w @ b^T, a sum over n terms, and db = a^T @ w, over the
 * rows of a (all batches folded). */
static void check_backward(const int64_t *sa, int na, const int64_t *sb,
                           int nb, tg_dtype dtype, tg_kernels kernels)
{
    tg_tensor *grads[2][2];
    tg_tensor *a = tg_randn(sa, na, dtype), *b = tg_randn(sb, nb, dtype);
    tg_tensor *w = NULL;
    for (int run = 0; run < 2; run++) {
        tg_set_kernels(run == 0 ? kernels : TG_KERNELS_REFERENCE);
        tg_set_requires_grad(a, true);
        tg_set_requires_grad(b, true);
        tg_tensor *y = tg_matmul(a, b);
        if (!w)
            w = tg_randn(y->shape, y->ndim, dtype);
        tg_tensor *yw = tg_mul(y, w);
        tg_tensor *loss = tg_sum(yw, NULL, 0, false);
        cr_assert_eq(tg_backward(loss), 0, "%s", tg_last_error());
        grads[run][0] = tg_retain(a->grad);
        grads[run][1] = tg_retain(b->grad);
        tg_clear_grad(a);
        tg_clear_grad(b);
        tg_release(loss);
        tg_release(yw);
        tg_release(y);
    }
    tg_set_kernels(TG_KERNELS_FAST);
    tg_set_requires_grad(a, false);
    tg_set_requires_grad(b, false);
    /* The bounds, |w| @ |b|^T and |a|^T @ |w|, with a's batch dims
     * folded into rows (b here is 2-D or 1-D). */
    int64_t k = a->shape[a->ndim - 1];
    int64_t rows = a->numel / k;
    tg_tensor *a2 = tg_reshape(a, TG_SHAPE(rows, k));
    tg_tensor *w2 = tg_reshape(w, TG_SHAPE(rows, w->numel / rows));
    tg_tensor *b2 = b->ndim == 1 ? tg_reshape(b, TG_SHAPE(k, 1))
                                 : tg_retain(b);
    tg_tensor *b2t = tg_transpose(b2, 0, 1), *a2t = tg_transpose(a2, 0, 1);
    tg_tensor *bound_a = abs_product(w2, b2t), *bound_b = abs_product(a2t, w2);
    int64_t n = b2->shape[1];
    char report[512];
    double u = unit_roundoff(dtype);
    bool exact = exact_expected(dtype, kernels);
    cr_assert(within_bound(grads[0][0], grads[1][0], bound_a,
                           exact ? 0 : (double)(n + 2) * u, report,
                           sizeof report),
              "da: %s", report);
    cr_assert(within_bound(grads[0][1], grads[1][1], bound_b,
                           exact ? 0 : (double)(rows + 2) * u, report,
                           sizeof report),
              "db: %s", report);
    tg_release(bound_a);
    tg_release(bound_b);
    tg_release(a2t);
    tg_release(b2t);
    tg_release(a2);
    tg_release(b2);
    tg_release(w2);
    for (int run = 0; run < 2; run++) {
        tg_release(grads[run][0]);
        tg_release(grads[run][1]);
    }
    tg_release(w);
    tg_release(a);
    tg_release(b);
}

TG_TEST(fast_matmul, backward_matches_reference)
{
    tg_dtype dtypes[] = {TG_FLOAT32, TG_FLOAT64};
    tg_kernels kernels[] = {TG_KERNELS_PORTABLE, TG_KERNELS_FAST};
    for (int t = 0; t < 2; t++)
        for (int kk = 0; kk < 2; kk++) {
            check_backward(TG_SHAPE(33, 65), TG_SHAPE(65, 17), dtypes[t],
                           kernels[kk]);
            check_backward(TG_SHAPE(256, 128), TG_SHAPE(128, 3), dtypes[t],
                           kernels[kk]);
            check_backward(TG_SHAPE(3, 20, 30), TG_SHAPE(30, 40), dtypes[t],
                           kernels[kk]);
            check_backward(TG_SHAPE(9, 31), TG_SHAPE(31), dtypes[t],
                           kernels[kk]);
        }
}

/* ------------------------------------------ the micro-kernel variants */

/* The blocked kernel's variants (autograd/ops/gemm.h): each one the CPU
 * supports is forced in turn. They must agree with the reference within
 * the bound, float64 bit for bit, and with each other bit for bit. */
static const tg_gemm_kernel variants[] = {
    TG_GEMM_KERNEL_GENERIC,
    TG_GEMM_KERNEL_AVX2,
    TG_GEMM_KERNEL_AVX512,
};
#define N_VARIANTS (int)(sizeof variants / sizeof variants[0])

/* True when x and y (contiguous) hold the same bytes; else the first
 * differing flat index goes to report. */
static bool same_bits(const tg_tensor *x, const tg_tensor *y, char *report,
                      size_t report_size)
{
    if (x->numel != y->numel || x->dtype != y->dtype) {
        snprintf(report, report_size, "sizes or dtypes differ");
        return false;
    }
    size_t size = tg_dtype_size(x->dtype);
    const char *px = tg_base_ptr(x), *py = tg_base_ptr(y);
    for (int64_t i = 0; i < x->numel; i++)
        if (memcmp(px + (size_t)i * size, py + (size_t)i * size, size) != 0) {
            snprintf(report, report_size, "flat index %lld differs",
                     (long long)i);
            return false;
        }
    return true;
}

/* The checker can fail: one ulp off in one element is caught. */
TG_TEST(fast_matmul, same_bits_rejects_one_ulp)
{
    tg_tensor *x = tg_randn(TG_SHAPE(5, 7), TG_FLOAT32);
    tg_tensor *y = tg_add_scalar(x, 0); // a copy
    char report[128] = "";
    cr_assert(same_bits(x, y, report, sizeof report), "%s", report);
    float *py = tg_data_f32(y);
    py[30] = nextafterf(py[30], INFINITY);
    cr_assert_not(same_bits(x, y, report, sizeof report));
    cr_assert(strstr(report, "flat index 30") != NULL, "%s", report);
    tg_release(x);
    tg_release(y);
}

/* Forcing a variant takes effect on this thread and AUTO undoes it; one
 * the CPU lacks is refused. With nothing forced, the widest supported
 * runs. */
TG_TEST(fast_matmul, force_kernel_switches_variants)
{
    /* Each test runs in a process of its own, which has not chosen yet:
     * the default choice, whatever the caller's environment says. */
    unsetenv(TG_GEMM_KERNEL);
    tg_gemm_kernel widest = TG_GEMM_KERNEL_GENERIC;
    cr_assert(tg_gemm_kernel_supported(TG_GEMM_KERNEL_GENERIC));
    for (int v = 0; v < N_VARIANTS; v++)
        if (tg_gemm_kernel_supported(variants[v]))
            widest = variants[v];
    cr_assert_eq(tg_gemm_kernel_in_use(), widest);
    for (int v = 0; v < N_VARIANTS; v++) {
        bool supported = tg_gemm_kernel_supported(variants[v]);
        cr_assert_eq(tg_gemm_force_kernel(variants[v]), supported);
        cr_assert_eq(tg_gemm_kernel_in_use(),
                     supported ? variants[v] : TG_GEMM_KERNEL_GENERIC,
                     "variant %d", (int)variants[v]);
        tg_gemm_force_kernel(TG_GEMM_KERNEL_GENERIC);
    }
    cr_assert(tg_gemm_force_kernel(TG_GEMM_KERNEL_AUTO));
    cr_assert_eq(tg_gemm_kernel_in_use(), widest);
}

/* TG_GEMM_KERNEL=generic picks the generic kernel, and a name that is
 * not a variant is ignored. The choice is made once per process: each
 * case runs in a child that has not multiplied yet. */
static int kernel_in_child(const char *env)
{
    pid_t pid = fork();
    if (pid == 0) {
        setenv(TG_GEMM_KERNEL, env, 1);
        _exit((int)tg_gemm_kernel_in_use());
    }
    int status = 0;
    cr_assert_eq(waitpid(pid, &status, 0), pid);
    cr_assert(WIFEXITED(status));
    return WEXITSTATUS(status);
}

TG_TEST(fast_matmul, environment_chooses_the_kernel)
{
    int widest = kernel_in_child("");
    cr_assert_eq(kernel_in_child("generic"), TG_GEMM_KERNEL_GENERIC);
    cr_assert_eq(kernel_in_child("sse9"), widest);
    if (tg_gemm_kernel_supported(TG_GEMM_KERNEL_AVX2))
        cr_assert_eq(kernel_in_child("avx2"), TG_GEMM_KERNEL_AVX2);
}

/* Every variant, forced to run the blocked kernel and the small one,
 * against the reference on every shape above. */
TG_TEST(fast_matmul, each_variant_matches_reference)
{
    for (int v = 0; v < N_VARIANTS; v++) {
        if (!tg_gemm_force_kernel(variants[v]))
            continue;
        check_all_shapes(TG_KERNELS_PORTABLE, TG_GEMM_BLOCKED);
        check_all_shapes(TG_KERNELS_PORTABLE, TG_GEMM_SMALL);
    }
    tg_gemm_force_kernel(TG_GEMM_KERNEL_AUTO);
}

/* Awkward (m, k, n): edges of every tile (6, 8 rows; 16, 32 columns),
 * k = 1, k across the k-blocks (128 doubles, 256 floats), n across the
 * column block (3072), c narrower than a tile. */
static const int64_t awkward[][3] = {
    {1, 1, 1},     {5, 1, 70},    {9, 300, 33},  {17, 257, 65},
    {64, 64, 64},  {100, 513, 47}, {130, 3, 200}, {33, 129, 16},
    {13, 40, 3},   {9, 5, 3100},
};
#define N_AWKWARD (int)(sizeof awkward / sizeof awkward[0])

/* Each variant, blocked on 1 and 2 threads and small, gives the direct
 * kernel's bits on every awkward shape, float32 and float64, each operand
 * as is or transposed in memory. */
TG_TEST(fast_matmul, variants_agree_bit_for_bit)
{
    int saved_threads = tg_get_num_threads();
    tg_generator *g = tg_generator_new(5);
    tg_dtype dtypes[] = {TG_FLOAT32, TG_FLOAT64};
    tg_set_kernels(TG_KERNELS_PORTABLE);
    for (int s = 0; s < N_AWKWARD; s++)
        for (int t = 0; t < 2; t++) {
            int64_t m = awkward[s][0], k = awkward[s][1], n = awkward[s][2];
            tg_tensor *a = tg_randn_gen(g, TG_SHAPE(m, k), dtypes[t]);
            tg_tensor *b = tg_randn_gen(g, TG_SHAPE(k, n), dtypes[t]);
            for (int layout = 0; layout < 4; layout++) {
                tg_tensor *ua = layout & 1 ? transposed_in_memory(a)
                                           : tg_retain(a);
                tg_tensor *ub = layout & 2 ? transposed_in_memory(b)
                                           : tg_retain(b);
                tg_gemm_force_path(TG_GEMM_DIRECT);
                tg_tensor *want = tg_matmul(ua, ub);
                for (int v = 0; v < N_VARIANTS; v++) {
                    if (!tg_gemm_force_kernel(variants[v]))
                        continue;
                    for (int nt = 1; nt <= 3; nt++) {
                        /* 3: the small kernel, on one thread */
                        tg_gemm_force_path(nt == 3 ? TG_GEMM_SMALL
                                                   : TG_GEMM_BLOCKED);
                        tg_set_num_threads(nt == 3 ? 1 : nt);
                        tg_tensor *got = tg_matmul(ua, ub);
                        char report[128] = "";
                        cr_assert(same_bits(got, want, report,
                                            sizeof report),
                                  "%lld x %lld x %lld, %s, layout %d, "
                                  "variant %d, run %d: %s",
                                  (long long)m, (long long)k, (long long)n,
                                  t ? "float64" : "float32", layout,
                                  (int)variants[v], nt, report);
                        tg_release(got);
                    }
                }
                tg_gemm_force_kernel(TG_GEMM_KERNEL_AUTO);
                tg_gemm_force_path(TG_GEMM_AUTO);
                tg_set_num_threads(saved_threads);
                tg_release(want);
                tg_release(ua);
                tg_release(ub);
            }
            tg_release(a);
            tg_release(b);
        }
    tg_set_kernels(TG_KERNELS_FAST);
    tg_generator_free(g);
}
