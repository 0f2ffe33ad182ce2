/*
 * autograd/kernels/layer_norm_fast.c - LayerNorm's fast kernels: the
 * forward and backward of autograd/ops/layer_norm.c written for speed on
 * contiguous rows, vectorised and run on several threads.
 *
 * Not the place to learn LayerNorm: autograd/ops/layer_norm.c has the
 * math, the plain reference kernels these are tested against
 * (tests/autograd/test_fast_layer_norm.c), the op and its backward, and
 * calls these unless TG_KERNELS=reference.
 *
 * What changes from the plain kernels, and why the results stay theirs
 * to within rounding (tests/autograd/test_fast_layer_norm.c holds them to
 * a tolerance and says why):
 *  - Every sum over a row is split into TG_NORM_LANES partial sums,
 *    element j going to partial j % TG_NORM_LANES, added up in a fixed
 *    order at the end (tg_norm_lanes_sum, shared with BatchNorm's fast
 *    kernels). The compiler keeps the partials in vector registers (a
 *    single running sum is a chain of dependent additions it may not
 *    reorder), and the
 *    order of the additions is fixed by the source, not by the vector
 *    width or the thread count: every build and every thread count gives
 *    the same bits. Sums are still in double.
 *  - The forward takes a row's mean and variance in one sweep, summing
 *    x - x[0] and its square (the shift keeps the cancellation of the
 *    variance bounded by N + 1, whatever |mean| / std: proved above
 *    LAYER_NORM_FORWARD_FAST), and a second sweep writes y from x; the
 *    plain kernel sums x, then (x - mean)^2. mean and rstd differ from
 *    the plain kernel's by double roundings, as a reordered sum would.
 *  - Each row is read while it sits in the cache. The backward takes rows
 *    in pairs, adding both rows' terms into dw and db in one sweep (in
 *    row order: the same additions as row by row), and computes xhat and
 *    g again for dx rather than storing them: a row of doubles written
 *    and read back costs more than converting x and dy again. w and b are
 *    converted once per call. Apart from the statistics of the forward
 *    and the order of the additions in sums, every value comes from the
 *    same operations on the same operands as in the plain kernels, in
 *    double, rounded once to x's dtype.
 *  - While a row is computed, the next one is asked of memory
 *    (TG_NORM_PREFETCH), so that waiting for memory and arithmetic overlap.
 *  - Rows are shared out among threads. A row's results depend on that row
 *    alone, except dw and db, which sum over rows: the rows are cut into
 *    chunks whose size depends only on M and N, each chunk sums its rows
 *    in order into its own partial dw and db, and the partials are added
 *    up chunk after chunk.
 *  - The small-row path: below TG_NORM_PARALLEL_MIN elements (a (64, 768)
 *    layer) no team of threads is started and the backward is a single
 *    chunk summed straight into dw and db; what is left per call is a
 *    scratch allocation for w and b in double (float32 with a weight or
 *    bias). While x fits in the cache (TG_NORM_STREAM_BYTES), the forward
 *    takes the statistics of a block of rows before their y (LN_BLOCK), so
 *    that short rows overlap their divisions; a larger x, streamed from
 *    memory, goes row by row.
 *
 * Why float32 rows are computed in double, and not in float32 with
 * compensated statistics. The contract (tests/autograd/
 * test_fast_norm_ulp.c) is that a float32 y and dx lie within 1 ulp of
 * the float64 answer on the same inputs, rounded to float32. Statistics
 * in double (or a float32 mean split into a high and a low part) keep
 * mean and rstd that accurate, but not the elementwise work: y = xhat *
 * w + b cancels where xhat * w is near -b, and dx = rstd (g - mean(g) -
 * xhat mean(g xhat)) where its terms nearly cancel, and there the float32
 * roundings of xhat * w or of the terms are many ulps of the result. In
 * NumPy on (512, 768) N(0, 1) rows that float32 scheme put 9.6% of y and
 * 5.6% of dx more than 1 ulp away (up to 3e5 ulps), where the double
 * computation here measures 0. Double arithmetic runs at half the float32
 * vector width, which is what bounds these kernels on large inputs (see
 * docs/performance.md).
 *
 * The same bits on every CPU width: GCC compiles the kernels for plain
 * x86-64, AVX2 and AVX-512 (TG_VECTOR_CLONES) and picks one when the
 * program starts. Every sum goes through TG_NORM_LANES partial sums in an
 * order the source fixes, every other value is one IEEE double operation
 * on the same operands in every clone, and -ffp-contract=off (meson.build)
 * keeps the compiler from fusing a multiply and an add in one clone but
 * not another. tests/autograd/norm_clone_bits.sh compares the AVX-512
 * (or AVX2) clone with the AVX2 one under valgrind.
 */
