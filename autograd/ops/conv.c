/*
 * autograd/ops/conv.c - 2-D convolution, torch.nn.functional.conv2d:
 * forward and backward, as im2col followed by a matrix product.
 *
 * The math. x is (N, C, H, W), weight (O, C/G, kH, kW), bias (O,) or none,
 * G groups: input channels g C/G .. (g + 1) C/G - 1 feed output channels
 * g O/G .. (g + 1) O/G - 1. With stride (sh, sw), padding (ph, pw) and
 * dilation (dh, dw):
 *
 *   Ho = (H + 2 ph - dh (kH - 1) - 1) / sh + 1     (rounded down); Wo alike
 *   y[n, o, p, q] = b[o] + sum over c < C/G, i < kH, j < kW of
 *                   w[o, c, i, j] * x[n, g C/G + c, p sh - ph + i dh,
 *                                                   q sw - pw + j dw]
 *
 * where g = o / (O/G) and x reads 0 outside the image (the padding). (As in
 * PyTorch this is a cross-correlation: the kernel is not flipped.)
 *
 * im2col writes, for group g, the values each output position reads as one
 * column of a (K, N L) matrix, K = C/G kH kW, L = Ho Wo:
 *
 *   cols_g[(c, i, j), (n, p, q)] = x[n, g C/G + c, p sh - ph + i dh, ...]
 *
 * so the sum above is one matrix product per group, run by the gemm that
 * tg_matmul uses:
 *
 *   y_g (O/G, N L) = w_g (O/G, K) @ cols_g (K, N L)
 *
 * Backward, with dy_g (O/G, N L) the upstream gradient of group g laid out
 * as y_g (docs/convolution.md derives it):
 *
 *   dw_g    = dy_g @ cols_g^T        (O/G, K)
 *   dcols_g = w_g^T @ dy_g           (K, N L), and col2im adds each entry
 *                                    into the x element im2col read it from
 *   db[o]   = sum over n, p, q of dy[n, o, p, q]
 *
 * The reference: conv_forward_naive and conv_backward_naive, the plain
 * seven loops of the definition, in double, rounded once. They are what
 * TG_KERNELS_REFERENCE runs and what the tests compare the im2col path
 * against. The im2col path accumulates in the operands' type, as the gemm
 * does; float64 agrees with the reference to rounding.
 *
 * Not here: pooling (pool.c), the Conv2d module (nn/conv.c).
 */
#include "../internal.h"
#include "gemm.h"

#include <string.h>

/* The sizes of one call, checked. */
typedef struct conv_geom {
    int64_t n, c, h, w;        // x (N, C, H, W)
    int64_t o, kh, kw;         // weight (O, C/G, kH, kW)
    int64_t sh, sw, ph, pw, dh, dw, groups;
    int64_t ho, wo;            // y (N, O, Ho, Wo)
} conv_geom;

/* ----------------------------------------------------- reference kernels */

/* y (N, O, Ho, Wo) = conv2d(x, w, b) by the definition: seven loops (n, o,
 * p, q, then c, i, j summed), padding read as 0. All arrays contiguous
 * double; b may be NULL. */
static void conv_forward_naive(const double *x, const double *w,
                               const double *b, const conv_geom *s,
                               double *y)
{
    int64_t cg = s->c / s->groups, og = s->o / s->groups;
    for (int64_t n = 0; n < s->n; n++)
        for (int64_t o = 0; o < s->o; o++)
            for (int64_t p = 0; p < s->ho; p++)
                for (int64_t q = 0; q < s->wo; q++) {
                    int64_t g = o / og;
                    double sum = b ? b[o] : 0.0;
                    for (int64_t c = 0; c < cg; c++)
                        for (int64_t i = 0; i < s->kh; i++)
                            for (int64_t j = 0; j < s->kw; j++) {
                                int64_t ih = p * s->sh - s->ph + i * s->dh;
                                int64_t iw = q * s->sw - s->pw + j * s->dw;
                                if (ih < 0 || ih >= s->h || iw < 0 ||
                                    iw >= s->w)
                                    continue; // padding
                                sum += w[((o * cg + c) * s->kh + i) * s->kw +
                                         j] *
                                       x[((n * s->c + g * cg + c) * s->h +
                                          ih) * s->w + iw];
                            }
                    y[((n * s->o + o) * s->ho + p) * s->wo + q] = sum;
                }
}

/* The same loops run backwards: each product w * x of the forward sends
 * dy * x to dw and dy * w to dx. dx, dw (zeroed by the caller) may be
 * NULL when not needed; db too. */
