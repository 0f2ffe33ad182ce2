/*
 * autograd/ops/pool.c - 2-D max and average pooling,
 * torch.nn.functional.max_pool2d and avg_pool2d (ceil_mode false,
 * dilation 1, avg_pool2d with count_include_pad true), forward and
 * backward.
 *
 * The math. x is (N, C, H, W) (or (C, H, W)); each channel is pooled on
 * its own over windows of kernel (kH, kW), moved by stride (sh, sw), over
 * the input padded by (ph, pw) on each side:
 *
 *   Ho = (H + 2 ph - kH) / sh + 1      (rounded down); Wo alike
 *   window(p, q) = rows p sh - ph .. p sh - ph + kH - 1,
 *                  cols q sw - pw .. q sw - pw + kW - 1
 *
 *   max:  y[n, c, p, q] = max of x over the window's elements inside the
 *         image (padding never wins: it is -inf). The index kept for
 *         backward is the first maximum in row-major order, and a NaN wins
 *         (the last NaN of the window), as PyTorch's CPU kernel picks it.
 *         Backward: dx[argmax] += dy[n, c, p, q]; the other elements of
 *         the window get nothing.
 *   avg:  y[n, c, p, q] = (sum of x over the window inside the image)
 *                         / (kH kW)
 *         dividing by the full window, padding counted as zeros
 *         (count_include_pad true; with ceil_mode false no window reaches
 *         past the padding). Backward: every element inside the window
 *         gets dy[n, c, p, q] / (kH kW).
 *
 * The loops below are the only kernels (there is no fast path to test
 * against them). The maximum is taken in x's own dtype (choosing an
 * element rounds nothing, so float32 and a double copy give the same
 * bits); the average and both backwards read and write contiguous double
 * copies, so a float32 average is summed in double and rounded once.
 *
 * Not here: convolution (conv.c), the modules (nn/conv.c).
 */
#include "../internal.h"

#include <math.h>

/* The sizes of one call, checked. */
typedef struct pool_geom {
    int64_t n, c, h, w;   // x (N, C, H, W)
    int64_t kh, kw, sh, sw, ph, pw;
    int64_t ho, wo;       // y (N, C, Ho, Wo)
} pool_geom;

/* -------------------------------------------------------------- kernels */

/* y and the flat index (ih W + iw, within the channel's plane, as
 * PyTorch's indices) of each maximum; x, y, idx contiguous, of type T. */
#define MAX_POOL_FORWARD(NAME, T)                                            \
    static void NAME(const T *x, const pool_geom *s, T *y, int64_t *idx)     \
    {                                                                        \
        for (int64_t nc = 0; nc < s->n * s->c; nc++) {                       \
            const T *plane = x + nc * s->h * s->w;                           \
            for (int64_t p = 0; p < s->ho; p++)                              \
                for (int64_t q = 0; q < s->wo; q++) {                        \
                    int64_t h0 = p * s->sh - s->ph, w0 = q * s->sw - s->pw;  \
                    int64_t h1 = h0 + s->kh < s->h ? h0 + s->kh : s->h;      \
                    int64_t w1 = w0 + s->kw < s->w ? w0 + s->kw : s->w;      \
                    h0 = h0 > 0 ? h0 : 0;                                    \
                    w0 = w0 > 0 ? w0 : 0;                                    \
                    T best = -INFINITY;                                      \
                    int64_t at = h0 * s->w + w0;                             \
                    for (int64_t ih = h0; ih < h1; ih++)                     \
                        for (int64_t iw = w0; iw < w1; iw++) {               \
                            T v = plane[ih * s->w + iw];                     \
                            if (v > best || isnan(v)) {                      \
                                best = v;                                    \
                                at = ih * s->w + iw;                         \
                            }                                                \
                        }                                                    \
                    int64_t o = (nc * s->ho + p) * s->wo + q;                \
                    y[o] = best;                                             \
                    idx[o] = at;                                             \
                }                                                            \
        }                                                                    \
    }
MAX_POOL_FORWARD(max_pool_forward_f32, float)
MAX_POOL_FORWARD(max_pool_forward_f64, double)

/* forward: y[n, c, p, q] = x[n, c, argmax], so
 *   dx[n, c, argmax] += dy[n, c, p, q]
 * dx zeroed by the caller. */
static void max_pool_backward(const double *dy, const int64_t *idx,
                              const pool_geom *s, double *dx)
{
    int64_t L = s->ho * s->wo;
    for (int64_t nc = 0; nc < s->n * s->c; nc++)
        for (int64_t l = 0; l < L; l++)
            dx[nc * s->h * s->w + idx[nc * L + l]] += dy[nc * L + l];
}

/* The window of output (p, q) clipped to the image: rows [*h0, *h1), cols
 * [*w0, *w1). */
static void window(const pool_geom *s, int64_t p, int64_t q, int64_t *h0,
                   int64_t *h1, int64_t *w0, int64_t *w1)
{
    int64_t a = p * s->sh - s->ph, b = q * s->sw - s->pw;
    *h1 = a + s->kh < s->h ? a + s->kh : s->h;
    *w1 = b + s->kw < s->w ? b + s->kw : s->w;
    *h0 = a > 0 ? a : 0;
    *w0 = b > 0 ? b : 0;
}