#include "norm_fast.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* The most chunks the rows of a backward are cut into: enough to keep many
 * threads busy, few enough that their partial sums (2 * N doubles each)
 * stay small next to x. */
#define LN_MAX_CHUNKS 32
/* The fewest elements in a backward chunk: below it a chunk is not worth
 * its partial sums. Half the parallel threshold, so that a backward big
 * enough for threads has at least two chunks, and one too small for them
 * is a single chunk summed straight into dw and db (no partial sums to
 * zero and add up). */
#define LN_MIN_CHUNK_WORK (TG_NORM_PARALLEL_MIN / 2)

/* The forward takes rows in blocks of about this many elements: the
 * statistics of every row of a block, then y of every row, while the
 * block is in the L1 cache. A row's statistics end in a chain of divisions
 * and a square root; rows taken one by one would wait for it on every
 * short row, rows in a block overlap it (the (64, 768) layer and the tiny
 * MLP step are 2-3% faster). But only while x fits in the cache: on
 * (4096, 768), streamed from memory, the forward (bench's ln_fwd) took
 * 0.77 ms in blocks and 0.65 ms row by row, each row's y written while
 * the next one's statistics are asked of memory. */
#define LN_BLOCK 4096

/* Rows [r0, r1) of the forward. w and b are double rows (N,) or NULL.
 * Per row, two sweeps: the statistics in one (shifted sums, below), then
 * y = (x - mean) * rstd * w + b.
 *
 * The statistics in one sweep, and why they stay accurate when |mean| >>
 * std. With K the row's first element, the sweep sums d_j = x_j - K and
 * d_j^2 in double: S1 = sum d_j, S2 = sum d_j^2. Then mean = K + S1 / N
 * and M2 = sum (x_j - mean)^2 = S2 - S1^2 / N, exactly, in real numbers.
 * In floating point (u = 2^-53; for float32 x, d_j is even exact unless
 * the exponents of x_j and K are 29 or more apart) S2 and S1 carry errors
 * of at most about N u S2 and N u sum |d_j|, and sum |d_j| |S1| / N <= S2
 * (Cauchy-Schwarz), so M2 is off by at most about 3 N u S2. The
 * cancellation S2 / M2 is what the one-pass formula fears; with the
 * shift it is bounded by N + 1: S2 = M2 + N (mean - K)^2, and
 * (K - mean)^2 = (x_0 - mean)^2 is one of the terms of M2, so S2 <= (N +
 * 1) M2. M2's relative error is thus below about 3 N (N + 1) u whatever
 * |mean| / std (for N = 768, 2e-10, far below a float32 ulp; on typical
 * rows, where (x_0 - mean)^2 is about M2 / N, S2 is about 2 M2 and the
 * error about 6 N u, as in the two-pass sum), where the unshifted one-pass
 * sum cancels by mean^2 / var. tests/autograd/test_fast_layer_norm.c
 * checks rows of mean 1e4 and std 1e-2 against the two-pass reference. */