static void conv_backward_naive(const double *x, const double *w,
                                const double *dy, const conv_geom *s,
                                double *dx, double *dw, double *db)
{
    int64_t cg = s->c / s->groups, og = s->o / s->groups;
    for (int64_t n = 0; n < s->n; n++)
        for (int64_t o = 0; o < s->o; o++)
            for (int64_t p = 0; p < s->ho; p++)
                for (int64_t q = 0; q < s->wo; q++) {
                    int64_t g = o / og;
                    double d = dy[((n * s->o + o) * s->ho + p) * s->wo + q];
                    if (db)
                        db[o] += d;
                    for (int64_t c = 0; c < cg; c++)
                        for (int64_t i = 0; i < s->kh; i++)
                            for (int64_t j = 0; j < s->kw; j++) {
                                int64_t ih = p * s->sh - s->ph + i * s->dh;
                                int64_t iw = q * s->sw - s->pw + j * s->dw;
                                if (ih < 0 || ih >= s->h || iw < 0 ||
                                    iw >= s->w)
                                    continue;
                                int64_t wi =
                                    ((o * cg + c) * s->kh + i) * s->kw + j;
                                int64_t xi = ((n * s->c + g * cg + c) * s->h +
                                              ih) * s->w + iw;
                                if (dw)
                                    dw[wi] += d * x[xi];
                                if (dx)
                                    dx[xi] += d * w[wi];
                            }
                }
}

/* ------------------------------------------------------ im2col kernels */

/* The output columns [*q0, *q1) whose kernel tap j reads inside the
 * image: iw = q sw - pw + j dw in [0, W). The others read the padding. */
static void inside_cols(const conv_geom *s, int64_t j, int64_t *q0,
                        int64_t *q1)
{
    int64_t off = j * s->dw - s->pw; // iw = q sw + off
    int64_t sw = s->sw, lo, hi;
    if (sw == 1) { // the same without the divisions, called per tap
        lo = off >= 0 ? 0 : -off;
        hi = s->w - off <= 0 ? 0 : s->w - off;
    } else {
        lo = off >= 0 ? 0 : (-off + sw - 1) / sw;
        hi = s->w - off <= 0 ? 0 : (s->w - off - 1) / sw + 1;
    }
    *q0 = lo < s->wo ? lo : s->wo;
    *q1 = hi < s->wo ? hi : s->wo;
    if (*q1 < *q0)
        *q1 = *q0;
}

/* For tap (i, j) of a convolution with stride 1 that keeps the width (Wo
 * == W): output (p, q) reads image element (p + di, q + dj), and the
 * output rows [*p0, *p1) read inside the image. */
static void same_width_rows(const conv_geom *s, int64_t i, int64_t j,
                            int64_t *di, int64_t *dj, int64_t *p0,
                            int64_t *p1)
{
    *di = i * s->dh - s->ph;
    *dj = j * s->dw - s->pw;
    *p0 = *di < 0 ? -*di : 0;
    *p1 = s->h - *di < s->ho ? s->h - *di : s->ho;
}

/* The images are taken a chunk at a time, so that a chunk's columns stay
 * in the cache between im2col and the products, and the products are
 * small enough for the gemm's unpacked small kernel: at most
 * CONV_CHUNK_COLS output positions (a chunk's N L, which is dw's k) and
 * CONV_CHUNK_BYTES of columns, at least one image. y and dx come out the
 * same whatever the chunk (each of their sums runs within one image);
 * dw_g is the chunks' partial products added in chunk order. */
#define CONV_CHUNK_COLS 256
#define CONV_CHUNK_BYTES (INT64_C(128) * 1024)

static int64_t conv_chunk(const conv_geom *s, int64_t K, size_t elem)
{
    int64_t L = s->ho * s->wo;
    int64_t by_cols = CONV_CHUNK_COLS / (L > 0 ? L : 1);
    int64_t by_bytes = CONV_CHUNK_BYTES / (int64_t)((size_t)(K * L) * elem
                                                     + 1);
    int64_t nb = by_cols < by_bytes ? by_cols : by_bytes;
    if (nb > s->n)
        nb = s->n;
    return nb < 1 ? 1 : nb;
}

/* For float and double: im2col, col2im, and the forward and backward of
 * the top of the file on contiguous arrays, over images n0 .. n0 + nb - 1
 * (a chunk; NL below is nb L).
 *
 * im2col_*: cols (K, nb L) of group g; row (c, i, j), column (n - n0, p,
 *   q).
 * col2im_*: the reverse, adding: dx[element im2col read] += cols[...].
 * conv_forward_*: y (N, O, L) from x and w, chunk images at a time
 *   (conv_chunk, which sized the scratch); cols (K, chunk L) and tmp
 *   (O/G, chunk L) are scratch; b may be NULL.
 * conv_backward_*: the same chunks; cols and tmp (K, chunk L), dyg (O/G,
 *   chunk L) and part (O/G, K) are scratch; dx and dw (both zeroed) may
 *   be NULL when not needed. */
