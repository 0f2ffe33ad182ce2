/*
 * autograd/kernels/batch_norm_fast.c - BatchNorm's fast kernels: the
 * forward and backward of autograd/ops/batch_norm.c arranged for the
 * cache, the vectoriser and OpenMP.
 *
 * Not the place to learn BatchNorm: autograd/ops/batch_norm.c has the
 * math, the plain reference kernels these are tested against
 * (tests/autograd/test_fast_batch_norm.c), the op and its backward, and
 * calls these unless TG_KERNELS=reference.
 *
 * The same math as the reference kernels of batch_norm.c, arranged for
 * the cache, the vectoriser and OpenMP. They run unless tg_get_kernels()
 * is TG_KERNELS_REFERENCE, on the contiguous copy the op works on anyway.
 *
 * Two layouts of the (N, C, S) block:
 *  - S == 1 (BatchNorm1d on (N, C)): a channel is a column. The rows are
 *    cut into blocks of about BN_BLOCK elements (a number of rows fixed by
 *    C alone); each block's column statistics are taken in two passes
 *    while it sits in the cache, and the blocks are combined in block
 *    order with the exact decomposition
 *      mean = sum_k n_k mean_k / n
 *      M2   = sum_k (M2_k + n_k (mean_k - mean)^2)
 *    (Chan et al.), so the variance stays two-pass accurate when
 *    |mean| >> std. The inner loops run across the C columns: no
 *    reduction in them, so they vectorise as they are.
 *  - S > 1 (BatchNorm1d on (N, C, L), BatchNorm2d): a channel is N runs of
 *    S contiguous values. One call handles one whole channel: statistics,
 *    then y (or, backward, the two sums, then dx) while the channel is
 *    still in the cache. Sums along a run use TG_NORM_LANES independent
 *    partial sums (lane j takes the elements at s = j mod TG_NORM_LANES;
 *    tg_norm_lanes_sum, shared with LayerNorm's fast kernels),
 *    added up in a fixed order at the end: that lets the loop vectorise
 *    and fixes the order whatever the vector width.
 * Threads take whole blocks or whole channels, and the per-block partial
 * results are combined on one thread in block order, so the results do
 * not depend on the thread count, bit for bit.
 *
 * Every sum is in double, as in the reference kernels; y and dx are
 * computed in double and rounded once to T. Only the order of the
 * additions differs from the reference, and dx is written as
 *   dx = a dy + b (x - mean) + c0,  a = w invstd,  c0 = -a sum(dy) / n,
 *   b = -a invstd n/(n-k) sum(dy xhat) / n
 * (the same closed form, expanded); sum(dy * xhat) is accumulated as
 * invstd * sum(dy * (x - mean)). So fast and reference results differ by
 * float64 roundings (~1e-16 relative to the largest term) before the one
 * rounding to T: within an ulp or two of T for float32 (tests: 1e-6 of
 * max |reference|), ~1e-13 for float64 (tests: 1e-12).
 *
 * Against the float64 answer on the same float32 inputs, rounded to
 * float32, y and dx are within 1 ulp (tests/autograd/test_fast_norm_ulp.c;
 * measured: equal). That is why float32 channels are computed in double
 * and not in float32 with compensated statistics: float32 elementwise
 * work leaves y and dx many ulps off where their terms cancel (y near 0
 * with b, dx whose three terms nearly cancel), as layer_norm_fast.c's
 * header details. On (4096, 768) the kernels are bound by memory rather
 * than arithmetic: each of the four sweeps (statistics, y; sums, dx)
 * streams x (and dy) again, as the statistics need every row first. So
 * that the arithmetic of one row overlaps the loads of the next, the
 * column kernels ask memory for rows below as they go (BN_AHEAD); that
 * took (4096, 768) fwd+bwd from 3.9 to 3.2 ms. Taking a strip of columns
 * down all the rows instead, to read x once while it stays in the cache,
 * was slower: the rows of a strip are a cache line each, 3 KB apart.
 * The clones for each CPU width give the same bits, for the reasons given
 * in layer_norm_fast.c (tests/autograd/norm_clone_bits.sh).
 */
#include "norm_fast.h"

#include <math.h>

/* Elements per block of rows (S == 1): 256 KiB of float32, which stays in
 * a core's L2 cache between the block's two passes. */
#define BN_BLOCK (INT64_C(1) << 16)