#define LAYER_NORM_FORWARD_FAST(NAME, T)                                     \
    TG_VECTOR_CLONES static void NAME(const T *restrict x,                   \
                                      const double *restrict w,              \
                                      const double *restrict b,              \
                                      T *restrict y, double *mean,           \
                                      double *rstd, int64_t r0, int64_t r1,  \
                                      int64_t N, double eps, bool stream)    \
    {                                                                        \
        const int64_t nv = N - N % TG_NORM_LANES; /* the whole blocks */     \
        const int64_t rows = !stream && LN_BLOCK / N > 1 ? LN_BLOCK / N : 1; \
        for (int64_t rb = r0; rb < r1; rb += rows) {                         \
            const int64_t re = rb + rows < r1 ? rb + rows : r1;              \
            /* the statistics of the block's rows */                         \
            for (int64_t r = rb; r < re; r++) {                              \
                const T *restrict xr = x + r * N;                            \
                const double K = xr[0];                                      \
                double s1[TG_NORM_LANES] = {0}, s2[TG_NORM_LANES] = {0};     \
                int64_t ahead = r + 1 < r1 ? N : 0;                          \
                for (int64_t j = 0; j < nv; j += TG_NORM_LANES) {            \
                    TG_NORM_PREFETCH(xr + ahead + j, TG_NORM_LANES);         \
                    for (int k = 0; k < TG_NORM_LANES; k++) {                \
                        double d = xr[j + k] - K;                            \
                        s1[k] += d;                                          \
                        s2[k] += d * d;                                      \
                    }                                                        \
                }                                                            \
                for (int64_t j = nv; j < N; j++) {                           \
                    double d = xr[j] - K;                                    \
                    s1[j - nv] += d;                                         \
                    s2[j - nv] += d * d;                                     \
                }                                                            \
                const double S1 = tg_norm_lanes_sum(s1);                     \
                const double S2 = tg_norm_lanes_sum(s2);                     \
                const double dm = S1 / (double)N;                            \
                double m2 = S2 - S1 * dm;                                    \
                if (m2 < 0) /* rounding, on a row of (nearly) equal values */\
                    m2 = 0;                                                  \
                mean[r] = K + dm;                                            \
                rstd[r] = 1.0 / sqrt(m2 / (double)N + eps);                  \
            }                                                                \
            /* y from the rows, still in the cache */                        \
            for (int64_t r = rb; r < re; r++) {                              \
                const T *restrict xr = x + r * N;                            \
                T *restrict yr = y + r * N;                                  \
                const double m = mean[r], rs = rstd[r];                      \
                if (w && b)                                                  \
                    for (int64_t j = 0; j < N; j++)                          \
                        yr[j] = (T)((xr[j] - m) * rs * w[j] + b[j]);         \
                else if (w)                                                  \
                    for (int64_t j = 0; j < N; j++)                          \
                        yr[j] = (T)((xr[j] - m) * rs * w[j]);                \
                else if (b)                                                  \
                    for (int64_t j = 0; j < N; j++)                          \
                        yr[j] = (T)((xr[j] - m) * rs + b[j]);                \
                else                                                         \
                    for (int64_t j = 0; j < N; j++)                          \
                        yr[j] = (T)((xr[j] - m) * rs);                       \
            }                                                                \
        }                                                                    \
    }
LAYER_NORM_FORWARD_FAST(layer_norm_forward_fast_f32, float)
LAYER_NORM_FORWARD_FAST(layer_norm_forward_fast_f64, double)

/* Rows [r0, r1) of the backward, one chunk: dw and db (N doubles each,
 * never NULL) receive this chunk's sums, added to what they hold; dx may
 * be NULL (not needed); w is a double row (N,), ones when the layer has no
 * weight (dy * 1 is dy exactly).
 *
 * Rows go in pairs (and a last one alone). Sweep 1 over a pair computes
 * xhat = (x - mean) rstd and g = dy w for both rows, sums g and g xhat per
 * row, and adds both rows' dy xhat and dy into dw and db, the first row's
 * term first: dw[j] + a0 + a1, the additions of a row-by-row loop in the
 * same order, with half the loads and stores of dw and db. Sweep 2 over
 * each row computes xhat and g again (the same operations on the same
 * operands: the same values) from x and dy, still in the cache, and writes
 * dx: cheaper than storing two rows of doubles in sweep 1 and reading them
 * back. */
#define LN_BWD_TERMS(i)                                                      \
    double xh##i = (x##i[j] - m##i) * rs##i, d##i = dy##i[j];                \
    double g##i = d##i * w[j];
