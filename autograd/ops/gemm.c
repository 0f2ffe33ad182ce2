/*
 * autograd/ops/gemm.c - the fast float kernels of tg_matmul: a cache-
 * blocked product with packed panels and a register-tiled micro-kernel
 * (plain C, or written for AVX2 or AVX-512 registers and chosen at run
 * time), a small kernel that runs the same register tiles on operands
 * read in place, a column kernel for narrow products, a direct kernel,
 * and the optional OpenBLAS call. One (m, k) @ (k, n) block per call;
 * matmul.c loops the batch.
 *
 * This file is not the reference: matmul.c's naive triple loop is. It is
 * not a BLAS either: no alpha/beta, no FMA, one blocking per micro-kernel.
 *
 * What the C kernels promise. Every output is
 *     c[i, j] = (...((0 + a[i,0] b[0,j]) + a[i,1] b[1,j]) + ...)
 * in the operands' type: each product rounded, then added in p order. The
 * blocked kernel keeps that order (a k-block's partial sums are reloaded
 * from c, never added as a separate sum), vectorises across j only, and
 * never fuses a*b+c into an FMA: the build forbids the compiler to
 * contract one, and no micro-kernel asks for one (an FMA rounds once, so
 * a kernel with FMAs would give other bits than one without, and a CPU
 * without FMA would need the slow software fma). So the direct kernel,
 * the column kernel, the small one, the blocked one, every micro-kernel
 * variant
 * (generic, AVX2, AVX-512: each tile shape only decides which c[i, j]
 * are computed together),
 * every thread count, every blocking size and every target_clones
 * variant give the same bits, on every x86-64 CPU. For float64 that is
 * exactly the reference's sum. For float32 the reference sums in double and
 * rounds once; the recursive float32 sum is off from the exact one by at
 * most gamma_k * sum_p |a[i,p] b[p,j]|, gamma_k = k u / (1 - k u) with
 * u = 2^-24 (Higham, Accuracy and Stability, 3.1), and the reference by
 * u |c|, so
 *     |fast - reference| <= (k + 2) u (|a| @ |b|)[i, j]
 * while k u < 1/2, which is the tolerance the tests use. OpenBLAS sums in
 * its own order with FMAs; the same bound holds for it (an FMA rounds
 * once where the plain code rounds twice).
 *
 * Which kernel runs (gemm_portable; TG_GEMM_* in gemm.h forces one):
 *   - column: c narrower than half the generic tile (n < NR / 2: Linear's
 *     last layer, its weight gradient for 2 inputs), m <= NARROW_MAX_M, a
 *     at most NARROW_MAX_A elements. Vectorised over the rows of c: a
 *     column of c at a time, COLUMN_VECS vectors of its sums in registers
 *     while p runs. a's columns are read in place when contiguous (a =
 *     g^T in dW = g^T @ x). A row-major a (h in y = h @ W^T) the AVX-512
 *     variant transposes block by block in registers and uses each block
 *     at once (k <= COLUMN_MAX_K; (256, 128, 3): 7.6-10 -> 2.2 us); else
 *     a is transposed first into a buffer (on the stack when small), by
 *     16 x 16 blocks.
 *   - small: one thread, a and b together at most SMALL_MAX_BYTES (in L2)
 *     and k <= SMALL_MAX_K (a k x 32 panel of b in L1): every product of
 *     a small training step (Linear(128, 128) at batch 256, the (32, 32,
 *     32) ones of a tiny MLP). Nothing is packed: packing a buys nothing
 *     when a is in cache, as the micro-kernel's broadcast of a[i, p] is
 *     one load wherever a[i, p] lies. The variant's tile (AVX-512 8 x 32)
 *     reads a through its strides and b's rows in place; a b with strided
 *     rows (W^T in y = x @ W^T) is transposed once into a row-major block
 *     (register transposes as above), and a partial last panel of b's
 *     columns is copied into a zero-padded one. Each tile's outputs are
 *     computed whole, from p = 0; a tile at c's right edge goes through a
 *     buffer.
 *   - direct: forced, or with no memory for another kernel's buffers, or a
 *     small product (or m < MR / 2) that the small kernel does not take.
 *     Row i of c as sum_p a[i, p] b[p, :], in place.
 *   - blocked: everything else (large products, several threads).
 * On the medium MLP step's (256, 128, 128) products at 1 thread on an AMD
 * EPYC (Zen 5) the small kernel ran at 205-240 GFLOP/s against 180-190
 * for the blocked one, which packed both operands on every call; on the
 * (32, 32, 32) ones 0.31-0.41 us against 0.74-0.98 (bench/gemm_shapes.c
 * times each product of both steps).
 *
 * The blocked kernel (after Goto and van de Geijn, "Anatomy of high-
 * performance matrix multiplication", 2008, and BLIS):
 *   for each column block jc (NC columns) and k-block pc (KC):
 *     pack b[pc.., jc..] into panels of NR columns, p-major (all threads)
 *     for each row block ic (mc rows), one per thread at a time:
 *       pack a[ic.., pc..] into panels of MR rows, p-major
 *       for each NR panel and MR panel: the micro-kernel, an MR x NR tile
 *         of c held in registers while p runs over the k-block.
 * Packing reads the operands through their strides, so a transposed view
 * costs nothing extra, and pads edge panels with zeros, so the micro-
 * kernel has fixed trip counts (an x86 variant computes a tile at c's
 * edge in a full-size buffer, copied out). The work is split by row
 * blocks of c: every output is computed by one thread, whole, so the
 * thread count cannot change a result.
 *
 * The micro-kernels. The generic one is plain C that GCC vectorises (MR
 * rows of NR lanes, the rows spelt out so the accumulators stay in
 * registers), built for any CPU and, through TG_VECTOR_CLONES, for AVX2
 * and AVX-512 too. Its 6 x 16 float tile is only 6 AVX-512 registers of
 * accumulators: too few sums in flight to cover the adds' latency on two
 * add pipes, and 7 loads per 6 vector products. The x86 variants are
 * written for their registers with GCC's vector extension and a target
 * attribute each: AVX-512 an 8 x 32 tile (16 of its 32 registers, 2 loads
 * of b and 8 broadcasts of a per 16 products), AVX2 a 6 x 16 tile (12 of
 * its 16). The widest the CPU supports (__builtin_cpu_supports, asked
 * once; no ifunc, so ThreadSanitizer builds have them too) runs, unless
 * TG_GEMM_KERNEL names another or a test forces one; a c no wider than
 * the generic tile keeps the generic kernel, whose narrower tile pads
 * less. On float32 1024^3 at 1 thread on an AMD EPYC with AVX-512 the
 * 8 x 32 kernel ran at about 210-230 GFLOP/s against 165 for the generic
 * one (6 x 32 and 12 x 32 tiles and k-blocks of 384 and 512 were within
 * the noise of it); see docs/performance.md.
 */
#include "gemm.h"

#include "../internal.h"

#include <limits.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#ifdef TG_HAVE_OPENBLAS
#include <cblas.h>
#endif

/* The generic register tile: MR rows of NR columns, 6 x 16 floats or
 * 6 x 8 doubles. The x86 variants below have their own tiles. */
#define MR 6
#define ROWS(X) X(0) X(1) X(2) X(3) X(4) X(5)
#define NR_F32 16
#define NR_F64 8
/* Cache blocks, in elements: a KC x NR panel of b (16 KB of float) stays
 * in L1 while a's MC x KC block (about 200 KB) stays in L2. MC_MAX is a
 * multiple of every variant's rows. */
#define KC_F32 256
#define KC_F64 128
#define MC_MAX 192
#define NC_MAX 3072
/* The largest tile of any variant, in elements (an edge tile is computed
 * in a buffer this big). */
#define TILE_MAX 512
/* The packing buffers' alignment, in bytes: a cache line. */
#define GEMM_ALIGN 64
/* A product the small kernel does not take (below) runs the direct
 * kernel below this many multiply-adds, unless c is narrow: packing would
 * cost more than it saves. So does one whose a has fewer than MR / 2 rows
 * (a tile would be mostly padding); a narrow c (n < NR / 2) takes the
 * column kernel when it fits (below), else the blocked kernel, whose
 * padded tiles still beat the direct kernel's short vector loops. */