#define TG_CONV_KERNELS(sfx, T, GEMM)                                       \
    /* Sets the columns outside [q0, q1) of rows [p0, p1) of a (., W)    \
     * block to 0, a column at a time: a row's are only pw elements, which \
     * GCC would zero with a call to memset each. */                       \
    static void zero_wrapped_##sfx(T *rows, int64_t W, int64_t p0,         \
                                   int64_t p1, int64_t q0, int64_t q1)     \
    {                                                                       \
        for (int64_t q = 0; q < q0; q++)                                    \
            for (int64_t p = p0; p < p1; p++)                               \
                rows[p * W + q] = 0;                                        \
        for (int64_t q = q1; q < W; q++)                                    \
            for (int64_t p = p0; p < p1; p++)                               \
                rows[p * W + q] = 0;                                        \
    }                                                                       \
                                                                            \
    /* One image's part of a cols row (c, i, j) when the stride is 1 and   \
     * the width is kept (Wo == W: "same" padding). Then output (p, q)     \
     * reads image element (p + di) W + q + dj, a constant shift of its    \
     * own index p W + q, so the valid rows are one copy of a contiguous   \
     * span, after which the columns that wrapped into the next or the     \
     * previous image row (q outside [q0, q1)) are set to 0, as are the    \
     * rows in the padding. The same values as the row-by-row loop below.  \
     */                                                                     \
    static void same_width_cols_##sfx(const T *plane, const conv_geom *s,  \
                                      int64_t i, int64_t j, int64_t q0,    \
                                      int64_t q1, T *dst)                  \
    {                                                                       \
        int64_t W = s->w, di, dj, p0, p1;                                   \
        same_width_rows(s, i, j, &di, &dj, &p0, &p1);                       \
        if (p1 <= p0 || q1 <= q0) {                                         \
            for (int64_t e = 0; e < s->ho * W; e++)                         \
                dst[e] = 0;                                                 \
            return;                                                         \
        }                                                                   \
        int64_t a = p0 * W + q0, b = (p1 - 1) * W + q1;                     \
        memcpy(dst + a, plane + a + di * W + dj, sizeof(T) * (size_t)(b - a)); \
        for (int64_t e = 0; e < p0 * W; e++)                                \
            dst[e] = 0;                                                     \
        zero_wrapped_##sfx(dst, W, p0, p1, q0, q1);                         \
        for (int64_t e = p1 * W; e < s->ho * W; e++)                        \
            dst[e] = 0;                                                     \
    }                                                                       \
                                                                            \
    static void im2col_##sfx(const T *x, const conv_geom *s, int64_t g,    \
                             int64_t n0, int64_t nb, T *cols)              \
    {                                                                       \
        int64_t cg = s->c / s->groups, L = s->ho * s->wo, NL = nb * L;     \
        for (int64_t c = 0; c < cg; c++)                                    \
            for (int64_t i = 0; i < s->kh; i++)                             \
                for (int64_t j = 0; j < s->kw; j++) {                       \
                    T *row = cols + ((c * s->kh + i) * s->kw + j) * NL;     \
                    int64_t q0, q1;                                         \
                    inside_cols(s, j, &q0, &q1);                            \
                    for (int64_t n = 0; n < nb; n++) {                      \
                        const T *plane =                                    \
                            x + ((n0 + n) * s->c + g * cg + c) * s->h *     \
                                    s->w;                                   \
                        if (s->sh == 1 && s->sw == 1 && s->wo == s->w) {    \
                            same_width_cols_##sfx(plane, s, i, j, q0, q1,   \
                                                  row + n * L);             \
                            continue;                                       \
                        }                                                   \
                        for (int64_t p = 0; p < s->ho; p++) {               \
                            T *dst = row + n * L + p * s->wo;               \
                            int64_t ih = p * s->sh - s->ph + i * s->dh;     \
                            if (ih < 0 || ih >= s->h) {                     \
                                for (int64_t q = 0; q < s->wo; q++)         \
                                    dst[q] = 0;                             \
                                continue;                                   \
                            }                                               \
                            const T *src = plane + ih * s->w;               \
                            for (int64_t q = 0; q < q0; q++)                \
                                dst[q] = 0;                                 \
                            const T *at = src + q0 * s->sw - s->pw +        \
                                          j * s->dw;                        \
                            if (s->sw == 1 && q1 > q0)                      \
                                memcpy(dst + q0, at,                        \
                                       sizeof(T) * (size_t)(q1 - q0));      \
                            else                                            \
                                for (int64_t q = q0; q < q1; q++)           \
                                    dst[q] = at[(q - q0) * s->sw];          \
                            for (int64_t q = q1; q < s->wo; q++)            \
                                dst[q] = 0;                                 \
                        }                                                   \
                    }                                                       \
                }                                                           \
    }                                                                       \
                                                                            \
    /* col2im's counterpart of same_width_cols: one image's part of a    \
     * cols row (c, i, j), src, added into its plane. The wrapped columns  \
     * of the valid rows are first set to 0 in src (scratch), so that the  \
     * valid rows add as one contiguous span: adding 0 leaves dx as it was \
     * (dx starts at +0, and a sum that starts at +0 is never -0). Each dx \
     * element gets the same additions in the same order as from the       \
     * row-by-row loop of col2im.                                          \
     */                                                                     \
    static void same_width_add_##sfx(T *src, const conv_geom *s,           \
                                     int64_t i, int64_t j, int64_t q0,     \
                                     int64_t q1, T *plane)                 \
    {                                                                       \
        int64_t W = s->w, di, dj, p0, p1;                                   \
        same_width_rows(s, i, j, &di, &dj, &p0, &p1);                       \
        if (p1 <= p0 || q1 <= q0)                                           \
            return;                                                         \
        zero_wrapped_##sfx(src, W, p0, p1, q0, q1);                         \
        int64_t shift = di * W + dj; /* src[e] adds to plane[e + shift] */  \
        for (int64_t e = p0 * W + q0; e < (p1 - 1) * W + q1; e++)           \
            plane[e + shift] += src[e];                                     \
    }                                                                       \
                                                                            \
    static void col2im_##sfx(T *cols, const conv_geom *s, int64_t g,       \
                             int64_t n0, int64_t nb, T *dx)                \
    {                                                                       \
        int64_t cg = s->c / s->groups, L = s->ho * s->wo, NL = nb * L;     \
        for (int64_t c = 0; c < cg; c++)                                    \
            for (int64_t i = 0; i < s->kh; i++)                             \
                for (int64_t j = 0; j < s->kw; j++) {                       \
                    T *row = cols + ((c * s->kh + i) * s->kw + j) * NL;     \
                    int64_t q0, q1;                                         \
                    inside_cols(s, j, &q0, &q1);                            \
                    for (int64_t n = 0; n < nb; n++) {                      \
                        T *plane = dx + ((n0 + n) * s->c + g * cg + c) *    \
                                            s->h * s->w;                    \
                        if (s->sh == 1 && s->sw == 1 && s->wo == s->w) {    \
                            same_width_add_##sfx(row + n * L, s, i, j, q0,  \
                                                 q1, plane);                \
                            continue;                                       \
                        }                                                   \
                        for (int64_t p = 0; p < s->ho; p++) {               \
                            int64_t ih = p * s->sh - s->ph + i * s->dh;     \
                            if (ih < 0 || ih >= s->h)                       \
                                continue;                                   \
                            const T *src = row + n * L + p * s->wo;         \
                            T *dst = plane + ih * s->w;                     \
                            T *at = dst + q0 * s->sw - s->pw + j * s->dw;   \
                            if (s->sw == 1) /* a loop that vectorises */    \
                                for (int64_t q = q0; q < q1; q++)           \
                                    at[q - q0] += src[q];                   \
                            else                                            \
                                for (int64_t q = q0; q < q1; q++)           \
                                    at[(q - q0) * s->sw] += src[q];         \
                        }                                                   \
                    }                                                       \
                }                                                           \
    }                                                                       \
                                                                            \
    static void conv_forward_##sfx(const T *x, const T *w, const T *b,     \
                                   const conv_geom *s, int64_t chunk,      \
                                   T *y, T *cols, T *tmp)                  \
    {                                                                       \
        int64_t og = s->o / s->groups, L = s->ho * s->wo;                   \
        int64_t K = s->c / s->groups * s->kh * s->kw;                       \
        for (int64_t n0 = 0; n0 < s->n; n0 += chunk) {                      \
            int64_t nb = s->n - n0 < chunk ? s->n - n0 : chunk, NL = nb * L; \
            for (int64_t g = 0; g < s->groups; g++) {                       \
                im2col_##sfx(x, s, g, n0, nb, cols);                        \
                /* y_g = w_g (og, K) @ cols (K, NL) */                      \
                GEMM(w + g * og * K, K, 1, cols, NL, 1, tmp, og, K, NL);    \
                for (int64_t o = 0; o < og; o++) {                          \
                    T bias = b ? b[g * og + o] : (T)0;                      \
                    for (int64_t n = 0; n < nb; n++) {                      \
                        const T *src = tmp + o * NL + n * L;                \
                        T *dst = y + ((n0 + n) * s->o + g * og + o) * L;    \
                        for (int64_t l = 0; l < L; l++)                     \
                            dst[l] = src[l] + bias;                         \
                    }                                                       \
                }                                                           \
            }                                                               \
        }                                                                   \
    }                                                                       \
                                                                            \
    static void conv_backward_##sfx(const T *x, const T *w, const T *dy,   \
                                    const conv_geom *s, int64_t chunk,     \
                                    T *dx, T *dw, T *cols, T *dyg, T *tmp, \
                                    T *part)                               \
    {                                                                       \
        int64_t og = s->o / s->groups, L = s->ho * s->wo;                   \
        int64_t K = s->c / s->groups * s->kh * s->kw;                       \
        for (int64_t n0 = 0; n0 < s->n; n0 += chunk) {                      \
            int64_t nb = s->n - n0 < chunk ? s->n - n0 : chunk, NL = nb * L; \
            for (int64_t g = 0; g < s->groups; g++) {                       \
                for (int64_t o = 0; o < og; o++)                            \
                    for (int64_t n = 0; n < nb; n++)                        \
                        memcpy(dyg + o * NL + n * L,                        \
                               dy + ((n0 + n) * s->o + g * og + o) * L,     \
                               sizeof(T) * (size_t)L);                      \
                if (dw) { /* dw_g += dy_g (og, NL) @ cols^T (NL, K) */      \
                    im2col_##sfx(x, s, g, n0, nb, cols);                    \
                    GEMM(dyg, NL, 1, cols, 1, NL, part, og, NL, K);         \
                    T *dwg = dw + g * og * K;                               \
                    for (int64_t e = 0; e < og * K; e++)                    \
                        dwg[e] += part[e];                                  \
                }                                                           \
                if (dx) { /* dcols = w_g^T (K, og) @ dy_g (og, NL) */       \
                    GEMM(w + g * og * K, 1, K, dyg, NL, 1, tmp, K, og, NL); \
                    col2im_##sfx(tmp, s, g, n0, nb, dx);                    \
                }                                                           \
            }                                                               \
        }                                                                   \
    }

