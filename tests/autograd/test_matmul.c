/*
 * tests/autograd/test_matmul.c - tg_matmul against NumPy references
 * (scripts/reference/gen_matmul.py) for every shape rule of torch.matmul,
 * the fast kernel against the naive reference kernel, non-contiguous and
 * broadcast operands, empty products and every error message.
 *
 * Tolerances used below, and why:
 *  - FLOAT32_ULP (2^-23 relative) for float32: the kernel sums the exact
 *    products of float32 values in double and rounds once; the reference is
 *    the float64 product rounded once. The doubles agree far below a float32
 *    ulp, so the results are equal or adjacent: <= 2^-23 of the value.
 *  - float64: both sides sum k <= 4 rounded products, in possibly different
 *    orders (and NumPy's BLAS may fuse multiply-adds): a few double ulps of
 *    the largest term, 1e-14 relative plus 1e-15 absolute for sums that
 *    cancel toward 0 (the terms are O(1)).
 *  - float32 on the fast kernels, which sum in float32 as BLAS does
 *    (autograd/ops/matmul.c): within (k + 2) * 2^-24 * (|a| @ |b|) of the
 *    exact value; here k <= 4 and |a| @ |b| < 9, so 6 * 2^-24 * 9 absolute
 *    on top of the ulp above.
 *  - int64, and float64 fast-against-naive: exact (see each test).
 */
#include "../common.h"

#include "tensor/internal.h" // tg_view_make, tg_matmul_reference

#include <math.h>
#include <stdio.h>

#define FLOAT32_ULP 1.1920929e-07 // 2^-23
#define FAST_F32_ATOL (6 * 9 * 5.9604645e-08) // (k + 2) * max|a|@|b| * 2^-24

/* A non-contiguous tensor equal to x (ndim >= 2): x's last two dims are
 * copied transposed into fresh storage, and a view swaps them back. */
static tg_tensor *non_contiguous_copy(const tg_tensor *x)
{
    int nd = x->ndim;
    int64_t shape[TG_MAX_DIMS], strides[TG_MAX_DIMS];
    for (int d = 0; d < nd; d++)
        shape[d] = x->shape[d];
    shape[nd - 2] = x->shape[nd - 1];
    shape[nd - 1] = x->shape[nd - 2];
    tg_tensor *t = tg_empty(shape, nd, x->dtype); // x with the two swapped
    int64_t idx[TG_MAX_DIMS] = {0};
    for (int64_t i = 0; i < x->numel; i++) {
        int64_t rest = i;
        for (int d = nd - 1; d >= 0; d--) {
            idx[d] = rest % x->shape[d];
            rest /= x->shape[d];
        }
        double v;
        tg_get(x, idx, nd, &v);
        int64_t tmp = idx[nd - 1];
        idx[nd - 1] = idx[nd - 2];
        idx[nd - 2] = tmp;
        tg_set(t, idx, nd, v);
    }
    for (int d = 0; d < nd; d++)
        strides[d] = t->strides[d];
    strides[nd - 2] = t->strides[nd - 1];
    strides[nd - 1] = t->strides[nd - 2];
    tg_tensor *v = tg_view_make(t, x->shape, strides, nd, 0);
    tg_release(t); // the view keeps the storage
    return v;
}

/* The cases of gen_matmul.py, with the result shape torch.matmul gives. */
static const struct {
    const char *name;
    int64_t out_shape[4];
    int out_ndim;
} cases[] = {
    {"dot", {0}, 0},             // (3,) @ (3,)
    {"mm", {2, 4}, 2},           // (2, 3) @ (3, 4)
    {"vm", {4}, 1},              // (3,) @ (3, 4)
    {"mv", {2}, 1},              // (2, 3) @ (3,)
    {"bmm", {5, 2, 4}, 3},       // (5, 2, 3) @ (3, 4)
    {"mbm", {5, 2, 4}, 3},       // (2, 3) @ (5, 3, 4)
    {"bcast", {2, 5, 3, 2}, 4},  // (2, 1, 3, 4) @ (5, 4, 2)
    {"vbm", {2, 3}, 2},          // (4,) @ (2, 4, 3)
    {"bmv", {2, 3}, 2},          // (2, 3, 4) @ (4,)
    {"mm_f64", {2, 4}, 2},
    {"bmm_f64", {5, 2, 4}, 3},
    {"bcast_f64", {2, 5, 3, 2}, 4},
    {"mm_i64", {3, 2}, 2},
};
#define N_CASES (int)(sizeof cases / sizeof cases[0])