#define DIRECT_MAX_WORK 8192
/* A narrow c (n < NR / 2) of a small product (a at most NARROW_MAX_A
 * elements, in L2; at most NARROW_MAX_M rows) takes the column kernel: no
 * padding, no packing but a copy of a when its columns are strided (on
 * the stack up to NARROW_STACK_A elements, else in a block). */
#define NARROW_MAX_A 65536
#define NARROW_STACK_A 4096
/* The column kernel's sums held in registers: up to this many vectors
 * of 64 bytes (its switch is written for 4). */
#define COLUMN_VECS 4
_Static_assert(COLUMN_VECS == 4, "gemm_columns' switch counts to 4");
/* The AVX-512 column kernel's copy of b, k x 8, is on the stack. */
#define COLUMN_MAX_K 512
/* The direct kernel copies a b of at most this many elements whose rows
 * are strided into a row-major buffer on the stack. */
#define DIRECT_COPY_MAX_B 4096
#define NARROW_MAX_M 512
/* A product on one thread whose a and b together take at most
 * SMALL_MAX_BYTES (they stay in L2) and whose k is at most SMALL_MAX_K (a
 * k x 32 panel of float b stays in L1) runs the small kernel: nothing
 * packed. */
#define SMALL_MAX_BYTES (INT64_C(256) * 1024)
#define SMALL_MAX_K 256
/* Work (multiply-adds) per thread below which a thread does not pay. */
#define GEMM_MIN_WORK_PER_THREAD (INT64_C(1) << 18)

/* The x86 micro-kernels are built where GCC or Clang can compile code
 * for a target the build does not assume (target attributes) and ask
 * the CPU what it has (__builtin_cpu_supports). */
#if (defined(__GNUC__) || defined(__clang__)) && defined(__x86_64__)
#define TG_GEMM_X86 1
#endif

static _Thread_local tg_gemm_path forced_path = TG_GEMM_AUTO;
static _Thread_local tg_gemm_kernel forced_kernel = TG_GEMM_KERNEL_AUTO;

void tg_gemm_force_path(tg_gemm_path path)
{
    forced_path = path;
}

bool tg_gemm_kernel_supported(tg_gemm_kernel kernel)
{
    switch (kernel) {
    case TG_GEMM_KERNEL_AUTO:
    case TG_GEMM_KERNEL_GENERIC:
        return true;
#ifdef TG_GEMM_X86
    case TG_GEMM_KERNEL_AVX2:
        return __builtin_cpu_supports("avx2");
    case TG_GEMM_KERNEL_AVX512:
        return __builtin_cpu_supports("avx512f");
#else
    case TG_GEMM_KERNEL_AVX2:
    case TG_GEMM_KERNEL_AVX512:
        return false;
#endif
    }
    return false;
}

bool tg_gemm_force_kernel(tg_gemm_kernel kernel)
{
    if (!tg_gemm_kernel_supported(kernel))
        return false;
    forced_kernel = kernel;
    return true;
}

/* TG_GEMM_KERNEL's choice, or AUTO when unset, unknown or unsupported. */
static tg_gemm_kernel kernel_from_env(void)
{
    static const char *const names[] = {
        [TG_GEMM_KERNEL_GENERIC] = "generic",
        [TG_GEMM_KERNEL_AVX2] = "avx2",
        [TG_GEMM_KERNEL_AVX512] = "avx512",
    };
    const char *s = getenv(TG_GEMM_KERNEL);
    for (int kk = TG_GEMM_KERNEL_GENERIC; s && kk <= TG_GEMM_KERNEL_AVX512;
         kk++)
        if (strcmp(s, names[kk]) == 0 &&
            tg_gemm_kernel_supported((tg_gemm_kernel)kk))
            return (tg_gemm_kernel)kk;
    return TG_GEMM_KERNEL_AUTO;
}

tg_gemm_kernel tg_gemm_kernel_in_use(void)
{
    /* The environment and the CPU do not change: looked up once (two
     * threads racing here store the same value). */
    static atomic_int chosen = TG_GEMM_KERNEL_AUTO;
    if (forced_kernel != TG_GEMM_KERNEL_AUTO)
        return forced_kernel;
    int k = atomic_load_explicit(&chosen, memory_order_relaxed);
    if (k == TG_GEMM_KERNEL_AUTO) {
        k = kernel_from_env();
        for (int kk = TG_GEMM_KERNEL_AVX512;
             k == TG_GEMM_KERNEL_AUTO && kk >= TG_GEMM_KERNEL_GENERIC; kk--)
            if (tg_gemm_kernel_supported((tg_gemm_kernel)kk))
                k = kk;
        atomic_store_explicit(&chosen, k, memory_order_relaxed);
    }
    return (tg_gemm_kernel)k;
}

static int64_t round_up(int64_t x, int64_t to)
{
    return (x + to - 1) / to * to;
}

static int64_t min64(int64_t x, int64_t y)
{
    return x < y ? x : y;
}

/* Threads for an m x k x n product with mr-row tiles: never more than
 * there are row tiles, nor than the work pays for. */
static int gemm_threads(int64_t m, int64_t k, int64_t n, int64_t mr)
{
    int nt = tg_team_threads();
    int64_t work = m * k * n;
    int64_t by_work = work / GEMM_MIN_WORK_PER_THREAD;
    int64_t by_rows = (m + mr - 1) / mr;
    if (by_work < nt)
        nt = by_work < 1 ? 1 : (int)by_work;
    if (by_rows < nt)
        nt = (int)by_rows;
    return nt;
}

#ifdef TG_GEMM_X86
/* An x86 micro-kernel and its loop over one packed block, for the
 * target TGT: an MR_ x (NV W) tile of c held in MR_ NV vectors of W
 * elements of T (GCC's vector extension, which the target turns into
 * its registers). Per p it loads NV vectors of packed b and multiplies
 * them by each row's a[i, p], then adds: a product, rounded, then a sum,
 * exactly what the generic kernel does per element (-ffp-contract=off
 * keeps the two apart). An edge tile is computed in a full-size buffer
 * and copied out, so the kernel has no edge cases. */