TG_CONV_KERNELS(f32, float, tg_gemm_f32)
TG_CONV_KERNELS(f64, double, tg_gemm_f64)

/* ------------------------------------------------------------ arguments */

tg_conv2d_options tg_conv2d_defaults(void)
{
    return (tg_conv2d_options){.stride = {1, 1}, .dilation = {1, 1},
                               .groups = 1};
}

/* opts with each zero field replaced by its default, checked. */
static int conv_options(const tg_conv2d_options *opts, tg_conv2d_options *r)
{
    *r = opts ? *opts : tg_conv2d_defaults();
    bool bad = r->groups < 0;
    for (int k = 0; k < 2; k++) {
        bad = bad || r->stride[k] < 0 || r->dilation[k] < 0 ||
              r->padding[k] < 0;
        r->stride[k] = r->stride[k] ? r->stride[k] : 1;
        r->dilation[k] = r->dilation[k] ? r->dilation[k] : 1;
    }
    r->groups = r->groups ? r->groups : 1;
    if (!bad)
        return 0;
    tg_error("tg_conv2d",
             "invalid options stride (%lld, %lld), padding (%lld, %lld), "
             "dilation (%lld, %lld), groups %lld\n"
             "  rule: stride, dilation and groups are >= 1 (0 means the "
             "default, 1) and padding >= 0\n"
             "  hint: (tg_conv2d_options){.padding = {1, 1}} is a 3x3 "
             "\"same\" convolution",
             (long long)opts->stride[0], (long long)opts->stride[1],
             (long long)opts->padding[0], (long long)opts->padding[1],
             (long long)opts->dilation[0], (long long)opts->dilation[1],
             (long long)opts->groups);
    return -1;
}