static void tolerance_for(tg_dtype dtype, double *rtol, double *atol)
{
    /* See the top of the file. */
    *rtol = dtype == TG_FLOAT32 ? FLOAT32_ULP : dtype == TG_FLOAT64 ? 1e-14
                                                                    : 0;
    *atol = dtype == TG_FLOAT64 ? 1e-15 : 0;
}

/* Runs every case through `mm` (tg_matmul or the reference), optionally on
 * non-contiguous copies of the operands. */
static void check_cases(tg_tensor *(*mm)(const tg_tensor *,
                                         const tg_tensor *),
                        bool non_contiguous)
{
    for (int c = 0; c < N_CASES; c++) {
        char name[64];
        snprintf(name, sizeof name, "matmul_%s_a", cases[c].name);
        tg_tensor *a = tg_test_load_ref(name);
        snprintf(name, sizeof name, "matmul_%s_b", cases[c].name);
        tg_tensor *b = tg_test_load_ref(name);
        if (non_contiguous && a->ndim >= 2) {
            tg_tensor *t = non_contiguous_copy(a);
            cr_assert_not(tg_is_contiguous(t));
            tg_release(a);
            a = t;
        }
        if (non_contiguous && b->ndim >= 2) {
            tg_tensor *t = non_contiguous_copy(b);
            tg_release(b);
            b = t;
        }
        tg_tensor *out = mm(a, b);
        cr_assert_not_null(out, "%s: %s", cases[c].name, tg_last_error());
        cr_assert_eq(out->ndim, cases[c].out_ndim, "%s", cases[c].name);
        for (int d = 0; d < out->ndim; d++)
            cr_assert_eq(out->shape[d], cases[c].out_shape[d], "%s dim %d",
                         cases[c].name, d);
        double rtol, atol;
        tolerance_for(out->dtype, &rtol, &atol);
        if (out->dtype == TG_FLOAT32 && mm == tg_matmul &&
            tg_get_kernels() != TG_KERNELS_REFERENCE)
            atol = FAST_F32_ATOL; // summed in float32: see the top
        snprintf(name, sizeof name, "matmul_%s_out", cases[c].name);
        tg_test_check_ref(out, name, rtol, atol);
        tg_release(a);
        tg_release(b);
    }
}

TG_TEST(matmul, every_shape_rule_matches_numpy)
{
    check_cases(tg_matmul, false);
}

TG_TEST(matmul, reference_kernel_matches_numpy)
{
    check_cases(tg_matmul_reference, false);
}

TG_TEST(matmul, non_contiguous_operands_match_numpy)
{
    check_cases(tg_matmul, true);
    check_cases(tg_matmul_reference, true);
}

/* The comparison can fail: a product off by 4 ulps in one element is
 * rejected at the tolerance used above. */
TG_TEST(matmul, reference_check_rejects_a_wrong_product)
{
    tg_tensor *a = tg_test_load_ref("matmul_mm_a");
    tg_tensor *b = tg_test_load_ref("matmul_mm_b");
    tg_tensor *out = tg_matmul(a, b);
    tg_tensor *wrong = tg_test_load_ref("matmul_mm_out");
    float *w = tg_data_f32(wrong);
    w[5] = nextafterf(nextafterf(nextafterf(nextafterf(w[5], INFINITY),
                                            INFINITY),
                                 INFINITY),
                      INFINITY);
    char report[1024];
    cr_assert_not(tg_test_close(out, wrong, FLOAT32_ULP, 0, true, report,
                                sizeof report));
    cr_assert(strstr(report, "flat index 5") != NULL, "%s", report);
    tg_release(wrong);
    tg_release(out);
    tg_release(a);
    tg_release(b);
}

/* Larger random products, including broadcast batches and transposed
 * operands. float64: the fast C kernels add the same double products in
 * the same k order as the naive one, so they agree bit for bit (OpenBLAS,
 * in a build with it, does not: within (k + 2) * 2^-53 * (|a| @ |b|)).
 * float32: the fast kernels sum in float32, within (k + 2) * 2^-24 *
 * (|a| @ |b|) of the naive kernel's correctly rounded sum. */
/* |fast - naive| <= (k + 2) u (|a| @ |b|) everywhere, u the unit
 * roundoff of the dtype. */