#define TG_GEMM_SIMD(name, TGT, T, W, MR_, NV, KC_)                          \
    typedef T name##_vec                                                     \
        __attribute__((vector_size((W) * sizeof(T)), aligned(sizeof(T)),    \
                       may_alias));                                          \
    __attribute__((target(TGT))) static inline void name##_micro(            \
        int64_t kc, const T *restrict ap, const T *restrict bp,              \
        T *restrict c, int64_t ldc, bool first)                              \
    {                                                                        \
        name##_vec acc[MR_][NV];                                             \
        _Pragma("GCC unroll 16") for (int i = 0; i < MR_; i++)               \
            _Pragma("GCC unroll 8") for (int v = 0; v < NV; v++)             \
        {                                                                    \
            if (first)                                                       \
                acc[i][v] = (name##_vec){0};                                 \
            else                                                             \
                acc[i][v] = *(const name##_vec *)(c + i * ldc + v * (W));    \
        }                                                                    \
        for (int64_t p = 0; p < kc; p++) {                                   \
            name##_vec b[NV];                                                \
            _Pragma("GCC unroll 8") for (int v = 0; v < NV; v++)             \
                b[v] = *(const name##_vec *)(bp + (p * NV + v) * (W));       \
            _Pragma("GCC unroll 16") for (int i = 0; i < MR_; i++)           \
            {                                                                \
                const T a = ap[p * MR_ + i];                                 \
                _Pragma("GCC unroll 8") for (int v = 0; v < NV; v++)         \
                    acc[i][v] += b[v] * a;                                   \
            }                                                                \
        }                                                                    \
        _Pragma("GCC unroll 16") for (int i = 0; i < MR_; i++)               \
            _Pragma("GCC unroll 8") for (int v = 0; v < NV; v++)             \
                *(name##_vec *)(c + i * ldc + v * (W)) = acc[i][v];          \
    }                                                                        \
                                                                             \
    __attribute__((target(TGT))) static void name##_macro(                   \
        int64_t mc, int64_t nc, int64_t kc, const T *ap, const T *bp, T *c,  \
        int64_t ldc, bool first)                                             \
    {                                                                        \
        enum { NR_ = (W) * (NV) };                                           \
        for (int64_t j0 = 0; j0 < nc; j0 += NR_)                             \
            for (int64_t i0 = 0; i0 < mc; i0 += MR_) {                       \
                int64_t mr = min64(MR_, mc - i0), nr = min64(NR_, nc - j0);  \
                T *cij = c + i0 * ldc + j0;                                  \
                if (mr == MR_ && nr == NR_) {                                \
                    name##_micro(kc, ap + i0 * kc, bp + j0 * kc, cij, ldc,   \
                                 first);                                     \
                    continue;                                                \
                }                                                            \
                T tile[MR_ * NR_] = {0};                                     \
                for (int64_t i = 0; i < mr && !first; i++)                   \
                    for (int64_t j = 0; j < nr; j++)                         \
                        tile[i * NR_ + j] = cij[i * ldc + j];                \
                name##_micro(kc, ap + i0 * kc, bp + j0 * kc, tile, NR_,      \
                             first);                                         \
                for (int64_t i = 0; i < mr; i++)                             \
                    for (int64_t j = 0; j < nr; j++)                         \
                        cij[i * ldc + j] = tile[i * NR_ + j];                \
            }                                                                \
    }                                                                        \
    /* The small kernel's tile: c[0:rows, 0:NR_] (row stride ldc) = a's     \
     * rows (strides sa_i, sa_p, read in place: a broadcast of a[i, p] is    \
     * one load either way) times b[0:k, 0:NR_] (row stride ldb, read in    \
     * place), every sum from 0 in p order. */                               \
    __attribute__((target(TGT))) static inline                               \
        __attribute__((always_inline)) void name##_small_tile_(              \
            int64_t rows, int64_t k, const T *restrict a, int64_t sa_i,      \
            int64_t sa_p, const T *restrict b, int64_t ldb, T *restrict c,   \
            int64_t ldc)                                                     \
    {                                                                        \
        name##_vec acc[MR_][NV];                                             \
        _Pragma("GCC unroll 16") for (int i = 0; i < MR_; i++)               \
            _Pragma("GCC unroll 8") for (int v = 0; v < NV; v++)             \
                acc[i][v] = (name##_vec){0};                                 \
        for (int64_t p = 0; p < k; p++) {                                    \
            name##_vec bv[NV];                                               \
            _Pragma("GCC unroll 8") for (int v = 0; v < NV; v++)             \
                bv[v] = *(const name##_vec *)(b + p * ldb + v * (W));        \
            _Pragma("GCC unroll 16") for (int i = 0; i < MR_; i++)           \
            {                                                                \
                if (i < rows) {                                              \
                    const T ai = a[i * sa_i + p * sa_p];                     \
                    _Pragma("GCC unroll 8") for (int v = 0; v < NV; v++)     \
                        acc[i][v] += bv[v] * ai;                             \
                }                                                            \
            }                                                                \
        }                                                                    \
        _Pragma("GCC unroll 16") for (int i = 0; i < MR_; i++)               \
            _Pragma("GCC unroll 8") for (int v = 0; v < NV; v++)             \
                if (i < rows)                                                \
                    *(name##_vec *)(c + i * ldc + v * (W)) = acc[i][v];      \
    }                                                                        \
    /* A full tile of a row-major a or of a's transpose gets a copy with     \
     * that stride a constant (8 addresses from one base); edge rows the     \
     * general one. */                                                       \
    __attribute__((target(TGT))) static void name##_small_tile(              \
        int64_t rows, int64_t k, const T *a, int64_t sa_i, int64_t sa_p,     \
        const T *b, int64_t ldb, T *c, int64_t ldc)                          \
    {                                                                        \
        if (rows == MR_ && sa_i == 1)                                        \
            name##_small_tile_(MR_, k, a, 1, sa_p, b, ldb, c, ldc);          \
        else if (rows == MR_ && sa_p == 1)                                   \
            name##_small_tile_(MR_, k, a, sa_i, 1, b, ldb, c, ldc);          \
        else                                                                 \
            name##_small_tile_(rows, k, a, sa_i, sa_p, b, ldb, c, ldc);      \
    }                                                                        \
    _Static_assert((MR_) * (W) * (NV) <= TILE_MAX, "tile too big");          \
    _Static_assert(MC_MAX % (MR_) == 0, "MC_MAX not a multiple of MR");      \
    enum { name##_mr = MR_, name##_nr = (W) * (NV), name##_kc = KC_ };

/* AVX-512: 32 registers of 16 floats (8 doubles). An 8 x 32 tile is 16
 * accumulators, enough independent sums to keep both add pipes busy
 * through their latency; 2 loads of b and 8 broadcasts of a feed 16
 * products. The defaults can be overridden to measure other tiles. */
#ifndef TG_GEMM_AVX512_MR
#define TG_GEMM_AVX512_MR 8
#endif
#ifndef TG_GEMM_AVX512_NV
#define TG_GEMM_AVX512_NV 2
#endif
#ifndef TG_GEMM_AVX512_KC
#define TG_GEMM_AVX512_KC 256
#endif
/* AVX2: 16 registers of 8 floats: a 6 x 16 tile is 12 accumulators, 2
 * for b and 1 for a's broadcast. */
TG_GEMM_SIMD(avx512_f32, "avx512f", float, 16, TG_GEMM_AVX512_MR,
             TG_GEMM_AVX512_NV, TG_GEMM_AVX512_KC)
TG_GEMM_SIMD(avx512_f64, "avx512f", double, 8, TG_GEMM_AVX512_MR,
             TG_GEMM_AVX512_NV, TG_GEMM_AVX512_KC / 2)
TG_GEMM_SIMD(avx2_f32, "avx2", float, 8, 6, 2, 256)
TG_GEMM_SIMD(avx2_f64, "avx2", double, 4, 6, 2, 128)

/* A W x W block transpose in registers, for the AVX-512 variants (the
 * small kernel's copy of a strided b, the column kernel's of a strided
 * a): dst[j * ldd + i] = x[i * s_r + j] for i, j < W. Stage h (W / 2,
 * ..., 1) swaps bit h of the row index with bit h of the lane index, by
 * one two-register shuffle per row; after every stage each element (i, j)
 * sits at (j, i). A copy: no arithmetic, so no bits to keep. */
#define TG_TR_LO(h, j, W) ((j) & (h) ? (W) + (j) - (h) : (j))
#define TG_TR_HI(h, j, W) ((j) & (h) ? (W) + (j) : (j) + (h))
#define TG_TR_IDX_8(F, h, W)                                                 \
    F(h, 0, W), F(h, 1, W), F(h, 2, W), F(h, 3, W), F(h, 4, W), F(h, 5, W),  \
        F(h, 6, W), F(h, 7, W)
#define TG_TR_IDX_16(F, h, W)                                                \
    TG_TR_IDX_8(F, h, W), F(h, 8, W), F(h, 9, W), F(h, 10, W), F(h, 11, W),  \
        F(h, 12, W), F(h, 13, W), F(h, 14, W), F(h, 15, W)
/* One stage: the lane indices are constants, so each shuffle is one
 * two-register permute (__builtin_shufflevector: GCC 12 and Clang). */
#define TG_TR_STAGE(name, IT, W, h)                                          \
    if ((h) < (W)) {                                                         \
        _Pragma("GCC unroll 16") for (int i = 0; i < (W); i++)               \
        {                                                                    \
            if (i & (h))                                                     \
                continue;                                                    \
            name##_vec t0 = __builtin_shufflevector(                         \
                r[i], r[i + (h)], TG_TR_IDX_##W(TG_TR_LO, h, W));            \
            name##_vec t1 = __builtin_shufflevector(                         \
                r[i], r[i + (h)], TG_TR_IDX_##W(TG_TR_HI, h, W));            \
            r[i] = t0;                                                       \
            r[i + (h)] = t1;                                                 \
        }                                                                    \
    }
#define TG_TR_STAGES(name, IT, W)                                            \
    TG_TR_STAGE(name, IT, W, 8)                                              \
    TG_TR_STAGE(name, IT, W, 4)                                              \
    TG_TR_STAGE(name, IT, W, 2)                                              \
    TG_TR_STAGE(name, IT, W, 1)
#define TG_GEMM_TRANSPOSE(name, TGT, T, IT, W)                               \
    typedef IT name##_ivec                                                   \
        __attribute__((vector_size((W) * sizeof(IT))));                      \
    __attribute__((target(TGT))) static void name##_transpose(               \
        const T *x, int64_t s_r, T *restrict dst, int64_t ldd)               \
    {                                                                        \
        name##_vec r[W];                                                     \
        _Pragma("GCC unroll 16") for (int i = 0; i < (W); i++)               \
            r[i] = *(const name##_vec *)(x + i * s_r);                       \
        TG_TR_STAGES(name, IT, W)                                            \
        _Pragma("GCC unroll 16") for (int j = 0; j < (W); j++)               \
            *(name##_vec *)(dst + j * ldd) = r[j];                           \
    }                                                                        \
    /* The column kernel (see gemm_columns) for an a with contiguous rows,   \
     * m >= W, n < 8 and k <= COLUMN_MAX_K, without a's transposed copy: W   \
     * rows of c at a time (the last W end at m, overlapping: the same       \
     * bits), each W x W block of a transposed in registers, its columns     \
     * a[i0:i0+W, p] multiplied by b[p, j] into n vectors of sums, p in      \
     * order. b is first copied to bp[p * 8 + j]; N is n, a constant in      \
     * each copy of the loop. */                                             \
    __attribute__((target(TGT))) static inline                               \
        __attribute__((always_inline)) void name##_columns_n(                \
            const int N, const T *a, int64_t sa_i, const T *bp, T *c,        \
            int64_t m, int64_t k)                                            \
    {                                                                        \
        for (int64_t i0 = 0; i0 < m; i0 += (W)) {                            \
            int64_t s = i0 + (W) > m ? m - (W) : i0;                         \
            const T *as = a + s * sa_i;                                      \
            name##_vec acc[8];                                               \
            _Pragma("GCC unroll 8") for (int j = 0; j < N; j++)              \
                acc[j] = (name##_vec){0};                                    \
            int64_t p0 = 0;                                                  \
            for (; p0 + (W) <= k; p0 += (W)) {                               \
                name##_vec r[W];                                             \
                _Pragma("GCC unroll 16") for (int i = 0; i < (W); i++)       \
                    r[i] = *(const name##_vec *)(as + i * sa_i + p0);        \
                TG_TR_STAGES(name, IT, W)                                    \
                _Pragma("GCC unroll 16") for (int q = 0; q < (W); q++)       \
                    _Pragma("GCC unroll 8") for (int j = 0; j < N; j++)      \
                        acc[j] += r[q] * bp[(p0 + q) * 8 + j];               \
            }                                                                \
            for (; p0 < k; p0++) {                                           \
                name##_vec col;                                              \
                for (int i = 0; i < (W); i++)                                \
                    col[i] = as[i * sa_i + p0];                              \
                _Pragma("GCC unroll 8") for (int j = 0; j < N; j++)          \
                    acc[j] += col * bp[p0 * 8 + j];                          \
            }                                                                \
            for (int j = 0; j < N; j++)                                      \
                for (int i = 0; i < (W); i++)                                \
                    c[(s + i) * N + j] = acc[j][i];                          \
        }                                                                    \
    }                                                                        \
    __attribute__((target(TGT))) static void name##_columns(                 \
        const T *a, int64_t sa_i, const T *b, int64_t sb_p, int64_t sb_j,    \
        T *c, int64_t m, int64_t k, int64_t n)                               \
    {                                                                        \
        T bp[COLUMN_MAX_K * 8];                                              \
        for (int64_t p = 0; p < k; p++)                                      \
            for (int64_t j = 0; j < n; j++)                                  \
                bp[p * 8 + j] = b[p * sb_p + j * sb_j];                      \
        switch (n) {                                                         \
        case 1: name##_columns_n(1, a, sa_i, bp, c, m, k); break;            \
        case 2: name##_columns_n(2, a, sa_i, bp, c, m, k); break;            \
        case 3: name##_columns_n(3, a, sa_i, bp, c, m, k); break;            \
        case 4: name##_columns_n(4, a, sa_i, bp, c, m, k); break;            \
        case 5: name##_columns_n(5, a, sa_i, bp, c, m, k); break;            \
        case 6: name##_columns_n(6, a, sa_i, bp, c, m, k); break;            \
        default: name##_columns_n(7, a, sa_i, bp, c, m, k); break;           \
        }                                                                    \
    }                                                                        \
    enum { name##_tw = (W) };
TG_GEMM_TRANSPOSE(avx512_f32, "avx512f", float, int32_t, 16)
TG_GEMM_TRANSPOSE(avx512_f64, "avx512f", double, int64_t, 8)
#endif

#ifdef TG_HAVE_OPENBLAS
/* How BLAS can read a rows x cols operand with strides (s_r, s_c): as is
 * (row-major, leading dimension s_r) or transposed (column-major, s_c).
 * A size-1 dim's stride never matters. False when neither works (then
 * the operand is copied). */
static bool blas_layout(int64_t rows, int64_t cols, int64_t s_r, int64_t s_c,
                        bool *trans, int *ld)
{
    int64_t l;
    if ((s_c == 1 || cols == 1) && (rows == 1 || s_r >= cols)) {
        *trans = false;
        l = rows == 1 || s_r < 1 ? (cols > 1 ? cols : 1) : s_r;
        if (l < cols)
            l = cols;
    } else if ((s_r == 1 || rows == 1) && (cols == 1 || s_c >= rows)) {
        *trans = true;
        l = cols == 1 || s_c < 1 ? (rows > 1 ? rows : 1) : s_c;
        if (l < rows)
            l = rows;
    } else {
        return false;
    }
    if (l > INT_MAX)
        return false;
    *ld = (int)l;
    return true;
}
#endif

/* A blocked kernel's micro-kernel variant: its tile (mr x nr), k-block
 * and the loop over one packed block (c[0:mc, 0:nc] (+)= the packed a
 * block times the packed b panel; first: c starts at 0). */
#define TG_GEMM_VARIANT(sfx, T)                                              \
    typedef struct gemm_variant_##sfx {                                      \
        int64_t mr, nr, kc;                                                  \
        void (*macro)(int64_t mc, int64_t nc, int64_t kc, const T *ap,       \
                      const T *bp, T *c, int64_t ldc, bool first);           \
        /* the small kernel's tile (rows <= mr rows of nr columns) */        \
        void (*small)(int64_t rows, int64_t k, const T *a, int64_t sa_i,     \
                      int64_t sa_p, const T *b, int64_t ldb, T *c,           \
                      int64_t ldc);                                          \
    } gemm_variant_##sfx;
TG_GEMM_VARIANT(f32, float)
TG_GEMM_VARIANT(f64, double)

#ifdef TG_GEMM_X86
#define GEMM_X86_VARIANT(name)                                               \
    {name##_mr, name##_nr, name##_kc, name##_macro, name##_small_tile}
#define GEMM_X86_VARIANTS(sfx)                                               \
    case TG_GEMM_KERNEL_AVX512:                                              \
        return (gemm_variant_##sfx)GEMM_X86_VARIANT(avx512_##sfx);            \
    case TG_GEMM_KERNEL_AVX2:                                                 \
        return (gemm_variant_##sfx)GEMM_X86_VARIANT(avx2_##sfx);
/* The register transpose of full blocks when x's rows are contiguous
 * and the AVX-512 variant runs. */
#define GEMM_X86_TRANSPOSE(sfx)                                              \
    if (s_c == 1 && tg_gemm_kernel_in_use() == TG_GEMM_KERNEL_AVX512) {      \
        block = avx512_##sfx##_transpose;                                    \
        bs = avx512_##sfx##_tw;                                              \
    }
/* The AVX-512 column kernel for a narrow c and an a with contiguous rows
 * (it returns from gemm_columns). */
#define GEMM_X86_COLUMNS(sfx)                                                \
    if (sa_p == 1 && sa_i != 1 && m >= avx512_##sfx##_tw && n < 8 &&        \
        k <= COLUMN_MAX_K &&                                                 \
        tg_gemm_kernel_in_use() == TG_GEMM_KERNEL_AVX512) {                  \
        avx512_##sfx##_columns(a, sa_i, b, sb_p, sb_j, c, m, k, n);          \
        return true;                                                         \
    }
#else
#define GEMM_X86_VARIANTS(sfx)
#define GEMM_X86_TRANSPOSE(sfx)
#define GEMM_X86_COLUMNS(sfx)
#endif

/* The kernels, once per type: T the element type, NR its tile width, KC
 * its k-block, BLAS_GEMM its cblas routine. */
#define TG_GEMM_KERNELS(sfx, T, NR, KC, BLAS_GEMM)                            \
                                                                              \
    /* c (m, n) = a @ b without packing: row i of c is built as               \
     * sum_p a[i, p] * b[p, :] in place, a row of c and of b at a time        \
     * (unit stride vectorises across j). */                                  \
    TG_VECTOR_CLONES static void gemm_direct_##sfx(                           \
        const T *a, int64_t sa_i, int64_t sa_p, const T *b, int64_t sb_p,     \
        int64_t sb_j, T *restrict c, int64_t m, int64_t k, int64_t n)         \
    {                                                                         \
        /* b's rows strided (b = W^T in Linear's x @ W^T) make the j loop     \
         * scalar; a small b is first copied row-major. */                    \
        T bc[DIRECT_COPY_MAX_B];                                              \
        if (sb_j != 1 && k * n <= DIRECT_COPY_MAX_B && m > 1) {               \
            for (int64_t p = 0; p < k; p++)                                   \
                for (int64_t j = 0; j < n; j++)                               \
                    bc[p * n + j] = b[p * sb_p + j * sb_j];                   \
            b = bc;                                                           \
            sb_p = n;                                                         \
            sb_j = 1;                                                         \
        }                                                                     \
        for (int64_t i = 0; i < m; i++) {                                     \
            T *restrict ci = c + i * n;                                       \
            for (int64_t j = 0; j < n; j++)                                   \
                ci[j] = 0;                                                    \
            for (int64_t p = 0; p < k; p++) {                                 \
                const T aip = a[i * sa_i + p * sa_p];                         \
                const T *restrict bp = b + p * sb_p;                          \
                if (sb_j == 1)                                                \
                    for (int64_t j = 0; j < n; j++)                           \
                        ci[j] += aip * bp[j];                                 \
                else                                                          \
                    for (int64_t j = 0; j < n; j++)                           \
                        ci[j] += aip * bp[j * sb_j];                          \
            }                                                                 \
        }                                                                     \
    }                                                                         \
                                                                              \
    /* dst[q * ldd + r] = x[r * s_r + q * s_c] (r < rows, q < cols): x's     \
     * transpose, by square blocks, so that a strided side of x or dst       \
     * touches a block's cache lines at a time rather than one per element;  \
     * full blocks of an x with contiguous rows by the AVX-512 variant's     \
     * register transpose when that variant runs. */                         \
    static void transpose_##sfx(const T *x, int64_t s_r, int64_t s_c,         \
                                int64_t rows, int64_t cols, T *restrict dst,  \
                                int64_t ldd)                                  \
    {                                                                         \
        void (*block)(const T *, int64_t, T *restrict, int64_t) = NULL;       \
        int64_t bs = 16;                                                      \
        GEMM_X86_TRANSPOSE(sfx)                                               \
        for (int64_t r0 = 0; r0 < rows; r0 += bs)                             \
            for (int64_t q0 = 0; q0 < cols; q0 += bs) {                       \
                int64_t r1 = min64(r0 + bs, rows), q1 = min64(q0 + bs, cols); \
                if (block && r1 - r0 == bs && q1 - q0 == bs) {                \
                    block(x + r0 * s_r + q0, s_r, dst + q0 * ldd + r0, ldd);  \
                    continue;                                                 \
                }                                                             \
                for (int64_t r = r0; r < r1; r++)                             \
                    for (int64_t q = q0; q < q1; q++)                         \
                        dst[q * ldd + r] = x[r * s_r + q * s_c];              \
            }                                                                 \
    }                                                                         \
                                                                              \
    /* nv vectors of 64 bytes of column j of c (c[i * n], i < nv * VL):      \
     * sum_p a[i, p] b[p, j] from 0 in p order, the sums in registers while   \
     * p runs (a column in memory would wait on its own stores). */           \
    typedef T colvec_##sfx                                                    \
        __attribute__((vector_size(64), aligned(sizeof(T)), may_alias));      \
    static inline __attribute__((always_inline)) void column_block_##sfx(     \
        int nv, int64_t k, const T *a, int64_t lda, const T *b, int64_t sb_p, \
        T *c, int64_t n)                                                      \
    {                                                                         \
        enum { VL = 64 / sizeof(T) };                                         \
        colvec_##sfx acc[COLUMN_VECS];                                        \
        for (int v = 0; v < COLUMN_VECS; v++)                                 \
            acc[v] = (colvec_##sfx){0};                                       \
        for (int64_t p = 0; p < k; p++) {                                     \
            const T bpj = b[p * sb_p];                                        \
            const T *ap = a + p * lda;                                        \
            _Pragma("GCC unroll 8")                                           \
            for (int v = 0; v < COLUMN_VECS; v++)                             \
                if (v < nv)                                                   \
                    acc[v] += *(const colvec_##sfx *)(ap + v * VL) * bpj;     \
        }                                                                     \
        for (int v = 0; v < nv; v++)                                          \
            for (int l = 0; l < VL; l++)                                      \
                c[(v * VL + l) * n] = acc[v][l];                              \
    }                                                                         \
                                                                              \
    /* The column kernel, for a narrow c: column j of c is built as           \

     * c[:, j] = (...(0 + a[:, 0] b[0, j]) + a[:, 1] b[1, j]) + ...,          \
     * vectorised over the rows i, with the same products added in the        \
     * same p order as the other kernels (so the same bits). a's columns      \
     * are read in place when contiguous (a = g^T in Linear's dW), else       \
     * first transposed into a buffer (on the stack when small). The          \
     * blocked kernel would pad each row of c to NR columns, the direct one   \
     * run vector loops of n < NR / 2 lanes. Runs on any shape; chosen for   \
     * n < NR / 2, m <= NARROW_MAX_M, m k <= NARROW_MAX_A. False, nothing     \
     * done, when the buffer cannot be allocated. */                          \
    TG_VECTOR_CLONES static bool gemm_columns_##sfx(                          \
        const T *a, int64_t sa_i, int64_t sa_p, const T *b, int64_t sb_p,     \
        int64_t sb_j, T *restrict c, int64_t m, int64_t k, int64_t n)         \
    {                                                                         \
        T at_stack[NARROW_STACK_A];  /* a[i, p] at at[p * m + i] */           \
        const T *acol = a;                                                    \
        int64_t lda = sa_p;                                                   \
        T *at = NULL;                                                         \
        size_t at_bytes = 0;                                                  \
        GEMM_X86_COLUMNS(sfx)                                                 \
        if (sa_i != 1 && m > 1) {                                             \
            at = at_stack;                                                    \
            if (m * k > NARROW_STACK_A) {                                     \
                at_bytes = sizeof(T) * (size_t)(m * k);                       \
                at = tg_block_alloc(at_bytes);                                \
                if (!at)                                                      \
                    return false;                                             \
            }                                                                 \
            transpose_##sfx(a, sa_i, sa_p, m, k, at, m);                      \
            acol = at;                                                        \
            lda = m;                                                          \
        }                                                                     \
        /* Blocks of COLUMN_VECS vectors of rows; the last block ends at m,   \
         * overlapping the one before (rows computed twice, the same bits);   \
         * a c of fewer rows takes as many whole vectors as it has, then      \
         * one row at a time. */                                              \
        enum { VL = 64 / sizeof(T), ROWS_ = COLUMN_VECS * VL };               \
        for (int64_t i0 = 0; i0 < m; i0 += ROWS_) {                           \
            int64_t s = m >= ROWS_ && i0 + ROWS_ > m ? m - ROWS_ : i0;        \
            int64_t h = min64(ROWS_, m - s), nv = h / VL;                     \
            for (int64_t j = 0; j < n; j++) {                                 \
                const T *bj = b + j * sb_j, *as = acol + s;                   \
                T *cj = c + s * n + j;                                        \
                switch (nv) {                                                 \
                case 4:                                                       \
                    column_block_##sfx(4, k, as, lda, bj, sb_p, cj, n);       \
                    break;                                                    \
                case 3:                                                       \
                    column_block_##sfx(3, k, as, lda, bj, sb_p, cj, n);       \
                    break;                                                    \
                case 2:                                                       \
                    column_block_##sfx(2, k, as, lda, bj, sb_p, cj, n);       \
                    break;                                                    \
                case 1:                                                       \
                    column_block_##sfx(1, k, as, lda, bj, sb_p, cj, n);       \
                    break;                                                    \
                default:                                                      \
                    break;                                                    \
                }                                                             \
                for (int64_t i = nv * VL; i < h; i++) {                       \
                    T sum = 0;                                                \
                    for (int64_t p = 0; p < k; p++)                           \
                        sum += as[p * lda + i] * bj[p * sb_p];                \
                    cj[i * n] = sum;                                          \
                }                                                             \
            }                                                                 \
        }                                                                     \
        if (at_bytes)                                                         \
            tg_block_free(at, at_bytes);                                      \
        return true;                                                          \
    }                                                                         \
                                                                              \
    /* bp <- b[0:kc, 0:nc] as panels of nr columns: panel q holds             \
     * b[p, q*nr + j] at bp[q*kc*nr + p*nr + j], columns past nc zero. */     \
    static void pack_b_panel_##sfx(const T *b, int64_t sb_p, int64_t sb_j,    \
                                   int64_t kc, int64_t nc, int64_t nr,        \
                                   int64_t q, T *restrict bp)                 \
    {                                                                         \
        int64_t j0 = q * nr, w = min64(nr, nc - j0);                          \
        T *restrict dst = bp + q * kc * nr;                                   \
        for (int64_t p = 0; p < kc; p++) {                                    \
            const T *src = b + p * sb_p + j0 * sb_j;                          \
            T *restrict d = dst + p * nr;                                     \
            if (w == nr && sb_j == 1)                                         \
                memcpy(d, src, (size_t)nr * sizeof(T));                       \
            else {                                                            \
                for (int64_t j = 0; j < w; j++)                               \
                    d[j] = src[j * sb_j];                                     \
                for (int64_t j = w; j < nr; j++)                              \
                    d[j] = 0;                                                 \
            }                                                                 \
        }                                                                     \
    }                                                                         \
                                                                              \
    /* ap <- a[0:mc, 0:kc] as panels of mr rows: panel r holds                \
     * a[r*mr + i, p] at ap[r*kc*mr + p*mr + i], rows past mc zero. */        \
    static void pack_a_##sfx(const T *a, int64_t sa_i, int64_t sa_p,          \
                             int64_t mc, int64_t kc, int64_t mr,              \
                             T *restrict ap)                                  \
    {                                                                         \
        for (int64_t r = 0; r * mr < mc; r++) {                               \
            int64_t i0 = r * mr, h = min64(mr, mc - i0);                      \
            T *restrict dst = ap + r * kc * mr;                               \
            for (int64_t p = 0; p < kc; p++) {                                \
                const T *src = a + i0 * sa_i + p * sa_p;                      \
                for (int64_t i = 0; i < h; i++)                               \
                    dst[p * mr + i] = src[i * sa_i];                          \
                for (int64_t i = h; i < mr; i++)                              \
                    dst[p * mr + i] = 0;                                      \
            }                                                                 \
        }                                                                     \
    }                                                                         \
                                                                              \
    /* The micro-kernel: the MR x NR tile at c (row stride ldc, only its      \
     * first mr x nr elements exist) plus ap (kc x MR) times bp (kc x NR).    \
     * first: the tile starts at 0 (else at c's partial sums). One row        \
     * of NR accumulators per row of the tile, named so they can live in      \
     * registers; the j loop is the vector loop. */                           \
    static inline __attribute__((always_inline)) void micro_##sfx(            \
        int64_t kc, const T *restrict ap, const T *restrict bp,               \
        T *restrict c, int64_t ldc, int64_t mr, int64_t nr, bool first)       \
    {                                                                         \
        ROWS(GEMM_DECL_##sfx)                                                 \
        if (first || mr < MR || nr < NR) {                                    \
            ROWS(GEMM_ZERO)                                                   \
        }                                                                     \
        if (!first && mr == MR && nr == NR) {                                 \
            ROWS(GEMM_LOAD_FULL)                                              \
        } else if (!first) {                                                  \
            ROWS(GEMM_LOAD_EDGE)                                              \
        }                                                                     \
        for (int64_t p = 0; p < kc; p++) {                                    \
            const T *restrict br = bp + p * NR;                               \
            ROWS(GEMM_A_##sfx)                                                \
            for (int j = 0; j < NR; j++) {                                    \
                ROWS(GEMM_MAC)                                                \
            }                                                                 \
        }                                                                     \
        if (mr == MR && nr == NR) {                                           \
            ROWS(GEMM_STORE_FULL)                                             \
        } else {                                                              \
            ROWS(GEMM_STORE_EDGE)                                             \
        }                                                                     \
    }                                                                         \
                                                                              \
    /* c[0:mc, 0:nc] (+)= the packed a block times the packed b panel. */     \
    TG_VECTOR_CLONES static void macro_##sfx(                                 \
        int64_t mc, int64_t nc, int64_t kc, const T *ap, const T *bp, T *c,   \
        int64_t ldc, bool first)                                              \
    {                                                                         \
        for (int64_t j0 = 0; j0 < nc; j0 += NR)                               \
            for (int64_t i0 = 0; i0 < mc; i0 += MR)                           \
                micro_##sfx(kc, ap + i0 * kc, bp + j0 * kc,                   \
                            c + i0 * ldc + j0, ldc, min64(MR, mc - i0),       \
                            min64(NR, nc - j0), first);                       \
    }                                                                         \
                                                                              \
    /* The generic small tile (see TG_GEMM_SIMD's): rows <= MR rows of NR     \
     * columns of c = a (in place, any strides) times b (row stride ldb,      \
     * unit column stride), each sum from 0 in p order. */                    \
    TG_VECTOR_CLONES static void small_tile_##sfx(                            \
        int64_t rows, int64_t k, const T *a, int64_t sa_i, int64_t sa_p,      \
        const T *b, int64_t ldb, T *c, int64_t ldc)                           \
    {                                                                         \
        ROWS(GEMM_DECL_##sfx)                                                 \
        ROWS(GEMM_ZERO)                                                       \
        for (int64_t p = 0; p < k; p++) {                                     \
            const T *restrict br = b + p * ldb;                               \
            const T *ar = a + p * sa_p;                                       \
            ROWS(GEMM_A_SMALL_##sfx)                                          \
            for (int j = 0; j < NR; j++) {                                    \
                ROWS(GEMM_MAC)                                                \
            }                                                                 \
        }                                                                     \
        ROWS(GEMM_STORE_SMALL)                                                \
    }                                                                         \
                                                                              \
    /* The small kernel: c = a @ b with nothing packed, for products whose    \
     * operands fit in cache. a is read in place through its strides (the    \
     * micro-kernel broadcasts a[i, p] from wherever it lies); b too when     \
     * its columns are contiguous, but for the last, partial panel of         \
     * columns, copied into a zero-padded k x nr block; a b whose rows are    \
     * strided (W^T in Linear's x @ W^T) is transposed once into a            \
     * row-major block, its rows padded to whole panels. Then for each        \
     * panel of nr columns and each tile of mr rows, the variant's tile       \
     * computes its outputs in full from p = 0 (a tile at c's edge into a     \
     * buffer, copied out). False, nothing done, without memory for the       \
     * copy of b. */                                                          \
    static bool gemm_small_##sfx(const T *a, int64_t sa_i, int64_t sa_p,      \
                                 const T *b, int64_t sb_p, int64_t sb_j,      \
                                 T *c, int64_t m, int64_t k, int64_t n,       \
                                 const gemm_variant_##sfx *v)                 \
    {                                                                         \
        int64_t mr = v->mr, nr = v->nr, nfull = n / nr * nr;                  \
        const T *brow = b, *edge = NULL;                                      \
        int64_t ldb = sb_p, lde = nr;                                         \
        void *buf = NULL;                                                     \
        size_t bytes = 0;                                                     \
        bool copy_all = sb_j != 1 && n > 1;                                   \
        if (copy_all || nfull < n) {                                          \
            int64_t ld = copy_all ? round_up(n, nr) : nr;                     \
            bytes = sizeof(T) * (size_t)(k * ld) + GEMM_ALIGN;                \
            buf = tg_block_alloc(bytes);                                      \
            if (!buf)                                                         \
                return false;                                                 \
            T *bt = (T *)(((uintptr_t)buf + GEMM_ALIGN - 1) &                 \
                          ~(uintptr_t)(GEMM_ALIGN - 1));                      \
            int64_t j0 = copy_all ? 0 : nfull, w = n - j0;                    \
            /* bt[p * ld + j] = b[p, j0 + j]: the transpose of b's           \
             * columns j0.. viewed as the (w, k) matrix they are */           \
            transpose_##sfx(b + j0 * sb_j, sb_j, sb_p, w, k, bt, ld);         \
            for (int64_t p = 0; p < k; p++)                                   \
                for (int64_t j = w; j < ld; j++)                              \
                    bt[p * ld + j] = 0;                                       \
            lde = ld;                                                         \
            edge = bt + (copy_all ? nfull : 0);                               \
            if (copy_all) {                                                   \
                brow = bt;                                                    \
                ldb = ld;                                                     \
            }                                                                 \
        }                                                                     \
        for (int64_t j0 = 0; j0 < n; j0 += nr) {                              \
            bool full = j0 < nfull;                                           \
            const T *bj = full ? brow + j0 : edge;                            \
            int64_t ld = full ? ldb : lde, w = n - j0;                        \
            for (int64_t i0 = 0; i0 < m; i0 += mr) {                          \
                int64_t rows = min64(mr, m - i0);                             \
                const T *ai = a + i0 * sa_i;                                  \
                if (full) {                                                   \
                    v->small(rows, k, ai, sa_i, sa_p, bj, ld,                 \
                             c + i0 * n + j0, n);                             \
                    continue;                                                 \
                }                                                             \
                T tile[TILE_MAX];                                             \
                v->small(rows, k, ai, sa_i, sa_p, bj, ld, tile, nr);          \
                for (int64_t i = 0; i < rows; i++)                            \
                    for (int64_t j = 0; j < w; j++)                           \
                        c[(i0 + i) * n + j0 + j] = tile[i * nr + j];          \
            }                                                                 \
        }                                                                     \
        if (buf)                                                              \
            tg_block_free(buf, bytes);                                        \
        return true;                                                          \
    }                                                                         \
                                                                              \
    /* The micro-kernel variant for a product with n columns (see the         \
     * top): a c narrower than the generic tile runs the generic kernel,      \
     * whose narrower tile wastes less on padding, unless a test forced a     \
     * variant. */                                                            \
    static gemm_variant_##sfx variant_##sfx(int64_t n)                        \
    {                                                                         \
        tg_gemm_kernel kernel = tg_gemm_kernel_in_use();                      \
        if (n <= NR && forced_kernel == TG_GEMM_KERNEL_AUTO)                  \
            kernel = TG_GEMM_KERNEL_GENERIC;                                  \
        switch (kernel) {                                                     \
            GEMM_X86_VARIANTS(sfx)                                            \
        default:                                                              \
            return (gemm_variant_##sfx){MR, NR, KC, macro_##sfx,              \
                                        small_tile_##sfx};                    \
        }                                                                     \
    }                                                                         \
                                                                              \
    /* One thread's share of the blocked product (all of it outside a         \
     * parallel region, where the worksharing loops run whole): bp for        \
     * one kc x NC panel of b, ap_all one mc x min(kc, k) block of a per      \
     * thread; v the micro-kernel variant. */                                 \
    static void gemm_blocked_share_##sfx(                                     \
        const T *a, int64_t sa_i, int64_t sa_p, const T *b, int64_t sb_p,     \
        int64_t sb_j, T *c, int64_t m, int64_t k, int64_t n,                  \
        const gemm_variant_##sfx *v, T *bp, T *ap_all, int64_t mc)            \
    {                                                                         \
        int64_t nblocks = (m + mc - 1) / mc;                                  \
        T *ap = ap_all + (int64_t)tg_thread_num() * mc * min64(v->kc, k);     \
        for (int64_t jc = 0; jc < n; jc += NC_MAX) {                          \
            int64_t nc = min64(NC_MAX, n - jc);                               \
            int64_t npanels = (nc + v->nr - 1) / v->nr;                       \
            for (int64_t pc = 0; pc < k; pc += v->kc) {                       \
                int64_t kc = min64(v->kc, k - pc);                            \
                TG_OMP(for schedule(static))                                  \
                for (int64_t q = 0; q < npanels; q++)                         \
                    pack_b_panel_##sfx(b + pc * sb_p + jc * sb_j, sb_p,       \
                                       sb_j, kc, nc, v->nr, q, bp);           \
                TG_OMP(for schedule(static))                                  \
                for (int64_t blk = 0; blk < nblocks; blk++) {                 \
                    int64_t ic = blk * mc, h = min64(mc, m - ic);             \
                    pack_a_##sfx(a + ic * sa_i + pc * sa_p, sa_i, sa_p,       \
                                 h, kc, v->mr, ap);                           \
                    v->macro(h, nc, kc, ap, bp, c + ic * n + jc, n, pc == 0); \
                }                                                             \
            }                                                                 \
        }                                                                     \
    }                                                                         \
                                                                              \
    /* The blocked product on nt threads. One thread enters no parallel       \
     * region: even an inactive one (if (false)) costs the OpenMP runtime     \
     * a team, an allocation and a wake-up, as much as a (32, 32) product     \
     * itself. */                                                             \
    static void gemm_blocked_##sfx(const T *a, int64_t sa_i, int64_t sa_p,    \
                                   const T *b, int64_t sb_p, int64_t sb_j,    \
                                   T *c, int64_t m, int64_t k, int64_t n,     \
                                   const gemm_variant_##sfx *v, int nt,       \
                                   T *bp, T *ap_all, int64_t mc)              \
    {                                                                         \
        (void)nt; /* read by the OpenMP pragma only */                        \
        if (nt > 1) {                                                         \
            TG_OMP(parallel num_threads(nt))                                  \
            gemm_blocked_share_##sfx(a, sa_i, sa_p, b, sb_p, sb_j, c, m,      \
                                     k, n, v, bp, ap_all, mc);                \
            return;                                                           \
        }                                                                     \
        gemm_blocked_share_##sfx(a, sa_i, sa_p, b, sb_p, sb_j, c, m, k,       \
                                 n, v, bp, ap_all, mc);                       \
    }                                                                         \
                                                                              \
    /* The portable C kernels: direct for small products (or when the         \
     * buffers cannot be had), else blocked. */                               \
    static void gemm_portable_##sfx(const T *a, int64_t sa_i, int64_t sa_p,   \
                                    const T *b, int64_t sb_p, int64_t sb_j,   \
                                    T *c, int64_t m, int64_t k, int64_t n)    \
    {                                                                         \
        int64_t work = m * k * n;                                             \
        bool columns_fit = n < NR / 2 && m <= NARROW_MAX_M &&                 \
                           m * k <= NARROW_MAX_A;                             \
        tg_gemm_path path = forced_path;                                      \
        if (path == TG_GEMM_COLUMNS && !columns_fit)                          \
            path = TG_GEMM_AUTO;                                              \
        if (path == TG_GEMM_COLUMNS ||                                        \
            (path == TG_GEMM_AUTO && columns_fit && m >= MR / 2)) {           \
            if (gemm_columns_##sfx(a, sa_i, sa_p, b, sb_p, sb_j, c, m, k, n)) \
                return;                                                       \
            path = TG_GEMM_DIRECT; /* no memory; direct needs none */         \
        }                                                                     \
        bool small_fits = k > 0 && k <= SMALL_MAX_K &&                        \
                          (m * k + k * n) * (int64_t)sizeof(T) <=             \
                              SMALL_MAX_BYTES;                                \
        bool direct = path == TG_GEMM_DIRECT ||                               \
                      (path == TG_GEMM_AUTO && !small_fits &&                 \
                        (m < MR / 2 ||                                        \
                        (work <= DIRECT_MAX_WORK && n >= NR / 2)));           \
        if (!direct && k > 0) {                                               \
            gemm_variant_##sfx v = variant_##sfx(n);                          \
            int nt = gemm_threads(m, k, n, v.mr);                             \
            if (path == TG_GEMM_SMALL ||                                      \
                (path == TG_GEMM_AUTO && nt == 1 && small_fits)) {            \
                if (!gemm_small_##sfx(a, sa_i, sa_p, b, sb_p, sb_j, c, m, k,  \
                                      n, &v)) /* no memory: direct */         \
                    gemm_direct_##sfx(a, sa_i, sa_p, b, sb_p, sb_j, c, m, k,  \
                                      n);                                     \
                return;                                                       \
            }                                                                 \
            /* Row blocks: at least one per thread, at most MC_MAX rows. */   \
            int64_t nblk = (m + MC_MAX - 1) / MC_MAX;                         \
            if (nblk < nt)                                                    \
                nblk = nt;                                                    \
            int64_t mc = round_up((m + nblk - 1) / nblk, v.mr);               \
            int64_t kc = min64(v.kc, k);                                      \
            size_t nb = (size_t)(kc * round_up(min64(n, NC_MAX), v.nr));      \
            /* a's blocks as large as this product needs, not MC_MAX x kc:    \
             * a small product's buffers then come from the thread's free     \
             * lists rather than the shared cache's lock. */                  \
            size_t na = (size_t)(nt * mc * kc);                               \
            /* Panels start on a cache line: a vector load of b that          \
             * straddled two lines would cost two. */                         \
            size_t bytes = (nb + na) * sizeof(T) + GEMM_ALIGN;                \
            T *buf = tg_block_alloc(bytes); /* reused when large */           \
            if (buf) {                                                        \
                T *bp = (T *)(((uintptr_t)buf + GEMM_ALIGN - 1) &             \
                              ~(uintptr_t)(GEMM_ALIGN - 1));                  \
                gemm_blocked_##sfx(a, sa_i, sa_p, b, sb_p, sb_j, c, m, k, n,  \
                                   &v, nt, bp, bp + nb, mc);                  \
                tg_block_free(buf, bytes);                                    \
                return;                                                       \
            }                                                                 \
            /* no memory for the panels: the direct kernel needs none */      \
        }                                                                     \
        gemm_direct_##sfx(a, sa_i, sa_p, b, sb_p, sb_j, c, m, k, n);          \
    }                                                                         \
                                                                              \
    void tg_gemm_##sfx(const T *a, int64_t sa_i, int64_t sa_p, const T *b,    \
                       int64_t sb_p, int64_t sb_j, T *c, int64_t m,           \
                       int64_t k, int64_t n)                                  \
    {                                                                         \
        if (m == 0 || n == 0)                                                 \
            return;                                                           \
        if (tg_use_blas() && k > 0 &&                                         \
            BLAS_GEMM(a, sa_i, sa_p, b, sb_p, sb_j, c, m, k, n))              \
            return;                                                           \
        gemm_portable_##sfx(a, sa_i, sa_p, b, sb_p, sb_j, c, m, k, n);        \
    }

