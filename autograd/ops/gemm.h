/*
 * autograd/ops/gemm.h - the fast float kernels behind tg_matmul: one
 * (m, k) @ (k, n) block into a contiguous (m, n) output. Not installed;
 * autograd/ops/matmul.c is the only caller, and keeps the plain reference
 * kernel these are tested against.
 */
#ifndef TG_AUTOGRAD_OPS_GEMM_H
#define TG_AUTOGRAD_OPS_GEMM_H

#include <stdbool.h>
#include <stdint.h>

/* c[i, j] = sum_p a[i * sa_i + p * sa_p] * b[p * sb_p + j * sb_j], for c
 * contiguous (m, n); strides in elements, >= 0, any layout (a transposed
 * view needs no copy). Accumulates in the operands' type, each output's
 * products added in p order from 0 (see gemm.c for what that promises).
 * Runs OpenBLAS when tg_use_blas(), else the blocked C kernel, on
 * tg_get_num_threads() threads when the product is large enough. Never
 * fails: without memory for its packing buffers it runs the direct kernel,
 * which needs none and gives the same bits. */
void tg_gemm_f32(const float *a, int64_t sa_i, int64_t sa_p, const float *b,
                 int64_t sb_p, int64_t sb_j, float *c, int64_t m, int64_t k,
                 int64_t n);
void tg_gemm_f64(const double *a, int64_t sa_i, int64_t sa_p,
                 const double *b, int64_t sb_p, int64_t sb_j, double *c,
                 int64_t m, int64_t k, int64_t n);

/* Which kernel tg_gemm_* runs, for tests that make each one run: AUTO
 * chooses by size; the others force a kernel where it applies (DIRECT
 * always applies; BLOCKED and SMALL when k > 0, unless their buffers
 * cannot be allocated). Per thread. */
typedef enum tg_gemm_path {
    TG_GEMM_AUTO,
    TG_GEMM_DIRECT,  // no packing: row i of c built as sum_p a[i, p] b[p, :]
    TG_GEMM_BLOCKED, // packed panels, register tiles, threads
    TG_GEMM_COLUMNS, // a narrow c, column by column (when it fits; else AUTO)
    TG_GEMM_SMALL,   // register tiles, nothing packed: a and b read in place
} tg_gemm_path;
void tg_gemm_force_path(tg_gemm_path path);

/* The blocked kernel's micro-kernel: the generic C one, or one written
 * for an x86 vector extension, chosen once by what the CPU supports (the
 * widest) unless the environment variable TG_GEMM_KERNEL names one
 * (generic, avx2, avx512; ignored when unknown or not supported). They
 * give the same bits (gemm.c). */
#define TG_GEMM_KERNEL "TG_GEMM_KERNEL"
typedef enum tg_gemm_kernel {
    TG_GEMM_KERNEL_AUTO,    // the CPU's widest, or TG_GEMM_KERNEL's
    TG_GEMM_KERNEL_GENERIC, // plain C, any CPU
    TG_GEMM_KERNEL_AVX2,    // 256-bit vectors
    TG_GEMM_KERNEL_AVX512,  // 512-bit vectors (AVX-512F)
} tg_gemm_kernel;
/* Whether this build and CPU can run `kernel` (AUTO and GENERIC: always). */
bool tg_gemm_kernel_supported(tg_gemm_kernel kernel);
/* Makes this thread's products run `kernel` (AUTO: the default choice),
 * for tests that compare the variants. False, and nothing changed, when
 * it is not supported. */
bool tg_gemm_force_kernel(tg_gemm_kernel kernel);
/* The variant this thread's blocked products run. */
tg_gemm_kernel tg_gemm_kernel_in_use(void);

#endif