#define LAYER_NORM_BACKWARD_FAST(NAME, T)                                    \
    TG_VECTOR_CLONES static void NAME(                                       \
        const T *restrict dy, const T *restrict x,                           \
        const double *restrict w, const double *mean, const double *rstd,    \
        T *restrict dx, double *restrict dw, double *restrict db,            \
        int64_t r0, int64_t r1, int64_t N)                                   \
    {                                                                        \
        for (int64_t r = r0; r < r1; r += 2) {                               \
            const bool pair = r + 1 < r1;                                    \
            /* a lone last row: its partner is itself, with no dw, db */     \
            const int64_t r_1 = pair ? r + 1 : r;                            \
            const T *x0 = x + r * N, *dy0 = dy + r * N;                      \
            const T *x1 = x + r_1 * N, *dy1 = dy + r_1 * N;                  \
            const double m0 = mean[r], rs0 = rstd[r];                        \
            const double m1 = mean[r_1], rs1 = rstd[r_1];                    \
            double gs0 = 0, gxs0 = 0, gs1 = 0, gxs1 = 0;                     \
            int64_t ahead = r + 2 + 1 < r1 ? 2 * N : 0;                      \
            if (pair) {                                                      \
                double a0[TG_NORM_LANES] = {0}, a1[TG_NORM_LANES] = {0};     \
                double a2[TG_NORM_LANES] = {0}, a3[TG_NORM_LANES] = {0};     \
                int64_t j0 = 0;                                              \
                for (; j0 + TG_NORM_LANES <= N; j0 += TG_NORM_LANES) {       \
                    TG_NORM_PREFETCH(x0 + ahead + j0, TG_NORM_LANES);        \
                    TG_NORM_PREFETCH(dy0 + ahead + j0, TG_NORM_LANES);       \
                    TG_NORM_PREFETCH(x1 + ahead + j0, TG_NORM_LANES);        \
                    TG_NORM_PREFETCH(dy1 + ahead + j0, TG_NORM_LANES);       \
                    for (int k = 0; k < TG_NORM_LANES; k++) {                \
                        const int64_t j = j0 + k;                            \
                        LN_BWD_TERMS(0)                                      \
                        LN_BWD_TERMS(1)                                      \
                        a0[k] += g0;                                       \
                        a1[k] += g0 * xh0;                                 \
                        a2[k] += g1;                                       \
                        a3[k] += g1 * xh1;                                 \
                        dw[j] = dw[j] + d0 * xh0 + d1 * xh1;                 \
                        db[j] = db[j] + d0 + d1;                             \
                    }                                                        \
                }                                                            \
                for (int64_t j = j0; j < N; j++) {                           \
                    LN_BWD_TERMS(0)                                          \
                    LN_BWD_TERMS(1)                                          \
                    a0[j - j0] += g0;                                      \
                    a1[j - j0] += g0 * xh0;                                \
                    a2[j - j0] += g1;                                      \
                    a3[j - j0] += g1 * xh1;                                \
                    dw[j] = dw[j] + d0 * xh0 + d1 * xh1;                     \
                    db[j] = db[j] + d0 + d1;                                 \
                }                                                            \
                gs0 = tg_norm_lanes_sum(a0);                               \
                gxs0 = tg_norm_lanes_sum(a1);                              \
                gs1 = tg_norm_lanes_sum(a2);                               \
                gxs1 = tg_norm_lanes_sum(a3);                              \
            } else {                                                         \
                double a0[TG_NORM_LANES] = {0}, a1[TG_NORM_LANES] = {0};     \
                int64_t j0 = 0;                                              \
                for (; j0 + TG_NORM_LANES <= N; j0 += TG_NORM_LANES)         \
                    for (int k = 0; k < TG_NORM_LANES; k++) {                \
                        const int64_t j = j0 + k;                            \
                        LN_BWD_TERMS(0)                                      \
                        a0[k] += g0;                                       \
                        a1[k] += g0 * xh0;                                 \
                        dw[j] += d0 * xh0;                                   \
                        db[j] += d0;                                         \
                    }                                                        \
                for (int64_t j = j0; j < N; j++) {                           \
                    LN_BWD_TERMS(0)                                          \
                    a0[j - j0] += g0;                                      \
                    a1[j - j0] += g0 * xh0;                                \
                    dw[j] += d0 * xh0;                                       \
                    db[j] += d0;                                             \
                }                                                            \
                gs0 = tg_norm_lanes_sum(a0);                               \
                gxs0 = tg_norm_lanes_sum(a1);                              \
            }                                                                \
            if (!dx)                                                         \
                continue;                                                    \
            const double gm0 = gs0 / (double)N, gxm0 = gxs0 / (double)N;     \
            const double gm1 = gs1 / (double)N, gxm1 = gxs1 / (double)N;     \
            T *restrict dx0 = dx + r * N, *restrict dx1 = dx + r_1 * N;      \
            if (pair)                                                        \
                for (int64_t j = 0; j < N; j++) {                            \
                    LN_BWD_TERMS(0)                                          \
                    LN_BWD_TERMS(1)                                          \
                    dx0[j] = (T)(rs0 * (g0 - gm0 - xh0 * gxm0));             \
                    dx1[j] = (T)(rs1 * (g1 - gm1 - xh1 * gxm1));             \
                }                                                            \
            else                                                             \
                for (int64_t j = 0; j < N; j++) {                            \
                    LN_BWD_TERMS(0)                                          \
                    dx0[j] = (T)(rs0 * (g0 - gm0 - xh0 * gxm0));             \
                }                                                            \
        }                                                                    \
    }