/* Checks x (N, C, H, W) (already made 4-D), weight and bias against each
 * other and the options, and works out the sizes. `shown` is x as the
 * caller gave it, for the messages. 0 or -1 with an error. */
static int conv_check(const tg_tensor *shown, const tg_tensor *x,
                      const tg_tensor *weight, const tg_tensor *bias,
                      const tg_conv2d_options *o, conv_geom *s)
{
    char sx[TG_SHAPE_STR_MAX], sw[TG_SHAPE_STR_MAX], sb[TG_SHAPE_STR_MAX];
    const char *fn = "tg_conv2d";
    if (weight->ndim != 4 || weight->shape[0] < 1 || weight->shape[1] < 1 ||
        weight->shape[2] < 1 || weight->shape[3] < 1) {
        tg_error(fn,
                 "weight has shape %s\n"
                 "  rule: weight is (out_channels, in_channels / groups, "
                 "kernel_h, kernel_w), each >= 1\n"
                 "  hint: a 3x3 convolution from 1 to 8 channels has a "
                 "(8, 1, 3, 3) weight",
                 tg_shape_str(weight, sw));
        return -1;
    }
    *s = (conv_geom){.n = x->shape[0], .c = x->shape[1], .h = x->shape[2],
                     .w = x->shape[3], .o = weight->shape[0],
                     .kh = weight->shape[2], .kw = weight->shape[3],
                     .sh = o->stride[0], .sw = o->stride[1],
                     .ph = o->padding[0], .pw = o->padding[1],
                     .dh = o->dilation[0], .dw = o->dilation[1],
                     .groups = o->groups};
    if (s->o % s->groups != 0) {
        tg_error(fn,
                 "groups %lld does not divide the %lld output channels of "
                 "weight %s\n"
                 "  rule: in_channels and out_channels are both multiples "
                 "of groups\n"
                 "  hint: groups 1 connects every input channel to every "
                 "output channel",
                 (long long)s->groups, (long long)s->o,
                 tg_shape_str(weight, sw));
        return -1;
    }
    if (s->c != weight->shape[1] * s->groups) {
        tg_error(fn,
                 "cannot convolve x of shape %s with weight %s, groups "
                 "%lld\n"
                 "  rule: x's channels (dim %d) must equal weight.shape[1] "
                 "* groups, but %lld != %lld * %lld\n"
                 "  hint: the layer before gives %lld channels; make the "
                 "weight (%lld, %lld, %lld, %lld)",
                 tg_shape_str(shown, sx), tg_shape_str(weight, sw),
                 (long long)s->groups, shown->ndim - 3, (long long)s->c,
                 (long long)weight->shape[1], (long long)s->groups,
                 (long long)s->c, (long long)s->o,
                 (long long)(s->c / s->groups), (long long)s->kh,
                 (long long)s->kw);
        return -1;
    }
    if (bias && (bias->ndim != 1 || bias->shape[0] != s->o)) {
        tg_error(fn,
                 "bias has shape %s but weight %s has %lld output channels\n"
                 "  rule: bias is (out_channels,) = (%lld,)\n"
                 "  hint: pass NULL for no bias",
                 tg_shape_str(bias, sb), tg_shape_str(weight, sw),
                 (long long)s->o, (long long)s->o);
        return -1;
    }
    int64_t eh = s->dh * (s->kh - 1) + 1, ew = s->dw * (s->kw - 1) + 1;
    int64_t hp = s->h + 2 * s->ph, wp = s->w + 2 * s->pw;
    if (eh > hp || ew > wp) {
        tg_error(fn,
                 "the kernel (%lld, %lld) with dilation (%lld, %lld) spans "
                 "(%lld, %lld), larger than the padded input (%lld, %lld) "
                 "of x %s\n"
                 "  rule: dilation * (kernel - 1) + 1 <= size + 2 * padding "
                 "in each spatial dim, so that the output is at least 1x1\n"
                 "  hint: pad the input (padding), or use a smaller kernel "
                 "or dilation",
                 (long long)s->kh, (long long)s->kw, (long long)s->dh,
                 (long long)s->dw, (long long)eh, (long long)ew,
                 (long long)hp, (long long)wp, tg_shape_str(shown, sx));
        return -1;
    }
    s->ho = (hp - eh) / s->sh + 1;
    s->wo = (wp - ew) / s->sw + 1;
    return 0;
}