static void assert_within_sum_bound(const tg_tensor *fast,
                                    const tg_tensor *naive,
                                    const tg_tensor *a, const tg_tensor *b)
{
    tg_tensor *aa = tg_abs(a), *ab = tg_abs(b);
    tg_tensor *bound = tg_matmul_reference(aa, ab);
    tg_tensor *f = tg_contiguous_as(fast, TG_FLOAT64);
    tg_tensor *n = tg_contiguous_as(naive, TG_FLOAT64);
    tg_tensor *bd = tg_contiguous_as(bound, TG_FLOAT64);
    double u = fast->dtype == TG_FLOAT32 ? ldexp(1, -24) : ldexp(1, -53);
    double scale = (double)(a->shape[a->ndim - 1] + 2) * u;
    for (int64_t i = 0; i < f->numel; i++)
        cr_assert(fabs(tg_data_f64(f)[i] - tg_data_f64(n)[i]) <=
                      scale * tg_data_f64(bd)[i],
                  "flat index %lld: fast %.9g, naive %.9g", (long long)i,
                  tg_data_f64(f)[i], tg_data_f64(n)[i]);
    tg_release(bd);
    tg_release(n);
    tg_release(f);
    tg_release(bound);
    tg_release(aa);
    tg_release(ab);
}

TG_TEST(matmul, fast_kernel_equals_reference_kernel)
{
    static const struct {
        int64_t sa[4];
        int na;
        int64_t sb[4];
        int nb;
    } shapes[] = {
        {{17, 33}, 2, {33, 9}, 2},
        {{3, 1, 8, 31}, 4, {4, 31, 5}, 3},
        {{31}, 1, {2, 31, 7}, 3},
        {{6, 13, 64}, 3, {64}, 1},
        {{130}, 1, {130}, 1},
    };
    tg_generator *g = tg_generator_new(1234);
    tg_dtype dtypes[] = {TG_FLOAT32, TG_FLOAT64};
    for (size_t s = 0; s < sizeof shapes / sizeof *shapes; s++)
        for (int t = 0; t < 2; t++) {
            tg_tensor *a = tg_randn_gen(g, shapes[s].sa, shapes[s].na,
                                        dtypes[t]);
            tg_tensor *b = tg_randn_gen(g, shapes[s].sb, shapes[s].nb,
                                        dtypes[t]);
            for (int nc = 0; nc <= 1; nc++) {
                tg_tensor *ua = nc && a->ndim >= 2 ? non_contiguous_copy(a)
                                                   : tg_retain(a);
                tg_tensor *ub = nc && b->ndim >= 2 ? non_contiguous_copy(b)
                                                   : tg_retain(b);
                tg_tensor *fast = tg_matmul(ua, ub);
                tg_tensor *naive = tg_matmul_reference(ua, ub);
                if (dtypes[t] == TG_FLOAT64 && !tg_use_blas())
                    tg_assert_close(fast, naive, 0, 0);
                else
                    assert_within_sum_bound(fast, naive, ua, ub);
                tg_release(fast);
                tg_release(naive);
                tg_release(ua);
                tg_release(ub);
            }
            tg_release(a);
            tg_release(b);
        }
    tg_generator_free(g);
}

TG_TEST(matmul, int64_is_exact)
{
    /* 3e9 * 3e9 = 9e18 fits int64 but not a double's 53 bits exactly;
     * 9e18 + 7 must come back to the unit. */
    tg_tensor *a = tg_from_array((int64_t[]){3000000000, 7}, TG_SHAPE(1, 2),
                                 TG_INT64);
    tg_tensor *b = tg_from_array((int64_t[]){3000000000, 1}, TG_SHAPE(2),
                                 TG_INT64);
    tg_tensor *p = tg_matmul(a, b);
    tg_tensor *q = tg_matmul_reference(a, b);
    cr_assert_eq(p->dtype, TG_INT64);
    cr_assert_eq(p->ndim, 1);
    cr_assert_eq(tg_data_i64(p)[0], INT64_C(9000000000000000007));
    cr_assert_eq(tg_data_i64(q)[0], INT64_C(9000000000000000007));
    tg_release(p);
    tg_release(q);
    tg_release(a);
    tg_release(b);
}

TG_TEST(matmul, dtypes_promote_as_elementwise)
{
    tg_tensor *a32 = tg_from_array((float[]){1, 2, 3, 4}, TG_SHAPE(2, 2),
                                   TG_FLOAT32);
    tg_tensor *b64 = tg_from_array((double[]){1, 0.5}, TG_SHAPE(2),
                                   TG_FLOAT64);
    tg_tensor *bi = tg_from_array((int64_t[]){2, -1}, TG_SHAPE(2), TG_INT64);
    tg_tensor *p = tg_matmul(a32, b64);
    tg_tensor *q = tg_matmul(bi, a32);
    /* small exact values: [1 + 1, 3 + 2] and [2 - 3, 4 - 4] */
    cr_assert_eq(p->dtype, TG_FLOAT64);
    cr_assert_eq(tg_data_f64(p)[0], 2.0);
    cr_assert_eq(tg_data_f64(p)[1], 5.0);
    cr_assert_eq(q->dtype, TG_FLOAT32);
    cr_assert_eq(tg_data_f32(q)[0], -1.0f);
    cr_assert_eq(tg_data_f32(q)[1], 0.0f);
    tg_release(p);
    tg_release(q);
    tg_release(a32);
    tg_release(b64);
    tg_release(bi);
}