/* Pieces of the micro-kernel, one row of the tile each (X(i) in ROWS). */
#define GEMM_DECL_f32(i) float c##i[NR_F32];
#define GEMM_DECL_f64(i) double c##i[NR_F64];
#define GEMM_A_f32(i) const float a##i = ap[p * MR + i];
#define GEMM_A_f64(i) const double a##i = ap[p * MR + i];
#define GEMM_ZERO(i)                                                         \
    for (int j = 0; j < (int)(sizeof c##i / sizeof c##i[0]); j++)            \
        c##i[j] = 0;
#define GEMM_LOAD_FULL(i)                                                    \
    for (int j = 0; j < (int)(sizeof c##i / sizeof c##i[0]); j++)            \
        c##i[j] = c[i * ldc + j];
#define GEMM_LOAD_EDGE(i)                                                    \
    if (i < mr)                                                              \
        for (int64_t j = 0; j < nr; j++)                                     \
            c##i[j] = c[i * ldc + j];
#define GEMM_MAC(i) c##i[j] += a##i * br[j];
#define GEMM_A_SMALL_f32(i) const float a##i = i < rows ? ar[i * sa_i] : 0;
#define GEMM_A_SMALL_f64(i) const double a##i = i < rows ? ar[i * sa_i] : 0;
#define GEMM_STORE_SMALL(i)                                                  \
    if (i < rows)                                                            \
        for (int j = 0; j < (int)(sizeof c##i / sizeof c##i[0]); j++)        \
            c[i * ldc + j] = c##i[j];
#define GEMM_STORE_FULL(i)                                                   \
    for (int j = 0; j < (int)(sizeof c##i / sizeof c##i[0]); j++)            \
        c[i * ldc + j] = c##i[j];
#define GEMM_STORE_EDGE(i)                                                   \
    if (i < mr)                                                              \
        for (int64_t j = 0; j < nr; j++)                                     \
            c[i * ldc + j] = c##i[j];

#ifdef TG_HAVE_OPENBLAS
/* c = a @ b by cblas_?gemm, each operand passed as it lies (transposed
 * if that is how BLAS can read it) or, failing that, as a contiguous
 * copy. False (nothing done) when the sizes exceed BLAS's int or the copy
 * cannot be allocated. */
#define TG_GEMM_BLAS(sfx, T, CBLAS)                                          \
    static void copy_rows_##sfx(const T *x, int64_t s_r, int64_t s_c,        \
                                int64_t rows, int64_t cols, T *dst)          \
    {                                                                        \
        for (int64_t r = 0; r < rows; r++)                                   \
            for (int64_t q = 0; q < cols; q++)                               \
                dst[r * cols + q] = x[r * s_r + q * s_c];                    \
    }                                                                        \
    static bool blas_##sfx(const T *a, int64_t sa_i, int64_t sa_p,           \
                           const T *b, int64_t sb_p, int64_t sb_j, T *c,     \
                           int64_t m, int64_t k, int64_t n)                  \
    {                                                                        \
        if (m > INT_MAX || k > INT_MAX || n > INT_MAX)                       \
            return false;                                                    \
        bool ta, tb;                                                         \
        int lda, ldb;                                                        \
        bool ok_a = blas_layout(m, k, sa_i, sa_p, &ta, &lda);                \
        bool ok_b = blas_layout(k, n, sb_p, sb_j, &tb, &ldb);                \
        T *copy = NULL;                                                      \
        if (!ok_a || !ok_b) {                                                \
            int64_t na = ok_a ? 0 : m * k, nb = ok_b ? 0 : k * n;            \
            copy = tg_malloc(sizeof(T) * (size_t)(na + nb));                 \
            if (!copy)                                                       \
                return false;                                                \
            if (!ok_a) {                                                     \
                copy_rows_##sfx(a, sa_i, sa_p, m, k, copy);                  \
                a = copy;                                                    \
                ta = false;                                                  \
                lda = (int)k;                                                \
            }                                                                \
            if (!ok_b) {                                                     \
                copy_rows_##sfx(b, sb_p, sb_j, k, n, copy + na);             \
                b = copy + na;                                               \
                tb = false;                                                  \
                ldb = (int)n;                                                \
            }                                                                \
        }                                                                    \
        tg_get_num_threads(); /* hands TG_NUM_THREADS to OpenBLAS */        \
        CBLAS(CblasRowMajor, ta ? CblasTrans : CblasNoTrans,                 \
              tb ? CblasTrans : CblasNoTrans, (int)m, (int)n, (int)k, 1, a,  \
              lda, b, ldb, 0, c, (int)n);                                    \
        free(copy);                                                          \
        return true;                                                         \
    }
TG_GEMM_BLAS(f32, float, cblas_sgemm)
TG_GEMM_BLAS(f64, double, cblas_dgemm)
#else
/* Without OpenBLAS tg_use_blas() is false and these are never called. */
static bool blas_f32(const float *a, int64_t sa_i, int64_t sa_p,
                     const float *b, int64_t sb_p, int64_t sb_j, float *c,
                     int64_t m, int64_t k, int64_t n)
{
    (void)a, (void)sa_i, (void)sa_p, (void)b, (void)sb_p, (void)sb_j;
    (void)c, (void)m, (void)k, (void)n;
    return false;
}
static bool blas_f64(const double *a, int64_t sa_i, int64_t sa_p,
                     const double *b, int64_t sb_p, int64_t sb_j, double *c,
                     int64_t m, int64_t k, int64_t n)
{
    (void)a, (void)sa_i, (void)sa_p, (void)b, (void)sb_p, (void)sb_j;
    (void)c, (void)m, (void)k, (void)n;
    return false;
}
#endif

TG_GEMM_KERNELS(f32, float, NR_F32, KC_F32, blas_f32)
TG_GEMM_KERNELS(f64, double, NR_F64, KC_F64, blas_f64)
