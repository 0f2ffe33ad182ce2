/*
 * tests/autograd/test_gemm_columns.c - the column kernel of
 * autograd/ops/gemm.c, which a narrow product (c with fewer than NR / 2
 * columns: Linear's last layer, its weight gradient for 2 inputs) takes.
 *
 * It promises what the other C kernels promise: every output is the same
 * float sum in the same p order, so it must agree bit for bit with the
 * direct kernel (itself checked against the reference kernel in
 * test_fast_matmul.c), for float32 and float64, with a's and b's rows or
 * columns strided, and on the automatic path as well as forced. The
 * checker (same_bits) is fed a result with one bit flipped and must reject
 * it; a product that does not fit the kernel (n too wide, a too big) or
 * whose copy of a cannot be allocated falls back.
 * Also here: the direct kernel's copy of a small b whose rows are strided
 * (Linear's x @ W^T) keeps its bits equal to the blocked kernel's.
 */
#include "../common.h"

#include "autograd/ops/gemm.h"

#include <string.h>

#define MAXE 70000 // elements of the largest operand below

static bool same_bits(const void *x, const void *y, size_t bytes)
{
    return memcmp(x, y, bytes) == 0;
}

TG_TEST(gemm_columns, checker_rejects_one_flipped_bit)
{
    float x[4] = {1, 2, 3, 4}, y[4] = {1, 2, 3, 4};
    cr_assert(same_bits(x, y, sizeof x));
    unsigned char *b = (unsigned char *)&y[2];
    b[0] ^= 1; // the last bit of 3's mantissa
    cr_assert_not(same_bits(x, y, sizeof x));
}

/* The shapes (m, k, n) and four layouts: a (m, k) row-major or stored
 * transposed, b (k, n) the same. */
static const int64_t shapes[][3] = {
    {32, 32, 3}, {32, 32, 2}, {3, 5, 1}, {7, 1, 7}, {100, 40, 5},
    {512, 8, 3}, {6, 0, 2}, {17, 3, 4},
    /* a bigger than the stack copy: read in place when its columns are
     * contiguous, else transposed into a block (16 x 16 blocks with
     * edges); the last is too big for the column kernel */
    {128, 256, 2}, {300, 100, 3}, {33, 129, 1}, {512, 130, 3},
    {40, 20, 7}, {24, 33, 6},
};

static void fill(float *f, double *d, int64_t n, int seed)
{
    uint32_t s = 2463534242u + (uint32_t)seed;
    for (int64_t i = 0; i < n; i++) {
        s ^= s << 13;
        s ^= s >> 17;
        s ^= s << 5;
        d[i] = (double)(s % 20001) / 1000.0 - 10.0; // in [-10, 10]
        f[i] = (float)d[i];
    }
}

/* c by the given path, for one shape and layout. */
static void product(tg_gemm_path path, bool f64, const void *a, const void *b,
                    void *c, int64_t m, int64_t k, int64_t n, int layout)
{
    int64_t sa_i = layout & 1 ? 1 : k, sa_p = layout & 1 ? m : 1;
    int64_t sb_p = layout & 2 ? 1 : n, sb_j = layout & 2 ? k : 1;
    tg_gemm_force_path(path);
    if (f64)
        tg_gemm_f64(a, sa_i, sa_p, b, sb_p, sb_j, c, m, k, n);
    else
        tg_gemm_f32(a, sa_i, sa_p, b, sb_p, sb_j, c, m, k, n);
    tg_gemm_force_path(TG_GEMM_AUTO);
}

static void check_paths_on(const int64_t (*shapes)[3], size_t nshapes,
                           tg_gemm_path base, tg_gemm_path path,
                           const char *name);

static void check_paths(tg_gemm_path path, const char *name)
{
    check_paths_on(shapes, sizeof shapes / sizeof shapes[0], TG_GEMM_DIRECT,
                   path, name);
}