/* The dtype and ndim checks, on the arguments as given. */
static int conv_types_check(const tg_tensor *x, const tg_tensor *weight,
                            const tg_tensor *bias)
{
    char sx[TG_SHAPE_STR_MAX];
    const char *fn = "tg_conv2d";
    if (!tg_dtype_is_float(x->dtype)) {
        tg_error(fn,
                 "cannot convolve an %s tensor\n"
                 "  rule: x, weight and bias are float32 or float64\n"
                 "  hint: convert first: tg_to_dtype(x, TG_FLOAT32)",
                 tg_dtype_name(x->dtype));
        return -1;
    }
    const tg_tensor *other = weight->dtype != x->dtype ? weight
                             : bias && bias->dtype != x->dtype ? bias
                                                              : NULL;
    if (other) {
        tg_error(fn,
                 "%s is %s but x is %s\n"
                 "  rule: x, weight and bias have one dtype (as in PyTorch, "
                 "nothing is converted silently)\n"
                 "  hint: convert x with tg_to_dtype(x, %s), or the layer "
                 "with tg_module_to_dtype(layer, %s)",
                 other == weight ? "weight" : "bias",
                 tg_dtype_name(other->dtype), tg_dtype_name(x->dtype),
                 other->dtype == TG_FLOAT32 ? "TG_FLOAT32" : "TG_FLOAT64",
                 x->dtype == TG_FLOAT32 ? "TG_FLOAT32" : "TG_FLOAT64");
        return -1;
    }
    if (x->ndim != 4 && x->ndim != 3) {
        tg_error(fn,
                 "x has shape %s\n"
                 "  rule: x is (N, C, H, W), or (C, H, W) for one image\n"
                 "  hint: a batch of N grey 28x28 images is (N, 1, 28, 28): "
                 "tg_reshape(x, (int64_t[]){N, 1, 28, 28}, 4)",
                 tg_shape_str(x, sx));
        return -1;
    }
    return 0;
}

/* ------------------------------------------------------------- compute */

/* y = conv2d(x, w, b) without the tape; x, w, b contiguous of one float
 * dtype (b may be NULL). New reference. */
static tg_tensor *conv_compute(const tg_tensor *x, const tg_tensor *w,
                               const tg_tensor *b, const conv_geom *s)
{
    int64_t yshape[4] = {s->n, s->o, s->ho, s->wo};
    if (tg_shape_check("tg_conv2d", yshape, 4) < 0)
        return NULL;
    tg_tensor *y = tg_alloc(yshape, 4, x->dtype);
    if (!y || y->numel == 0)
        return y;
    if (tg_use_reference_kernels()) {
        tg_tensor *xd = tg_contiguous_as(x, TG_FLOAT64);
        tg_tensor *wd = xd ? tg_contiguous_as(w, TG_FLOAT64) : NULL;
        tg_tensor *bd = wd && b ? tg_contiguous_as(b, TG_FLOAT64) : NULL;
        tg_tensor *yd = wd && (bd || !b) ? tg_alloc(yshape, 4, TG_FLOAT64)
                                         : NULL;
        bool ok = yd != NULL;
        if (ok) {
            conv_forward_naive(tg_data_f64(xd), tg_data_f64(wd),
                               bd ? tg_data_f64(bd) : NULL, s,
                               tg_data_f64(yd));
            tg_copy_unchecked(y, yd); // rounds once to y's dtype
        }
        tg_release(yd);
        tg_release(bd);
        tg_release(wd);
        tg_release(xd);
        if (ok)
            return y;
        tg_release(y);
        return NULL;
    }
    int64_t K = s->c / s->groups * s->kh * s->kw;
    int64_t chunk = conv_chunk(s, K, tg_dtype_size(x->dtype));
    int64_t NL = chunk * s->ho * s->wo;
    int64_t cshape[2] = {K, NL}, tshape[2] = {s->o / s->groups, NL};
    tg_tensor *cols = tg_shape_check("tg_conv2d", cshape, 2) < 0
                          ? NULL
                          : tg_alloc(cshape, 2, x->dtype);
    tg_tensor *tmp = cols ? tg_alloc(tshape, 2, x->dtype) : NULL;
    if (tmp && x->dtype == TG_FLOAT32)
        conv_forward_f32(tg_data_f32(x), tg_data_f32(w),
                         b ? tg_data_f32(b) : NULL, s, chunk,
                         tg_data_f32(y), tg_data_f32(cols), tg_data_f32(tmp));
    else if (tmp)
        conv_forward_f64(tg_data_f64(x), tg_data_f64(w),
                         b ? tg_data_f64(b) : NULL, s, chunk,
                         tg_data_f64(y), tg_data_f64(cols), tg_data_f64(tmp));
    if (!tmp) {
        tg_release(y);
        y = NULL;
    }
    tg_release(tmp);
    tg_release(cols);
    return y;
}