/* The rows of one block (S == 1). */
static int64_t bn_block_rows(const bn_layout *l)
{
    int64_t r = BN_BLOCK / l->C;
    return r < 1 ? 1 : r;
}

static int64_t bn_blocks(const bn_layout *l)
{
    int64_t r = bn_block_rows(l);
    return (l->N + r - 1) / r;
}

static int bn_threads(const bn_layout *l)
{
    return tg_norm_threads(l->n * l->C);
}

/* The column kernels (S == 1) take a row a stretch of BN_COLS columns at a
 * time, asking memory for the same stretch of a row below first
 * (TG_NORM_PREFETCH): long enough for the vectorised loop, short enough
 * that the lines asked for arrive while the stretch is computed. */
#define BN_COLS 128
/* for each stretch [c0, c1) of a row of C columns */
#define BN_FOR_STRETCH(c0, c1, C)                                            \
    for (int64_t c0 = 0, c1 = (C) < BN_COLS ? (C) : BN_COLS; c0 < (C);       \
         c0 += BN_COLS, c1 = c0 + BN_COLS < (C) ? c0 + BN_COLS : (C))
/* How many rows below the kernels ask for when streaming. On (4096, 768)
 * the sums read row by row with two rows' hints were 4% faster (fwd+bwd)
 * than four rows at a time with the next four's. */
#define BN_AHEAD 2

/* The offset, in elements, from row i to the row whose stretches are asked
 * for: BN_AHEAD rows below, or 0 (ask for nothing) when not streaming or
 * past the last of the `rows` rows. */
static inline int64_t bn_ahead(bool stream, int64_t i, int64_t rows,
                               int64_t C)
{
    return stream && i + BN_AHEAD < rows ? BN_AHEAD * C : 0;
}

/* The kernels for one dtype T. Each is called for one block of rows
 * (cols_*) or one channel (run_*) and touches nothing else. */