LAYER_NORM_BACKWARD_FAST(layer_norm_backward_fast_f32, float)
LAYER_NORM_BACKWARD_FAST(layer_norm_backward_fast_f64, double)

/* A double copy of a (N,) float32 parameter into row, or the float64 one
 * itself; ones when p is NULL and ones is asked for, else NULL. */
static const double *double_row(tg_dtype dtype, const void *p, int64_t N,
                                double *row, bool ones)
{
    if (!p && !ones)
        return NULL;
    if (p && dtype == TG_FLOAT64)
        return p;
    for (int64_t j = 0; j < N; j++)
        row[j] = p ? ((const float *)p)[j] : 1.0;
    return row;
}

/* Rows [r0, r1) of the forward, in x's dtype. */
static void forward_rows(tg_dtype dtype, bool stream, const void *x,
                         const double *w, const double *b, void *y,
                         double *mean, double *rstd, int64_t r0, int64_t r1,
                         int64_t N, double eps)
{
    if (dtype == TG_FLOAT32)
        layer_norm_forward_fast_f32(x, w, b, y, mean, rstd, r0, r1, N, eps,
                                    stream);
    else
        layer_norm_forward_fast_f64(x, w, b, y, mean, rstd, r0, r1, N, eps,
                                    stream);
}

/* The forward of rows [0, M) on the fast kernels (N >= 1), on as many
 * threads as the work is worth. Each row is computed whole by one thread,
 * so the thread count cannot change a bit of it. Returns 0, or -1 when the
 * scratch memory cannot be had (nothing reported: the caller does). */
int tg_layer_norm_forward_fast(tg_dtype dtype, const void *x,
                                   const void *w, const void *b, void *y,
                                   double *mean, double *rstd, int64_t M,
                                   int64_t N, double eps)
{
    if (M == 0)
        return 0;
    int nt = tg_norm_threads(M * N);
    if ((int64_t)nt > M)
        nt = (int)M;
    const bool stream =
        tg_norm_streams(M * N, tg_dtype_size(dtype), TG_NORM_STREAM_BYTES);
    /* Scratch: w and b in double (float32 only); none otherwise. */
    int64_t params = dtype == TG_FLOAT32 ? (w != NULL) + (b != NULL) : 0;
    /* from the thread's free lists when small (tensor/memory.c): a
     * training step asks for the same scratch on every step */
    size_t bytes = (size_t)params * (size_t)N * sizeof(double);
    double *scratch = bytes ? tg_block_alloc(bytes) : NULL;
    if (bytes && !scratch)
        return -1;
    double *next = scratch;
    const double *wd = double_row(dtype, w, N, next, false);
    if (wd && wd == next)
        next += N;
    const double *bd = double_row(dtype, b, N, next, false);
    if (nt == 1) { // a team costs microseconds: small inputs go without
        forward_rows(dtype, stream, x, wd, bd, y, mean, rstd, 0, M, N, eps);
    } else {
        /* One range of rows per thread (a kernel reads ahead within its
         * range): the first M % nt ranges have one row more. */
        TG_OMP(parallel for num_threads(nt) schedule(static))
        for (int i = 0; i < nt; i++) {
            int64_t r0 = i * (M / nt) + (i < M % nt ? i : M % nt);
            int64_t r1 = r0 + M / nt + (i < M % nt);
            forward_rows(dtype, stream, x, wd, bd, y, mean, rstd, r0, r1, N,
                         eps);
        }
    }
    if (scratch)
        tg_block_free(scratch, bytes);
    return 0;
}

/* One chunk of the backward, in x's dtype. */
static void layer_norm_backward_chunk(tg_dtype dtype, const void *dy,
                                      const void *x, const double *w,
                                      const double *mean, const double *rstd,
                                      void *dx, double *dw, double *db,
                                      int64_t r0, int64_t r1, int64_t N)
{
    if (dtype == TG_FLOAT32)
        layer_norm_backward_fast_f32(dy, x, w, mean, rstd, dx, dw, db, r0, r1,
                                     N);
    else
        layer_norm_backward_fast_f64(dy, x, w, mean, rstd, dx, dw, db, r0, r1,
                                     N);
}