static void check_paths_on(const int64_t (*shapes)[3], size_t nshapes,
                           tg_gemm_path base, tg_gemm_path path,
                           const char *name)
{
    static float af[MAXE], bf[MAXE], cf[2][MAXE];
    static double ad[MAXE], bd[MAXE], cd[2][MAXE];
    fill(af, ad, MAXE, 1);
    fill(bf, bd, MAXE, 2);
    for (size_t s = 0; s < nshapes; s++) {
        int64_t m = shapes[s][0], k = shapes[s][1], n = shapes[s][2];
        for (int f64 = 0; f64 < 2; f64++)
            for (int layout = 0; layout < 4; layout++) {
                void *a = f64 ? (void *)ad : (void *)af;
                void *b = f64 ? (void *)bd : (void *)bf;
                void *c0 = f64 ? (void *)cd[0] : (void *)cf[0];
                void *c1 = f64 ? (void *)cd[1] : (void *)cf[1];
                size_t bytes = (size_t)(m * n) * (f64 ? 8 : 4);
                memset(c0, 0x7f, bytes);
                memset(c1, 0x55, bytes); // differs from c0 until written
                product(base, f64, a, b, c0, m, k, n, layout);
                product(path, f64, a, b, c1, m, k, n, layout);
                cr_assert(same_bits(c0, c1, bytes),
                          "%s and the base path differ on (%lld, %lld, "
                          "%lld), %s, layout %d",
                          name, (long long)m, (long long)k, (long long)n,
                          f64 ? "float64" : "float32", layout);
            }
    }
}

TG_TEST(gemm_columns, forced_agrees_with_direct_bit_for_bit)
{
    check_paths(TG_GEMM_COLUMNS, "the column kernel");
}

TG_TEST(gemm_columns, automatic_path_agrees_with_direct_bit_for_bit)
{
    check_paths(TG_GEMM_AUTO, "the automatic path");
}

/* With each micro-kernel variant the CPU has: the AVX-512 one transposes
 * a row-major a's blocks in registers, the others copy a transposed. */
TG_TEST(gemm_columns, each_variant_agrees_with_direct_bit_for_bit)
{
    static const tg_gemm_kernel variants[] = {
        TG_GEMM_KERNEL_GENERIC, TG_GEMM_KERNEL_AVX2, TG_GEMM_KERNEL_AVX512};
    for (size_t v = 0; v < sizeof variants / sizeof variants[0]; v++) {
        if (!tg_gemm_force_kernel(variants[v]))
            continue;
        check_paths(TG_GEMM_COLUMNS, "the column kernel");
    }
    tg_gemm_force_kernel(TG_GEMM_KERNEL_AUTO);
}

/* n = 16 is no narrow product: forced, the column kernel is not used (its
 * buffers hold NR / 2 columns) and the product is still right. */
TG_TEST(gemm_columns, too_wide_falls_back)
{
    static float a[32 * 32], b[32 * 16], c0[32 * 16], c1[32 * 16];
    static double ad[32 * 32], bd[32 * 16];
    fill(a, ad, 32 * 32, 3);
    fill(b, bd, 32 * 16, 4);
    product(TG_GEMM_DIRECT, false, a, b, c0, 32, 32, 16, 0);
    product(TG_GEMM_COLUMNS, false, a, b, c1, 32, 32, 16, 0);
    cr_assert(same_bits(c0, c1, sizeof c0));
}

/* Without memory for the copy of a big a, the forced column kernel gives
 * way to the direct kernel, with the same bits (the generic variant: the
 * AVX-512 one transposes this a in registers, needing no copy). */
TG_TEST(gemm_columns, no_memory_for_a_falls_back)
{
    static float a[300 * 100], b[100 * 3], c0[300 * 3], c1[300 * 3];
    static double ad[300 * 100], bd[100 * 3];
    fill(a, ad, 300 * 100, 5);
    fill(b, bd, 100 * 3, 6);
    product(TG_GEMM_DIRECT, false, a, b, c0, 300, 100, 3, 0);
    memset(c1, 0x55, sizeof c1);
    tg_gemm_force_kernel(TG_GEMM_KERNEL_GENERIC);
    tg_fail_allocations_after(0);
    product(TG_GEMM_COLUMNS, false, a, b, c1, 300, 100, 3, 0);
    tg_fail_allocations_after(-1);
    tg_gemm_force_kernel(TG_GEMM_KERNEL_AUTO);
    cr_assert(same_bits(c0, c1, sizeof c0));
}

TG_TEST(gemm_columns, direct_with_copied_b_agrees_with_blocked)
{
    static const int64_t wide[][3] = {
        {32, 2, 32}, {32, 32, 32}, {5, 7, 9}, {64, 64, 64}, {2, 3, 16},
    };
    check_paths_on(wide, sizeof wide / sizeof wide[0], TG_GEMM_BLOCKED,
                   TG_GEMM_DIRECT, "the direct kernel");
}