#define BN_FAST_KERNELS(SFX, T)                                              \
    /* Column means and sums of squares about them, over `rows` rows, two \
     * sweeps. In the cache, rows go four at a time, added to a column's    \
     * sum one after another (the order of a row-by-row loop) while the sum \
     * stays in a register. When `stream`, the first sweep goes row by row, \
     * a stretch at a time, the stretch BN_AHEAD rows below asked of memory \
     * meanwhile: the same additions in the same order, from fewer places   \
     * at once. The second sweep finds the block in the cache. */           \
    static TG_VECTOR_CLONES void bn_cols_stats_##SFX(                        \
        const T *restrict x, int64_t rows, int64_t C, double *restrict mean, \
        double *restrict m2, bool stream)                                    \
    {                                                                        \
        for (int64_t c = 0; c < C; c++)                                      \
            mean[c] = m2[c] = 0.0;                                           \
        int64_t i = 0;                                                       \
        for (; !stream && i + 4 <= rows; i += 4) {                           \
            const T *x0 = x + i * C, *x1 = x0 + C;                           \
            const T *x2 = x1 + C, *x3 = x2 + C;                              \
            for (int64_t c = 0; c < C; c++)                                  \
                mean[c] = mean[c] + x0[c] + x1[c] + x2[c] + x3[c];           \
        }                                                                    \
        for (; i < rows; i++) {                                              \
            const T *xr = x + i * C;                                         \
            const int64_t ahead = bn_ahead(stream, i, rows, C);              \
            BN_FOR_STRETCH(c0, c1, C) {                                      \
                if (ahead)                                                   \
                    TG_NORM_PREFETCH(xr + ahead + c0, c1 - c0);              \
                for (int64_t c = c0; c < c1; c++)                            \
                    mean[c] += xr[c];                                        \
            }                                                                \
        }                                                                    \
        for (int64_t c = 0; c < C; c++)                                      \
            mean[c] /= (double)rows;                                         \
        for (i = 0; i + 4 <= rows; i += 4) {                                 \
            const T *x0 = x + i * C, *x1 = x0 + C;                           \
            const T *x2 = x1 + C, *x3 = x2 + C;                              \
            for (int64_t c = 0; c < C; c++) {                                \
                double d0 = x0[c] - mean[c], d1 = x1[c] - mean[c];           \
                double d2 = x2[c] - mean[c], d3 = x3[c] - mean[c];           \
                m2[c] = m2[c] + d0 * d0 + d1 * d1 + d2 * d2 + d3 * d3;       \
            }                                                                \
        }                                                                    \
        for (; i < rows; i++)                                                \
            for (int64_t c = 0; c < C; c++) {                                \
                double d = x[i * C + c] - mean[c];                           \
                m2[c] += d * d;                                              \
            }                                                                \
    }                                                                        \
    /* y = (x - mean) * scale + shift over n columns: a row, or a stretch  \
     * of one with the column arrays offset to match. */                    \
    static inline __attribute__((always_inline)) void bn_apply_span_##SFX(   \
        const T *restrict x, T *restrict y, int64_t n,                       \
        const double *restrict mean, const double *restrict scale,           \
        const double *restrict shift)                                        \
    {                                                                        \
        for (int64_t c = 0; c < n; c++)                                      \
            y[c] = (T)((x[c] - mean[c]) * scale[c] + shift[c]);              \
    }                                                                        \
    /* y, row by row. When `stream`, a stretch at a time, the stretch     \
     * BN_AHEAD rows below asked of memory meanwhile; in the cache, whole   \
     * rows in a loop of their own (the stretches' loop cost the medium     \
     * step's (256, 128) layer 10%). */                                     \
    static TG_VECTOR_CLONES void bn_cols_apply_##SFX(                        \
        const T *restrict x, T *restrict y, int64_t rows, int64_t C,         \
        const double *restrict mean, const double *restrict scale,           \
        const double *restrict shift, bool stream)                           \
    {                                                                        \
        for (int64_t i = 0; !stream && i < rows; i++)                        \
            bn_apply_span_##SFX(x + i * C, y + i * C, C, mean, scale,        \
                                shift);                                      \
        for (int64_t i = 0; stream && i < rows; i++) {                       \
            const T *xr = x + i * C;                                         \
            const int64_t ahead = bn_ahead(stream, i, rows, C);              \
            T *yr = y + i * C;                                               \
            if (!ahead) {                                                    \
                bn_apply_span_##SFX(xr, yr, C, mean, scale, shift);          \
                continue;                                                    \
            }                                                                \
            BN_FOR_STRETCH(c0, c1, C) {                                      \
                TG_NORM_PREFETCH(xr + ahead + c0, c1 - c0);                  \
                TG_NORM_PREFETCH_WRITE(yr + ahead + c0, c1 - c0);            \
                bn_apply_span_##SFX(xr + c0, yr + c0, c1 - c0, mean + c0,    \
                                    scale + c0, shift + c0);                 \
            }                                                                \
        }                                                                    \
    }                                                                        \
    /* sdy = sum(dy), sdxm = sum(dy * (x - mean)), per column, as         \
     * bn_cols_stats's first sweep: four rows at a time in the cache, row   \
     * by row with the hints when `stream`. */                              \
    static TG_VECTOR_CLONES void bn_cols_sums_##SFX(                         \
        const T *restrict dy, const T *restrict x, int64_t rows, int64_t C,  \
        const double *restrict mean, double *restrict sdy,                   \
        double *restrict sdxm, bool stream)                                  \
    {                                                                        \
        for (int64_t c = 0; c < C; c++)                                      \
            sdy[c] = sdxm[c] = 0.0;                                          \
        int64_t i = 0;                                                       \
        for (; !stream && i + 4 <= rows; i += 4) {                           \
            const T *g0 = dy + i * C, *g1 = g0 + C;                          \
            const T *g2 = g1 + C, *g3 = g2 + C;                              \
            const T *x0 = x + i * C, *x1 = x0 + C;                           \
            const T *x2 = x1 + C, *x3 = x2 + C;                              \
            for (int64_t c = 0; c < C; c++) {                                \
                double a0 = g0[c], a1 = g1[c], a2 = g2[c], a3 = g3[c];       \
                sdy[c] = sdy[c] + a0 + a1 + a2 + a3;                         \
                sdxm[c] = sdxm[c] + a0 * (x0[c] - mean[c]) +                 \
                          a1 * (x1[c] - mean[c]) + a2 * (x2[c] - mean[c]) +  \
                          a3 * (x3[c] - mean[c]);                            \
            }                                                                \
        }                                                                    \
        for (; i < rows; i++) {                                              \
            const T *gr = dy + i * C, *xr = x + i * C;                       \
            const int64_t ahead = bn_ahead(stream, i, rows, C);              \
            BN_FOR_STRETCH(c0, c1, C) {                                      \
                if (ahead) {                                                 \
                    TG_NORM_PREFETCH(gr + ahead + c0, c1 - c0);              \
                    TG_NORM_PREFETCH(xr + ahead + c0, c1 - c0);              \
                }                                                            \
                for (int64_t c = c0; c < c1; c++) {                          \
                    double g = gr[c];                                        \
                    sdy[c] += g;                                             \
                    sdxm[c] += g * (xr[c] - mean[c]);                        \
                }                                                            \
            }                                                                \
        }                                                                    \
    }                                                                        \
    /* dx = a dy + b (x - mean) + c0 over n columns, as bn_apply_span. */  \
    static inline __attribute__((always_inline)) void bn_dx_span_##SFX(      \
        const T *restrict dy, const T *restrict x, T *restrict dx,           \
        int64_t n, const double *restrict mean, const double *restrict a,    \
        const double *restrict b, const double *restrict c0)                 \
    {                                                                        \
        for (int64_t c = 0; c < n; c++)                                      \
            dx[c] = (T)(a[c] * dy[c] + b[c] * (x[c] - mean[c]) + c0[c]);     \
    }                                                                        \
    /* dx per column (training), a dy (eval); rows and stretches as         \
     * bn_cols_apply. */                                                    \
    static TG_VECTOR_CLONES void bn_cols_dx_##SFX(                           \
        const T *restrict dy, const T *restrict x, T *restrict dx,           \
        int64_t rows, int64_t C, const double *restrict mean,                \
        const double *restrict a, const double *restrict b,                  \
        const double *restrict c0, bool training, bool stream)               \
    {                                                                        \
        if (!training) {                                                     \
            for (int64_t i = 0; i < rows; i++)                               \
                for (int64_t c = 0; c < C; c++)                              \
                    dx[i * C + c] = (T)(dy[i * C + c] * a[c]);               \
            return;                                                          \
        }                                                                    \
        for (int64_t i = 0; !stream && i < rows; i++)                        \
            bn_dx_span_##SFX(dy + i * C, x + i * C, dx + i * C, C, mean, a,  \
                             b, c0);                                         \
        for (int64_t i = 0; stream && i < rows; i++) {                       \
            const T *gr = dy + i * C, *xr = x + i * C;                       \
            const int64_t ahead = bn_ahead(stream, i, rows, C);              \
            T *dr = dx + i * C;                                              \
            if (!ahead) {                                                    \
                bn_dx_span_##SFX(gr, xr, dr, C, mean, a, b, c0);             \
                continue;                                                    \
            }                                                                \
            BN_FOR_STRETCH(j0, j1, C) {                                      \
                TG_NORM_PREFETCH(gr + ahead + j0, j1 - j0);                  \
                TG_NORM_PREFETCH(xr + ahead + j0, j1 - j0);                  \
                TG_NORM_PREFETCH_WRITE(dr + ahead + j0, j1 - j0);            \
                bn_dx_span_##SFX(gr + j0, xr + j0, dr + j0, j1 - j0,         \
                                 mean + j0, a + j0, b + j0, c0 + j0);        \
            }                                                                \
        }                                                                    \
    }                                                                        \
    /* The sum of N runs of S values, run i at x + i * stride. */            \
    static TG_VECTOR_CLONES double bn_run_sum_##SFX(const T *restrict x, int64_t N, \
                                             int64_t stride, int64_t S)      \
    {                                                                        \
        double acc[TG_NORM_LANES] = {0};                                     \
        for (int64_t i = 0; i < N; i++) {                                    \
            const T *xs = x + i * stride;                                    \
            int64_t s = 0;                                                   \
            for (; s + TG_NORM_LANES <= S; s += TG_NORM_LANES)               \
                for (int j = 0; j < TG_NORM_LANES; j++)                      \
                    acc[j] += xs[s + j];                                     \
            for (int j = 0; s + j < S; j++)                                  \
                acc[j] += xs[s + j];                                         \
        }                                                                    \
        return tg_norm_lanes_sum(acc);                                       \
    }                                                                        \
    /* sum((x - mean)^2) over the same runs. */                              \
    static TG_VECTOR_CLONES double bn_run_m2_##SFX(const T *restrict x, int64_t N, \
                                            int64_t stride, int64_t S,       \
                                            double mean)                     \
    {                                                                        \
        double acc[TG_NORM_LANES] = {0};                                     \
        for (int64_t i = 0; i < N; i++) {                                    \
            const T *xs = x + i * stride;                                    \
            int64_t s = 0;                                                   \
            for (; s + TG_NORM_LANES <= S; s += TG_NORM_LANES)               \
                for (int j = 0; j < TG_NORM_LANES; j++) {                    \
                    double d = xs[s + j] - mean;                             \
                    acc[j] += d * d;                                         \
                }                                                            \
            for (int j = 0; s + j < S; j++) {                                \
                double d = xs[s + j] - mean;                                 \
                acc[j] += d * d;                                             \
            }                                                                \
        }                                                                    \
        return tg_norm_lanes_sum(acc);                                       \
    }                                                                        \
    /* y = (x - mean) * scale + shift over the runs. */                      \
    static TG_VECTOR_CLONES void bn_run_apply_##SFX(                         \
        const T *restrict x, T *restrict y, int64_t N, int64_t stride,       \
        int64_t S, double mean, double scale, double shift)                  \
    {                                                                        \
        for (int64_t i = 0; i < N; i++)                                      \
            for (int64_t s = 0; s < S; s++)                                  \
                y[i * stride + s] =                                          \
                    (T)((x[i * stride + s] - mean) * scale + shift);         \
    }                                                                        \
    /* *sdy = sum(dy), *sdxm = sum(dy * (x - mean)) over the runs. */        \
    static TG_VECTOR_CLONES void bn_run_sums_##SFX(                          \
        const T *restrict dy, const T *restrict x, int64_t N,                \
        int64_t stride, int64_t S, double mean, double *sdy, double *sdxm)   \
    {                                                                        \
        double ag[TG_NORM_LANES] = {0}, agx[TG_NORM_LANES] = {0};            \
        for (int64_t i = 0; i < N; i++) {                                    \
            const T *gs = dy + i * stride, *xs = x + i * stride;             \
            int64_t s = 0;                                                   \
            for (; s + TG_NORM_LANES <= S; s += TG_NORM_LANES)               \
                for (int j = 0; j < TG_NORM_LANES; j++) {                    \
                    double g = gs[s + j];                                    \
                    ag[j] += g;                                              \
                    agx[j] += g * (xs[s + j] - mean);                        \
                }                                                            \
            for (int j = 0; s + j < S; j++) {                                \
                double g = gs[s + j];                                        \
                ag[j] += g;                                                  \
                agx[j] += g * (xs[s + j] - mean);                            \
            }                                                                \
        }                                                                    \
        *sdy = tg_norm_lanes_sum(ag);                                        \
        *sdxm = tg_norm_lanes_sum(agx);                                      \
    }                                                                        \
    /* dx = a dy + b (x - mean) + c0 (training), a dy (eval). */             \
    static TG_VECTOR_CLONES void bn_run_dx_##SFX(                            \
        const T *restrict dy, const T *restrict x, T *restrict dx,           \
        int64_t N, int64_t stride, int64_t S, double mean, double a,         \
        double b, double c0, bool training)                                  \
    {                                                                        \
        for (int64_t i = 0; i < N; i++) {                                    \
            const T *gs = dy + i * stride, *xs = x + i * stride;             \
            T *ds = dx + i * stride;                                         \
            if (training)                                                    \
                for (int64_t s = 0; s < S; s++)                              \
                    ds[s] = (T)(a * gs[s] + b * (xs[s] - mean) + c0);        \
            else                                                             \
                for (int64_t s = 0; s < S; s++)                              \
                    ds[s] = (T)(gs[s] * a);                                  \
        }                                                                    \
    }