/* ------------------------------------------------------------ backward */

typedef struct conv_ctx {
    conv_geom geom;
    int x_saved, w_saved; // tg_node_saved indices, -1 if not saved
} conv_ctx;

/* dx and dw into the zeroed double buffers dxd, dwd (NULL when not
 * wanted) with the reference loops; x (NULL when dw is not wanted), w
 * (NULL when dx is not wanted), dy of any float dtype. */
static int grads_naive(const tg_tensor *x, const tg_tensor *w,
                       const tg_tensor *dy, const conv_geom *s,
                       tg_tensor *dxd, tg_tensor *dwd)
{
    tg_tensor *xd = x ? tg_contiguous_as(x, TG_FLOAT64) : NULL;
    tg_tensor *wd = w ? tg_contiguous_as(w, TG_FLOAT64) : NULL;
    tg_tensor *dyd = tg_contiguous_as(dy, TG_FLOAT64);
    bool ok = dyd && (xd || !x) && (wd || !w);
    if (ok)
        conv_backward_naive(xd ? tg_data_f64(xd) : NULL,
                            wd ? tg_data_f64(wd) : NULL,
                            tg_data_f64(dyd), s,
                            dxd ? tg_data_f64(dxd) : NULL,
                            dwd ? tg_data_f64(dwd) : NULL, NULL);
    tg_release(dyd);
    tg_release(wd);
    tg_release(xd);
    return ok ? 0 : -1;
}

/* dx and dw (zeroed, dy's dtype, NULL when not wanted) with im2col and
 * the gemm; x (NULL when dw is not wanted), w (NULL when dx is not
 * wanted), dy contiguous of that dtype. */
static int grads_fast(const tg_tensor *x, const tg_tensor *w,
                      const tg_tensor *dy, const conv_geom *s, tg_tensor *dx,
                      tg_tensor *dw)
{
    int64_t K = s->c / s->groups * s->kh * s->kw;
    int64_t chunk = conv_chunk(s, K, tg_dtype_size(dy->dtype));
    int64_t NL = chunk * s->ho * s->wo;
    int64_t cshape[2] = {K, NL}, gshape[2] = {s->o / s->groups, NL};
    int64_t pshape[2] = {s->o / s->groups, K};
    tg_tensor *cols = tg_alloc(cshape, 2, dy->dtype);
    tg_tensor *dyg = cols ? tg_alloc(gshape, 2, dy->dtype) : NULL;
    tg_tensor *tmp = dyg ? tg_alloc(cshape, 2, dy->dtype) : NULL;
    tg_tensor *part = tmp ? tg_alloc(pshape, 2, dy->dtype) : NULL;
    bool ok = part != NULL;
    if (ok && dy->dtype == TG_FLOAT32)
        conv_backward_f32(x ? tg_data_f32(x) : NULL,
                          w ? tg_data_f32(w) : NULL, tg_data_f32(dy), s,
                          chunk, dx ? tg_data_f32(dx) : NULL,
                          dw ? tg_data_f32(dw) : NULL, tg_data_f32(cols),
                          tg_data_f32(dyg), tg_data_f32(tmp),
                          tg_data_f32(part));
    else if (ok)
        conv_backward_f64(x ? tg_data_f64(x) : NULL,
                          w ? tg_data_f64(w) : NULL, tg_data_f64(dy), s,
                          chunk, dx ? tg_data_f64(dx) : NULL,
                          dw ? tg_data_f64(dw) : NULL, tg_data_f64(cols),
                          tg_data_f64(dyg), tg_data_f64(tmp),
                          tg_data_f64(part));
    tg_release(part);
    tg_release(tmp);
    tg_release(dyg);
    tg_release(cols);
    return ok ? 0 : -1;
}

/* db[o] = sum over n, p, q of dy[n, o, p, q], summed in double in that
 * order. New reference. */
static tg_tensor *bias_grad(const tg_tensor *dy, const conv_geom *s)
{
    /* dy as it is when contiguous (float32 values widen to double exactly
     * as they are added: no double copy) */
    tg_tensor *dyc = tg_contiguous_as(dy, dy->dtype);
    tg_tensor *db = dyc ? tg_zeros(&s->o, 1, TG_FLOAT64) : NULL;
    if (db) {
        double *acc = tg_data_f64(db);
        int64_t L = s->ho * s->wo;
#define TG_BIAS_SUMS(T)                                                     \
    do {                                                                    \
        const T *d = (const T *)tg_base_ptr(dyc);                           \
        for (int64_t n = 0; n < s->n; n++)                                  \
            for (int64_t o = 0; o < s->o; o++)                              \
                for (int64_t l = 0; l < L; l++)                             \
                    acc[o] += (double)d[(n * s->o + o) * L + l];            \
    } while (0)
        if (dyc->dtype == TG_FLOAT32)
            TG_BIAS_SUMS(float);
        else
            TG_BIAS_SUMS(double);
#undef TG_BIAS_SUMS
    }
    tg_release(dyc);
    return db;
}

