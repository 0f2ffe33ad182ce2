/*
 * autograd/kernels/norm_fast.h - the fast LayerNorm and BatchNorm kernels
 * (layer_norm_fast.c, batch_norm_fast.c) as the op files call them, and
 * what the two share. Not installed.
 *
 * The ops, with the math and the plain reference kernels, are
 * autograd/ops/layer_norm.c and batch_norm.c; they run these kernels
 * unless tg_get_kernels() is TG_KERNELS_REFERENCE.
 */
#ifndef TG_AUTOGRAD_KERNELS_NORM_FAST_H
#define TG_AUTOGRAD_KERNELS_NORM_FAST_H

#include "../internal.h"

/* --------------------------------------------------- shared: lane sums */

/* A sum along a row or run is kept as TG_NORM_LANES partial sums, element
 * j going to partial j % TG_NORM_LANES: the compiler keeps them in vector
 * registers (16 doubles are two AVX-512 registers, four AVX2 ones), while
 * a single running sum is a chain of dependent additions it may not
 * reorder. */
#define TG_NORM_LANES 16

/* The TG_NORM_LANES partial sums added up in one fixed order (pairwise:
 * lane k with lane k + 8, then k + 4, k + 2, k + 1), fixed by the source
 * and not by the vector width or the thread count, so every build and
 * every thread count gives the same bits. */
static inline double tg_norm_lanes_sum(const double *acc)
{
    double s8[8], s4[4];
    for (int k = 0; k < 8; k++)
        s8[k] = acc[k] + acc[k + 8];
    for (int k = 0; k < 4; k++)
        s4[k] = s8[k] + s8[k + 4];
    return (s4[0] + s4[2]) + (s4[1] + s4[3]);
}

/* ------------------------------------------------------ shared: prefetch */

/* Asks memory for the n elements from p, to be read soon, a 64-byte cache
 * line at a time; TG_NORM_PREFETCH_WRITE for elements to be written soon
 * (the line is fetched ready to be written). No effect on any result. A
 * kernel that streams rows from memory asks for a stretch of the rows it
 * takes next while it computes the same stretch of this one. With double
 * arithmetic on float32 rows the loop is long for the bytes it reads, and
 * the hardware prefetcher alone keeps too few lines in flight: with the
 * hint, BatchNorm1d's (4096, 768) fwd+bwd went from 3.9 to 3.2 ms
 * (bench/cpu_time.py, bn1d_fwd_bwd). A store to a line not
 * in the cache waits for the line, and the stores waiting fill the
 * store queue: asking for the output's lines too took 7-9% off
 * BatchNorm1d's (4096, 768) fwd+bwd. (In LayerNorm's backward, asking for
 * dx's lines gave no gain that held up against noise, and for y in the
 * forward it was slower.) */
#if defined(__GNUC__)
#define TG_NORM_PREFETCH_RW(p, n, rw)                                        \
    do {                                                                     \
        for (int64_t o_ = 0; o_ < (n); o_ += 64 / (int64_t)sizeof *(p))      \
            __builtin_prefetch((p) + o_, (rw));                              \
    } while (0)
#else
#define TG_NORM_PREFETCH_RW(p, n, rw) ((void)(p))
#endif
#define TG_NORM_PREFETCH(p, n) TG_NORM_PREFETCH_RW(p, n, 0)
#define TG_NORM_PREFETCH_WRITE(p, n) TG_NORM_PREFETCH_RW(p, n, 1)

/* Above this many bytes an input is taken to stream from memory rather
 * than sit in a core's L2 cache (1 MiB on the Zen 5 of docs/performance.md,
 * more than that on few CPUs): LayerNorm's forward then goes row by row
 * instead of in blocks of rows. */
#define TG_NORM_STREAM_BYTES (INT64_C(1) << 20)

/* BatchNorm1d's column kernels sweep x four times (statistics, y; sums and
 * dx with dy), and the statistics need every row before the first y. While
 * x, y, dy and dx fit in the last-level cache with room to spare, the
 * sweeps find them there, the hardware prefetcher keeps up, and the hints
 * and stretches of the streaming loops only cost. On the Zen 5 of
 * docs/performance.md (32 MiB of L3), moving this limit from 1 MiB to 5
 * MiB took fwd+bwd on (1024, 768) float32 to 0.74 of its time and (1536,
 * 768) to 0.83, and left (2048, 768) and (4096, 768) as they were; with
 * no streaming loops at all (2048, 768) took 1.02x and (4096, 768) 1.36x
 * the time (bench/cpu_time.py, bn1d_fwd_bwd@MxN). 5 MiB is a sixth of
 * that L3; on a CPU with a much smaller L3 the inputs between 1 and 5
 * MiB lose the hints. */