static void avg_pool_forward(const double *x, const pool_geom *s, double *y)
{
    double count = (double)(s->kh * s->kw); // padding counts
    for (int64_t nc = 0; nc < s->n * s->c; nc++) {
        const double *plane = x + nc * s->h * s->w;
        for (int64_t p = 0; p < s->ho; p++)
            for (int64_t q = 0; q < s->wo; q++) {
                int64_t h0, h1, w0, w1;
                window(s, p, q, &h0, &h1, &w0, &w1);
                double sum = 0.0;
                for (int64_t ih = h0; ih < h1; ih++)
                    for (int64_t iw = w0; iw < w1; iw++)
                        sum += plane[ih * s->w + iw];
                y[(nc * s->ho + p) * s->wo + q] = sum / count;
            }
    }
}

/* forward: y[n, c, p, q] = sum over the window of x / (kH kW), so
 *   dx[n, c, ih, iw] += dy[n, c, p, q] / (kH kW) for each (ih, iw) inside
 * the window. dx zeroed by the caller. */
static void avg_pool_backward(const double *dy, const pool_geom *s,
                              double *dx)
{
    double count = (double)(s->kh * s->kw);
    for (int64_t nc = 0; nc < s->n * s->c; nc++) {
        double *plane = dx + nc * s->h * s->w;
        for (int64_t p = 0; p < s->ho; p++)
            for (int64_t q = 0; q < s->wo; q++) {
                int64_t h0, h1, w0, w1;
                window(s, p, q, &h0, &h1, &w0, &w1);
                double d = dy[(nc * s->ho + p) * s->wo + q] / count;
                for (int64_t ih = h0; ih < h1; ih++)
                    for (int64_t iw = w0; iw < w1; iw++)
                        plane[ih * s->w + iw] += d;
            }
    }
}

/* ------------------------------------------------------------ arguments */

/* Checks x and the window, and works out the sizes (x as given, 3-D or
 * 4-D). 0 or -1 with an error naming fn. */