BN_FAST_KERNELS(f32, float)
BN_FAST_KERNELS(f64, double)

/* Doubles of scratch the drivers below need: for S == 1, three (C,)
 * arrays of coefficients and, with more than one block, each block's two
 * partial results (C,); nothing for S > 1. */
size_t tg_bn_scratch_doubles(const bn_layout *l)
{
    if (l->S != 1)
        return 0;
    int64_t nb = bn_blocks(l);
    return (size_t)(3 * l->C + (nb > 1 ? 2 * nb * l->C : 0));
}

/* Combines the blocks' column means and M2s (S == 1), block by block in
 * order: mean = sum_k n_k mean_k / n, M2 = sum_k (M2_k + n_k (mean_k -
 * mean)^2). */
static void bn_combine_blocks(const double *bmean, const double *bm2,
                              const bn_layout *l, double *mean, double *m2)
{
    const int64_t C = l->C, rows = bn_block_rows(l), nb = bn_blocks(l);
    for (int64_t c = 0; c < C; c++)
        mean[c] = m2[c] = 0.0;
    for (int64_t k = 0; k < nb; k++) {
        double cnt = (double)(k * rows + rows <= l->N ? rows
                                                      : l->N - k * rows);
        for (int64_t c = 0; c < C; c++)
            mean[c] += cnt * bmean[k * C + c];
    }
    for (int64_t c = 0; c < C; c++)
        mean[c] /= (double)l->N;
    for (int64_t k = 0; k < nb; k++) {
        double cnt = (double)(k * rows + rows <= l->N ? rows
                                                      : l->N - k * rows);
        for (int64_t c = 0; c < C; c++) {
            double d = bmean[k * C + c] - mean[c];
            m2[c] += bm2[k * C + c] + cnt * d * d;
        }
    }
}