/* The backward of rows [0, M) on the fast kernels (M, N >= 1). w, dx, dw
 * and db may be NULL (no weight; gradient not needed); dw and db, when
 * given, are zeroed (N,) sums. Returns 0, or -1 when the scratch memory
 * cannot be had (nothing reported: the caller does). */
int tg_layer_norm_backward_fast(tg_dtype dtype, const void *dy,
                                    const void *x, const void *w,
                                    const double *mean, const double *rstd,
                                    void *dx, double *dw, double *db,
                                    int64_t M, int64_t N)
{
    /* The chunks depend on M and N only, never on the thread count. */
    int64_t chunk_rows = (LN_MIN_CHUNK_WORK + N - 1) / N;
    if (chunk_rows < (M + LN_MAX_CHUNKS - 1) / LN_MAX_CHUNKS)
        chunk_rows = (M + LN_MAX_CHUNKS - 1) / LN_MAX_CHUNKS;
    /* Each chunk keeps 2 N doubles of partial sums: at most about x's own
     * size in all (few long rows would otherwise make 32 chunks of one
     * row each, four times x). */
    int64_t max_chunks = M * (int64_t)tg_dtype_size(dtype) / 16;
    if (max_chunks < 1)
        max_chunks = 1;
    if ((M + chunk_rows - 1) / chunk_rows > max_chunks)
        chunk_rows = (M + max_chunks - 1) / max_chunks;
    int64_t nchunks = (M + chunk_rows - 1) / chunk_rows;
    int nt = tg_norm_threads(M * N);
    if ((int64_t)nt > nchunks)
        nt = (int)nchunks;
    /* Scratch, in rows of N doubles: w in double unless x is float64 with
     * a weight; dw and db when not needed (the kernel sums them anyway);
     * two partial sums per chunk when there is more than one chunk (a
     * single chunk sums into dw and db directly: 0 + s is s, the same as
     * its partial added to zero). */
    int64_t nrows = (dtype == TG_FLOAT64 && w ? 0 : 1) + !dw + !db +
                    (nchunks > 1 ? 2 * nchunks : 0);
    size_t bytes = (size_t)nrows * (size_t)N * sizeof(double);
    double *scratch = bytes ? tg_block_alloc(bytes) : NULL; // as the forward's
    if (bytes && !scratch)
        return -1;
    double *next = scratch;
    const double *wd = double_row(dtype, w, N, next, true);
    if (wd == next)
        next += N;
    if (!dw) {
        dw = next;
        next += N;
        memset(dw, 0, (size_t)N * sizeof *dw);
    }
    if (!db) {
        db = next;
        next += N;
        memset(db, 0, (size_t)N * sizeof *db);
    }
    double *part = next; // chunk c: dw at 2cN, db at (2c+1)N
    if (nchunks == 1) {
        layer_norm_backward_chunk(dtype, dy, x, wd, mean, rstd, dx, dw, db, 0,
                                  M, N);
        if (scratch)
            tg_block_free(scratch, bytes);
        return 0;
    }
    TG_OMP(parallel num_threads(nt) if (nt > 1))
    {
        TG_OMP(for schedule(static))
        for (int64_t c = 0; c < nchunks; c++) {
            double *pw = part + 2 * c * N, *pb = pw + N;
            memset(pw, 0, 2 * (size_t)N * sizeof *pw);
            int64_t r0 = c * chunk_rows;
            int64_t r1 = r0 + chunk_rows < M ? r0 + chunk_rows : M;
            layer_norm_backward_chunk(dtype, dy, x, wd, mean, rstd, dx, pw,
                                      pb, r0, r1, N);
        }
        /* dw and db: the chunks' partials added in chunk order, each
         * thread taking a block of columns. */
        enum { COLS = 256 };
        TG_OMP(for schedule(static))
        for (int64_t j0 = 0; j0 < N; j0 += COLS) {
            int64_t j1 = j0 + COLS < N ? j0 + COLS : N;
            for (int64_t c = 0; c < nchunks; c++) {
                const double *pw = part + 2 * c * N, *pb = pw + N;
                for (int64_t j = j0; j < j1; j++) {
                    dw[j] += pw[j];
                    db[j] += pb[j];
                }
            }
        }
    }
    tg_block_free(scratch, bytes);
    return 0;
}