#define TG_BN_STREAM_BYTES (INT64_C(5) << 20)

/* Whether numel elements of elem_size bytes are more than `limit` bytes
 * (TG_NORM_STREAM_BYTES or TG_BN_STREAM_BYTES): the test both kernels make
 * to choose their loops for memory rather than for the cache. */
static inline bool tg_norm_streams(int64_t numel, size_t elem_size,
                                   int64_t limit)
{
    return numel * (int64_t)elem_size > limit;
}

/* ------------------------------------------------------ shared: threads */

/* Below this many elements a LayerNorm or BatchNorm kernel runs on the
 * calling thread, with no team started: a forward and backward of
 * (64, 768), or a BatchNorm1d on (256, 128), takes 10-30 us on one core,
 * and starting, joining and sharing out a team costs a good part of
 * that. Above the library's general threshold (TG_PARALLEL_MIN_WORK),
 * which is for loops of one pass. */
#define TG_NORM_PARALLEL_MIN (INT64_C(1) << 17)

/* The threads for a norm kernel over `numel` elements: 1 below
 * TG_NORM_PARALLEL_MIN. */
static inline int tg_norm_threads(int64_t numel)
{
    return numel < TG_NORM_PARALLEL_MIN ? 1 : tg_parallel_threads(numel);
}

/* -------------------------------------------------------------- LayerNorm */

/* The forward of rows [0, M) of x (M, N), contiguous, in dtype (N >= 1):
 * y, and mean and rstd (M,) in double. w and b are (N,) or NULL. Returns 0,
 * or -1 when the scratch memory cannot be had (nothing reported: the
 * caller does). */
int tg_layer_norm_forward_fast(tg_dtype dtype, const void *x, const void *w,
                               const void *b, void *y, double *mean,
                               double *rstd, int64_t M, int64_t N,
                               double eps);
/* The backward of rows [0, M) (M, N >= 1). w, dx, dw and db may be NULL
 * (no weight; gradient not needed); dw and db, when given, are zeroed
 * (N,) sums. Returns 0 or -1, as the forward. */
int tg_layer_norm_backward_fast(tg_dtype dtype, const void *dy,
                                const void *x, const void *w,
                                const double *mean, const double *rstd,
                                void *dx, double *dw, double *db, int64_t M,
                                int64_t N);

/* -------------------------------------------------------------- BatchNorm */

typedef struct bn_layout {
    int64_t N, C, S; // x as a contiguous (N, C, S) block
    int64_t n;       // values per channel: N * S
} bn_layout;

/* 1 / sqrt(m2 / (n - correction) + eps), 0 when that is 1 / 0
 * (autograd/ops/batch_norm.c). */
double tg_bn_invstd(double m2, int64_t n, int64_t correction, double eps);

/* Doubles of scratch the fast forward and backward need. */
size_t tg_bn_scratch_doubles(const bn_layout *l);

/* Same contracts as the reference kernels of batch_norm.c: the forward
 * fills mean, invstd and m2 (C,) in training (in eval mean and invstd come
 * in holding the running statistics' values) and y; the backward fills
 * sdy and sdyx (C,) and dx unless it is NULL. scratch holds
 * tg_bn_scratch_doubles(l). Results do not depend on the thread count. */
#define TG_BN_FAST_DECLARE(SFX, T)                                           \
    void tg_bn_fast_forward_##SFX(                                           \
        const T *x, const T *w, const T *b, T *y, double *mean,              \
        double *invstd, double *m2, const tg_batch_norm_options *o,          \
        const bn_layout *l, double *scratch);                                \
    void tg_bn_fast_backward_##SFX(                                          \
        const T *dy, const T *x, const T *w, const double *mean,             \
        const double *invstd, T *dx, double *sdy, double *sdyx,              \
        bool training, int64_t correction, const bn_layout *l,               \
        double *scratch);
TG_BN_FAST_DECLARE(f32, float)
TG_BN_FAST_DECLARE(f64, double)
#undef TG_BN_FAST_DECLARE

#endif