static int pool_check(const char *fn, const tg_tensor *x,
                      const int64_t kernel[2], const int64_t stride[2],
                      const int64_t padding[2], pool_geom *s)
{
    char sx[TG_SHAPE_STR_MAX];
    if (!tg_dtype_is_float(x->dtype)) {
        tg_error(fn,
                 "cannot pool an %s tensor\n"
                 "  rule: x is float32 or float64\n"
                 "  hint: convert first: tg_to_dtype(x, TG_FLOAT32)",
                 tg_dtype_name(x->dtype));
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
    int64_t k[2] = {kernel ? kernel[0] : 0, kernel ? kernel[1] : 0};
    int64_t st[2] = {stride ? stride[0] : k[0], stride ? stride[1] : k[1]};
    int64_t pd[2] = {padding ? padding[0] : 0, padding ? padding[1] : 0};
    if (k[0] < 1 || k[1] < 1 || st[0] < 1 || st[1] < 1 || pd[0] < 0 ||
        pd[1] < 0) {
        tg_error(fn,
                 "invalid window: kernel (%lld, %lld), stride (%lld, %lld), "
                 "padding (%lld, %lld)\n"
                 "  rule: kernel and stride are >= 1 and padding >= 0 (a "
                 "NULL kernel is not allowed; a NULL stride means the "
                 "kernel, a NULL padding 0)\n"
                 "  hint: 2x2 windows that halve the image: kernel {2, 2}, "
                 "stride NULL",
                 (long long)k[0], (long long)k[1], (long long)st[0],
                 (long long)st[1], (long long)pd[0], (long long)pd[1]);
        return -1;
    }
    if (2 * pd[0] > k[0] || 2 * pd[1] > k[1]) {
        tg_error(fn,
                 "padding (%lld, %lld) is more than half the kernel (%lld, "
                 "%lld)\n"
                 "  rule: padding <= kernel / 2 in each dim, as in PyTorch "
                 "(a window could otherwise lie in the padding alone)\n"
                 "  hint: padding (%lld, %lld) is the most this kernel "
                 "allows",
                 (long long)pd[0], (long long)pd[1], (long long)k[0],
                 (long long)k[1], (long long)(k[0] / 2),
                 (long long)(k[1] / 2));
        return -1;
    }
    int b = x->ndim == 4;
    *s = (pool_geom){.n = b ? x->shape[0] : 1, .c = x->shape[b],
                     .h = x->shape[b + 1], .w = x->shape[b + 2],
                     .kh = k[0], .kw = k[1], .sh = st[0], .sw = st[1],
                     .ph = pd[0], .pw = pd[1]};
    int64_t hp = s->h + 2 * s->ph, wp = s->w + 2 * s->pw;
    if (s->kh > hp || s->kw > wp) {
        tg_error(fn,
                 "the kernel (%lld, %lld) is larger than the padded input "
                 "(%lld, %lld) of x %s\n"
                 "  rule: kernel <= size + 2 * padding in each spatial dim, "
                 "so that the output is at least 1x1\n"
                 "  hint: use a smaller kernel, or pool an earlier, larger "
                 "feature map",
                 (long long)s->kh, (long long)s->kw, (long long)hp,
                 (long long)wp, tg_shape_str(x, sx));
        return -1;
    }
    s->ho = (hp - s->kh) / s->sh + 1;
    s->wo = (wp - s->kw) / s->sw + 1;
    return 0;
}

/* y's shape: x's with the spatial dims replaced. */
static int out_shape(const tg_tensor *x, const pool_geom *s, int64_t *shape)
{
    for (int d = 0; d < x->ndim; d++)
        shape[d] = x->shape[d];
    shape[x->ndim - 2] = s->ho;
    shape[x->ndim - 1] = s->wo;
    return x->ndim;
}

/* ------------------------------------------------------------ backward */

typedef struct pool_ctx {
    pool_geom geom;
} pool_ctx;

/* The backward of either pool: dx (input 0's shape, float64, which the
 * engine converts to x's dtype) from the double loops above. */
static int pool_grad(tg_node *node, const tg_tensor *g, tg_tensor **grads,
                     bool is_max)
{
    const pool_ctx *c = tg_node_ctx(node);
    int ndim;
    const int64_t *xshape = tg_node_input_shape(node, 0, &ndim);
    tg_tensor *dy = tg_contiguous_as(g, TG_FLOAT64);
    tg_tensor *dx = dy ? tg_zeros(xshape, ndim, TG_FLOAT64) : NULL;
    if (dx && is_max)
        max_pool_backward(tg_data_f64(dy),
                          tg_data_i64(tg_node_saved(node, 0)), &c->geom,
                          tg_data_f64(dx));
    else if (dx)
        avg_pool_backward(tg_data_f64(dy), &c->geom, tg_data_f64(dx));
    tg_release(dy);
    grads[0] = dx; // float64; the engine converts it to x's dtype
    return dx ? 0 : -1;
}

static int max_pool_backward_node(tg_node *node, const tg_tensor *g,
                                  tg_tensor **grads)
{
    return pool_grad(node, g, grads, true);
}

static int avg_pool_backward_node(tg_node *node, const tg_tensor *g,
                                  tg_tensor **grads)
{
    return pool_grad(node, g, grads, false);
}

static const tg_op max_pool_op = {"MaxPool2DWithIndicesBackward0",
                                  max_pool_backward_node, sizeof(pool_ctx)};
static const tg_op avg_pool_op = {"AvgPool2DBackward0",
                                  avg_pool_backward_node, sizeof(pool_ctx)};

/* ------------------------------------------------------ the public ops */

/* Either pool: checks, the kernel on double copies, the node. */
static tg_tensor *pool(const char *fn, const tg_tensor *x,
                       const int64_t kernel[2], const int64_t stride[2],
                       const int64_t padding[2], bool is_max)
{
    if (!x)
        return NULL;
    tg_check_alive(fn, x);
    pool_geom s;
    if (pool_check(fn, x, kernel, stride, padding, &s) < 0)
        return NULL;
    int64_t shape[4];
    int ndim = out_shape(x, &s, shape);
    if (tg_shape_check(fn, shape, ndim) < 0)
        return NULL;
    /* max: in x's dtype; avg: summed in double, rounded once */
    tg_tensor *xd = tg_contiguous_as(x, is_max ? x->dtype : TG_FLOAT64);
    tg_tensor *yd = xd && !is_max ? tg_alloc(shape, ndim, TG_FLOAT64) : NULL;
    tg_tensor *idx = xd && is_max ? tg_alloc(shape, ndim, TG_INT64) : NULL;
    tg_tensor *out = idx || yd ? tg_alloc(shape, ndim, x->dtype) : NULL;
    if (out && is_max && x->dtype == TG_FLOAT32)
        max_pool_forward_f32(tg_data_f32(xd), &s, tg_data_f32(out),
                             tg_data_i64(idx));
    else if (out && is_max)
        max_pool_forward_f64(tg_data_f64(xd), &s, tg_data_f64(out),
                             tg_data_i64(idx));
    else if (out) {
        avg_pool_forward(tg_data_f64(xd), &s, tg_data_f64(yd));
        tg_copy_unchecked(out, yd);
    }
    tg_release(yd);
    tg_release(xd);
    tg_node *node = tg_record(is_max ? &max_pool_op : &avg_pool_op, &out,
                              TG_INPUTS(x));
    if (node) {
        pool_ctx *c = tg_node_ctx(node);
        c->geom = s;
        if (is_max)
            tg_node_save(node, idx); // where each maximum came from
    }
    tg_release(idx);
    return out;
}

tg_tensor *tg_max_pool2d(const tg_tensor *x, const int64_t kernel[2],
                         const int64_t stride[2], const int64_t padding[2])
{
    return pool("tg_max_pool2d", x, kernel, stride, padding, true);
}

tg_tensor *tg_avg_pool2d(const tg_tensor *x, const int64_t kernel[2],
                         const int64_t stride[2], const int64_t padding[2])
{
    return pool("tg_avg_pool2d", x, kernel, stride, padding, false);
}