TG_TEST(matmul, broadcast_operand_with_stride_0)
{
    /* One (2, 2) matrix seen as a batch of 3 with stride 0, times a batch
     * of 3 vectors: each block must read the same matrix. Exact values. */
    tg_tensor *m = tg_from_array((double[]){1, 2, 3, 4}, TG_SHAPE(2, 2),
                                 TG_FLOAT64);
    tg_tensor *mb = tg_view_make(m, (int64_t[]){3, 2, 2},
                                 (int64_t[]){0, 2, 1}, 3, 0);
    tg_tensor *v = tg_from_array((double[]){1, 0, 0, 1, 1, 1},
                                 TG_SHAPE(3, 2, 1), TG_FLOAT64);
    tg_tensor *p = tg_matmul(mb, v);
    tg_tensor *expected = tg_from_array((double[]){1, 3, 2, 4, 3, 7},
                                        TG_SHAPE(3, 2, 1), TG_FLOAT64);
    tg_assert_close(p, expected, 0, 0);
    tg_release(expected);
    tg_release(p);
    tg_release(v);
    tg_release(mb);
    tg_release(m);
}

TG_TEST(matmul, empty_operands)
{
    /* k = 0: every output is an empty sum, 0 */
    tg_tensor *a = tg_zeros(TG_SHAPE(2, 0), TG_FLOAT32);
    tg_tensor *b = tg_zeros(TG_SHAPE(0, 3), TG_FLOAT32);
    tg_tensor *p = tg_matmul(a, b);
    tg_tensor *zeros = tg_zeros(TG_SHAPE(2, 3), TG_FLOAT32);
    tg_assert_close(p, zeros, 0, 0);
    tg_tensor *e = tg_zeros(TG_SHAPE(0), TG_FLOAT64);
    tg_tensor *dot = tg_matmul(e, e);
    cr_assert_eq(dot->ndim, 0);
    cr_assert_eq(tg_item(dot), 0.0);
    /* an empty batch: an empty result of the right shape */
    tg_tensor *c = tg_zeros(TG_SHAPE(0, 2, 3), TG_FLOAT32);
    tg_tensor *d = tg_zeros(TG_SHAPE(3, 4), TG_FLOAT32);
    tg_tensor *r = tg_matmul(c, d);
    cr_assert_eq(r->ndim, 3);
    cr_assert_eq(r->shape[0], 0);
    cr_assert_eq(r->shape[1], 2);
    cr_assert_eq(r->shape[2], 4);
    tg_release(r);
    tg_release(c);
    tg_release(d);
    tg_release(dot);
    tg_release(e);
    tg_release(zeros);
    tg_release(p);
    tg_release(a);
    tg_release(b);
}

/* ------------------------------------------------------------ errors */

TG_TEST(matmul, error_mismatch_shows_shapes_rule_and_hint)
{
    /* (2, 3) @ (4, 5): no transpose would fit, so none is suggested */
    tg_tensor *a = tg_zeros(TG_SHAPE(2, 3), TG_FLOAT32);
    tg_tensor *b = tg_zeros(TG_SHAPE(4, 5), TG_FLOAT32);
    cr_assert_null(tg_matmul(a, b));
    cr_assert_str_eq(tg_last_error(),
                     "tg_matmul: cannot multiply (2, 3) by (4, 5)\n"
                     "  rule: a.shape[-1] must equal b.shape[-2], but 3 != "
                     "4\n"
                     "  hint: (n, k) @ (k, m) gives (n, m); check which "
                     "dims of a and b should be the shared k");
    tg_release(b);
    /* (2, 3) @ (2, 4): transposing a is what fits */
    b = tg_zeros(TG_SHAPE(2, 4), TG_FLOAT32);
    cr_assert_null(tg_matmul(a, b));
    tg_assert_error("cannot multiply (2, 3) by (2, 4)", "but 3 != 2",
                    "hint: transpose a first: at = tg_transpose(a, -1, -2); "
                    "y = tg_matmul(at, b); tg_release(at);");
    tg_release(b);
    /* (2, 3) @ (5, 3): transposing b fits (x @ W.T), and wins when both
     * would, as for (2, 3) @ (2, 3) */
    b = tg_zeros(TG_SHAPE(5, 3), TG_FLOAT32);
    cr_assert_null(tg_matmul(a, b));
    tg_assert_error("hint: transpose b first: bt = tg_transpose(b, -1, -2); y = tg_matmul(a, bt); tg_release(bt);");
    tg_release(b);
    cr_assert_null(tg_matmul(a, a));
    tg_assert_error("hint: transpose b first: bt = tg_transpose(b, -1, -2); y = tg_matmul(a, bt); tg_release(bt);");
    /* vectors */
    tg_tensor *u = tg_zeros(TG_SHAPE(3), TG_FLOAT32);
    tg_tensor *w = tg_zeros(TG_SHAPE(4), TG_FLOAT32);
    cr_assert_null(tg_matmul(u, w));
    cr_assert_str_eq(tg_last_error(),
                     "tg_matmul: cannot multiply (3,) by (4,)\n"
                     "  rule: a.shape[-1] must equal b.shape[0] (b is a "
                     "vector), but 3 != 4");
    cr_assert_null(tg_matmul(a, w));
    tg_assert_error("cannot multiply (2, 3) by (4,)", "but 3 != 4");
    tg_release(u);
    tg_release(w);
    tg_release(a);
}