/* The forward and backward on the fast kernels, for one dtype T. Same
 * contracts as the reference kernels: the forward fills mean, invstd and
 * m2 (C,) in training (in eval mean and invstd come in holding the
 * running statistics' values) and y; the backward fills sdy and sdyx (C,)
 * and dx unless it is NULL. scratch holds tg_bn_scratch_doubles(l). */
#define BN_FAST_DRIVERS(SFX, T)                                              \
    void tg_bn_fast_forward_##SFX(                                           \
        const T *x, const T *w, const T *b, T *y, double *mean,              \
        double *invstd, double *m2, const tg_batch_norm_options *o,          \
        const bn_layout *l, double *scratch)                                 \
    {                                                                        \
        const int64_t N = l->N, C = l->C, S = l->S, n = l->n;                \
        const int nt = bn_threads(l);                                        \
        (void)nt; /* read by the OpenMP pragmas only */                      \
        if (S > 1) {                                                         \
            TG_OMP(parallel for num_threads(nt) if(nt > 1) schedule(static)) \
            for (int64_t c = 0; c < C; c++) {                                \
                const T *xc = x + c * S;                                     \
                if (!o->eval) {                                              \
                    mean[c] = bn_run_sum_##SFX(xc, N, C * S, S) / (double)n; \
                    m2[c] = bn_run_m2_##SFX(xc, N, C * S, S, mean[c]);       \
                    invstd[c] = tg_bn_invstd(m2[c], n, o->correction, o->eps); \
                }                                                            \
                bn_run_apply_##SFX(xc, y + c * S, N, C * S, S, mean[c],      \
                                   invstd[c] * (w ? (double)w[c] : 1.0),     \
                                   b ? (double)b[c] : 0.0);                  \
            }                                                                \
            return;                                                          \
        }                                                                    \
        const int64_t rows = bn_block_rows(l), nb = bn_blocks(l);            \
        /* the column kernels ask for rows ahead when x and its three     \
         * companions are too large to stay in the cache from one kernel   \
         * to the next (TG_BN_STREAM_BYTES, norm_fast.h) */                 \
        const bool stream =                                                  \
            tg_norm_streams(N * C, sizeof(T), TG_BN_STREAM_BYTES);           \
        if (!o->eval) {                                                      \
            double *bmean = nb == 1 ? mean : scratch + 3 * C;                \
            double *bm2 = nb == 1 ? m2 : bmean + nb * C;                     \
            TG_OMP(parallel for num_threads(nt) if(nt > 1) schedule(static)) \
            for (int64_t k = 0; k < nb; k++) {                               \
                int64_t r0 = k * rows, r = r0 + rows <= N ? rows : N - r0;   \
                bn_cols_stats_##SFX(x + r0 * C, r, C, bmean + k * C,         \
                                    bm2 + k * C, stream);                    \
            }                                                                \
            if (nb > 1)                                                      \
                bn_combine_blocks(bmean, bm2, l, mean, m2);                  \
            for (int64_t c = 0; c < C; c++)                                  \
                invstd[c] = tg_bn_invstd(m2[c], n, o->correction, o->eps);   \
        }                                                                    \
        double *scale = scratch, *shift = scratch + C;                       \
        for (int64_t c = 0; c < C; c++) {                                    \
            scale[c] = invstd[c] * (w ? (double)w[c] : 1.0);                 \
            shift[c] = b ? (double)b[c] : 0.0;                               \
        }                                                                    \
        TG_OMP(parallel for num_threads(nt) if(nt > 1) schedule(static))     \
        for (int64_t k = 0; k < nb; k++) {                                   \
            int64_t r0 = k * rows, r = r0 + rows <= N ? rows : N - r0;       \
            bn_cols_apply_##SFX(x + r0 * C, y + r0 * C, r, C, mean, scale,   \
                                shift, stream);                              \
        }                                                                    \
    }                                                                        \
                                                                             \
    void tg_bn_fast_backward_##SFX(                                          \
        const T *dy, const T *x, const T *w, const double *mean,             \
        const double *invstd, T *dx, double *sdy, double *sdyx,              \
        bool training, int64_t correction, const bn_layout *l,               \
        double *scratch)                                                     \
    {                                                                        \
        const int64_t N = l->N, C = l->C, S = l->S;                          \
        const double n = (double)l->n;                                       \
        const double unbias = n / (n - (double)correction); /* n/(n-k) */    \
        const int nt = bn_threads(l);                                        \
        (void)nt; /* read by the OpenMP pragmas only */                      \
        if (S > 1) {                                                         \
            TG_OMP(parallel for num_threads(nt) if(nt > 1) schedule(static)) \
            for (int64_t c = 0; c < C; c++) {                                \
                const T *gc = dy + c * S, *xc = x + c * S;                   \
                bn_run_sums_##SFX(gc, xc, N, C * S, S, mean[c], &sdy[c],     \
                                  &sdyx[c]);                                 \
                sdyx[c] *= invstd[c];                                        \
                if (!dx)                                                     \
                    continue;                                                \
                double a = invstd[c] * (w ? (double)w[c] : 1.0);             \
                bn_run_dx_##SFX(gc, xc, dx + c * S, N, C * S, S, mean[c], a, \
                                -a * unbias * sdyx[c] * invstd[c] / n,       \
                                -a * sdy[c] / n, training);                  \
            }                                                                \
            return;                                                          \
        }                                                                    \
        const int64_t rows = bn_block_rows(l), nb = bn_blocks(l);            \
        const bool stream =                                                  \
            tg_norm_streams(N * C, sizeof(T), TG_BN_STREAM_BYTES);           \
        double *bg = nb == 1 ? sdy : scratch + 3 * C;                        \
        double *bgx = nb == 1 ? sdyx : bg + nb * C;                          \
        TG_OMP(parallel for num_threads(nt) if(nt > 1) schedule(static))     \
        for (int64_t k = 0; k < nb; k++) {                                   \
            int64_t r0 = k * rows, r = r0 + rows <= N ? rows : N - r0;       \
            bn_cols_sums_##SFX(dy + r0 * C, x + r0 * C, r, C, mean,          \
                               bg + k * C, bgx + k * C, stream);             \
        }                                                                    \
        if (nb > 1) {                                                        \
            for (int64_t c = 0; c < C; c++)                                  \
                sdy[c] = sdyx[c] = 0.0;                                      \
            for (int64_t k = 0; k < nb; k++)                                 \
                for (int64_t c = 0; c < C; c++) {                            \
                    sdy[c] += bg[k * C + c];                                 \
                    sdyx[c] += bgx[k * C + c];                               \
                }                                                            \
        }                                                                    \
        for (int64_t c = 0; c < C; c++)                                      \
            sdyx[c] *= invstd[c];                                            \
        if (!dx)                                                             \
            return;                                                          \
        double *a = scratch, *bx = scratch + C, *c0 = scratch + 2 * C;       \
        for (int64_t c = 0; c < C; c++) {                                    \
            a[c] = invstd[c] * (w ? (double)w[c] : 1.0);                     \
            bx[c] = -a[c] * unbias * sdyx[c] * invstd[c] / n;                \
            c0[c] = -a[c] * sdy[c] / n;                                      \
        }                                                                    \
        TG_OMP(parallel for num_threads(nt) if(nt > 1) schedule(static))     \
        for (int64_t k = 0; k < nb; k++) {                                   \
            int64_t r0 = k * rows, r = r0 + rows <= N ? rows : N - r0;       \
            bn_cols_dx_##SFX(dy + r0 * C, x + r0 * C, dx + r0 * C, r, C,     \
                             mean, a, bx, c0, training, stream);             \
        }                                                                    \
    }
BN_FAST_DRIVERS(f32, float)
BN_FAST_DRIVERS(f64, double)