/* forward: y[n, o, p, q] = b[o] + sum_{c, i, j} w[o, c, i, j] *
 *                          x[n, g C/G + c, p sh - ph + i dh, q sw - pw + j dw]
 * so each product sends dy[n, o, p, q] * x[...] to dw[o, c, i, j] and
 * dy[n, o, p, q] * w[o, c, i, j] to dx[...], and db[o] is the sum of dy
 * over n, p, q. Saved: x when w needs a gradient, w when x does. */
static int conv_backward(tg_node *node, const tg_tensor *g, tg_tensor **grads)
{
    const conv_ctx *c = tg_node_ctx(node);
    const conv_geom *s = &c->geom;
    bool want_x = tg_node_needs_grad(node, 0);
    bool want_w = tg_node_needs_grad(node, 1);
    bool want_b = tg_node_needs_grad(node, 2);
    tg_dtype dtype = tg_node_input_dtype(node, 0);
    int64_t xshape[4] = {s->n, s->c, s->h, s->w};
    int64_t wshape[4] = {s->o, s->c / s->groups, s->kh, s->kw};
    if (want_b) {
        grads[2] = bias_grad(g, s);
        if (!grads[2])
            return -1;
    }
    if (!want_x && !want_w)
        return 0;
    const tg_tensor *x = c->x_saved >= 0 ? tg_node_saved(node, c->x_saved)
                                         : NULL;
    const tg_tensor *w = c->w_saved >= 0 ? tg_node_saved(node, c->w_saved)
                                         : NULL;
    bool naive = tg_use_reference_kernels();
    tg_dtype work = naive ? TG_FLOAT64 : dtype;
    tg_tensor *dx = want_x ? tg_zeros(xshape, 4, work) : NULL;
    tg_tensor *dw = want_w ? tg_zeros(wshape, 4, work) : NULL;
    if ((want_x && !dx) || (want_w && !dw)) {
        tg_release(dx);
        tg_release(dw);
        return -1;
    }
    /* x was saved only for dw, w only for dx */
    int rc = 0;
    if (s->n * s->ho * s->wo == 0) {
        /* no output element: nothing to add */
    } else if (naive) {
        rc = grads_naive(x, w, g, s, dx, dw);
    } else {
        tg_tensor *xc = x ? tg_contiguous_as(x, dtype) : NULL;
        tg_tensor *wc = w ? tg_contiguous_as(w, dtype) : NULL;
        tg_tensor *gc = tg_contiguous_as(g, dtype);
        rc = (x && !xc) || (w && !wc) || !gc ? -1
                                      : grads_fast(xc, wc, gc, s, dx, dw);
        tg_release(gc);
        tg_release(wc);
        tg_release(xc);
    }
    if (rc < 0) {
        tg_release(dx);
        tg_release(dw);
        return -1;
    }
    grads[0] = dx;
    grads[1] = dw;
    return 0;
}

static const tg_op conv_op = {"ConvolutionBackward0", conv_backward,
                              sizeof(conv_ctx)};

/* ------------------------------------------------------- the public op */

tg_tensor *tg_conv2d(const tg_tensor *x, const tg_tensor *weight,
                     const tg_tensor *bias, const tg_conv2d_options *opts)
{
    if (!x || !weight)
        return NULL;
    tg_check_alive("tg_conv2d", x);
    tg_check_alive("tg_conv2d", weight);
    tg_check_alive("tg_conv2d", bias);
    tg_conv2d_options o;
    if (conv_types_check(x, weight, bias) < 0 || conv_options(opts, &o) < 0)
        return NULL;
    bool unbatched = x->ndim == 3;
    tg_tensor *x4 = unbatched ? tg_unsqueeze(x, 0)
                              : tg_retain((tg_tensor *)x);
    conv_geom s;
    if (!x4 || conv_check(x, x4, weight, bias, &o, &s) < 0) {
        tg_release(x4);
        return NULL;
    }
    tg_tensor *xc = tg_contiguous_as(x4, x->dtype);
    tg_tensor *wc = xc ? tg_contiguous_as(weight, x->dtype) : NULL;
    tg_tensor *bc = wc && bias ? tg_contiguous_as(bias, x->dtype) : NULL;
    tg_tensor *out = wc && (bc || !bias) ? conv_compute(xc, wc, bc, &s)
                                         : NULL;
    tg_release(bc);
    tg_release(wc);
    tg_release(xc);
    tg_node *node = tg_record(&conv_op, &out, TG_INPUTS(x4, weight, bias));
    if (node) {
        conv_ctx *c = tg_node_ctx(node);
        c->geom = s;
        c->x_saved = c->w_saved = -1;
        if (tg_node_needs_grad(node, 1))
            c->x_saved = tg_node_save(node, x4); // x, for dw
        if (tg_node_needs_grad(node, 0))
            c->w_saved = tg_node_save(node, weight); // w, for dx
    }
    tg_release(x4);
    if (!unbatched || !out)
        return out;
    tg_tensor *y3 = tg_squeeze(out, 0);
    tg_release(out);
    return y3;
}