TG_TEST(matmul, error_batch_dims_do_not_broadcast)
{
    tg_tensor *a = tg_zeros(TG_SHAPE(2, 3, 4), TG_FLOAT32);
    tg_tensor *b = tg_zeros(TG_SHAPE(5, 4, 2), TG_FLOAT32);
    cr_assert_null(tg_matmul(a, b));
    tg_assert_error("tg_matmul: cannot multiply (2, 3, 4) by (5, 4, 2)\n"
                    "  rule: the batch dims (all but the last two) must "
                    "broadcast, but (2,) and (5,) differ",
                    "(2 != 5)", "\n  hint: ");
    tg_release(a);
    tg_release(b);
}

TG_TEST(matmul, error_0d_operand)
{
    tg_tensor *s = tg_scalar(2, TG_FLOAT32);
    tg_tensor *v = tg_zeros(TG_SHAPE(3), TG_FLOAT32);
    cr_assert_null(tg_matmul(s, v));
    cr_assert_str_eq(tg_last_error(),
                     "tg_matmul: cannot multiply () by (3,)\n"
                     "  rule: both operands need at least 1 dim, but a is "
                     "0-d\n"
                     "  hint: to scale by a scalar use tg_mul(a, b)");
    cr_assert_null(tg_matmul(v, s));
    tg_assert_error("but b is 0-d");
    cr_assert_null(tg_matmul(s, s));
    tg_assert_error("but each is 0-d");
    tg_release(s);
    tg_release(v);
}

TG_TEST(matmul, error_result_too_large)
{
    /* (2^31, 1) @ (1, 2^31) from stride-0 views of one element: 2^62
     * outputs, refused before any allocation. */
    tg_tensor *one = tg_ones(TG_SHAPE(1), TG_FLOAT32);
    int64_t big = INT64_C(1) << 31;
    tg_tensor *col = tg_view_make(one, (int64_t[]){big, 1},
                                  (int64_t[]){0, 0}, 2, 0);
    tg_tensor *row = tg_view_make(one, (int64_t[]){1, big},
                                  (int64_t[]){0, 0}, 2, 0);
    cr_assert_null(tg_matmul(col, row));
    tg_assert_error("tg_matmul: shape (2147483648, 2147483648) has too many "
                    "elements");
    /* Batch dims 2^40 and 2^40 broadcast to (2^40, 2^40): refused too. */
    int64_t huge = INT64_C(1) << 40;
    tg_tensor *ba = tg_view_make(one, (int64_t[]){huge, 1, 2, 2},
                                 (int64_t[]){0, 0, 0, 0}, 4, 0);
    tg_tensor *bb = tg_view_make(one, (int64_t[]){1, huge, 2, 2},
                                 (int64_t[]){0, 0, 0, 0}, 4, 0);
    cr_assert_null(tg_matmul(ba, bb));
    tg_assert_error("has too many elements");
    tg_release(ba);
    tg_release(bb);
    tg_release(col);
    tg_release(row);
    tg_release(one);
}

TG_TEST(matmul, null_operand_returns_null_without_a_message)
{
    tg_tensor *a = tg_zeros(TG_SHAPE(2, 2), TG_FLOAT32);
    cr_assert_null(tg_matmul(NULL, a));
    cr_assert_null(tg_matmul(a, NULL));
    cr_assert_null(tg_matmul_reference(NULL, NULL));
    cr_assert_str_eq(tg_last_error(), "");
    tg_release(a);
}
