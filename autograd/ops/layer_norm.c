/*
 * autograd/ops/layer_norm.c - LayerNorm: the fused op (forward and the
 * closed-form backward of llm.c's layernorm) and the same layer composed
 * from primitive ops, which the tape differentiates.
 *
 * x is seen as a contiguous (M, N) matrix: each of the M leading positions
 * is one row of N = prod(normalized_shape) elements, normalised on its own.
 * The derivation of the backward, step by step, is in docs/normalization.md
 * section 3; the comments here give the result. Each kernel exists twice:
 * the plain loops here, which are the reference and what
 * TG_KERNELS_REFERENCE runs, and fast ones (vectorised, on several
 * threads) in autograd/kernels/layer_norm_fast.c that compute the same
 * values up to rounding. BatchNorm is batch_norm.c.
 */
#include "../internal.h"
#include "../kernels/norm_fast.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------ arguments */

int tg_norm_eps_check(const char *fn, double eps)
{
    if (eps >= 0.0 && !isinf(eps))
        return 0;
    tg_error(fn,
             "eps is %g\n"
             "  rule: eps is a finite number >= 0, added to the variance "
             "inside the sqrt\n"
             "  hint: PyTorch's default is 1e-5",
             eps);
    return -1;
}

int tg_norm_dtype_check(const char *fn, const char *name, const tg_tensor *p,
                        const tg_tensor *x, const char *group)
{
    if (p->dtype == x->dtype)
        return 0;
    if (!tg_dtype_is_float(p->dtype)) { // converting x would not help
        tg_error(fn,
                 "%s is %s but the input is %s\n"
                 "  rule: %s have one float dtype\n"
                 "  hint: make %s with x's dtype: tg_to_dtype(%s, %s)",
                 name, tg_dtype_name(p->dtype), tg_dtype_name(x->dtype),
                 group, name, name,
                 x->dtype == TG_FLOAT32 ? "TG_FLOAT32" : "TG_FLOAT64");
        return -1;
    }
    tg_error(fn,
             "%s is %s but the input is %s\n"
             "  rule: %s have one dtype\n"
             "  hint: convert x with tg_to_dtype(x, %s), or the layer with "
             "tg_module_to_dtype(layer, %s)",
             name, tg_dtype_name(p->dtype), tg_dtype_name(x->dtype), group,
             p->dtype == TG_FLOAT32 ? "TG_FLOAT32" : "TG_FLOAT64",
             x->dtype == TG_FLOAT32 ? "TG_FLOAT32" : "TG_FLOAT64");
    return -1;
}

/* Checks the arguments of every LayerNorm entry point and gives the row
 * count M and the row length N. Returns 0, or -1 (with an error unless x
 * was NULL, which fails silently as everywhere). */
static int layer_norm_check(const char *fn, const tg_tensor *x,
                            const int64_t *normalized_shape, int ndim,
                            const tg_tensor *weight, const tg_tensor *bias,
                            double eps, int64_t *rows, int64_t *cols)
{
    if (!x)
        return -1;
    tg_check_alive(fn, x);
    tg_check_alive(fn, weight);
    tg_check_alive(fn, bias);
    char sx[TG_SHAPE_STR_MAX], sn[TG_SHAPE_STR_MAX], sp[TG_SHAPE_STR_MAX];
    if (!tg_dtype_is_float(x->dtype)) {
        tg_error(fn,
                 "cannot normalise an %s tensor\n"
                 "  rule: LayerNorm needs a float32 or float64 input\n"
                 "  hint: convert first: tg_to_dtype(x, TG_FLOAT32)",
                 tg_dtype_name(x->dtype));
        return -1;
    }
    if (x->ndim == 0) {
        tg_error(fn,
                 "cannot normalise a 0-d tensor\n"
                 "  rule: LayerNorm normalises rows made of the trailing "
                 "dims of x, so x needs at least one dim\n"
                 "  hint: tg_reshape(x, TG_SHAPE(1, -1)) makes one row");
        return -1;
    }
    if (ndim > 0 && !normalized_shape) {
        tg_error(fn,
                 "normalized_shape is NULL but has %d dim%s\n"
                 "  rule: normalized_shape is an array of ndim sizes\n"
                 "  hint: pass it as TG_SHAPE(...)",
                 ndim, ndim == 1 ? "" : "s");
        return -1;
    }
    if (ndim < 1 || ndim > x->ndim) {
        tg_error(fn,
                 "normalized_shape has %d dim%s but the input of shape %s "
                 "has %d\n"
                 "  rule: normalized_shape lists the 1..ndim trailing dims "
                 "of x that make up one row\n"
                 "  hint: for x of shape %s, normalized_shape (%lld,) "
                 "normalises over the last dim",
                 ndim, ndim == 1 ? "" : "s", tg_shape_str(x, sx), x->ndim,
                 sx, (long long)x->shape[x->ndim - 1]);
        return -1;
    }
    int lead = x->ndim - ndim;
    for (int i = 0; i < ndim; i++) {
        if (x->shape[lead + i] == normalized_shape[i])
            continue;
        tg_error(fn,
                 "the input of shape %s does not end with normalized_shape "
                 "%s\n"
                 "  rule: the last %d dim%s of x must equal "
                 "normalized_shape (as torch: input of shape [*, "
                 "normalized_shape])\n"
                 "  hint: to normalise over the last dim of this x, pass "
                 "normalized_shape (%lld,)",
                 tg_shape_str(x, sx),
                 tg_shape_format(normalized_shape, ndim, sn), ndim,
                 ndim == 1 ? "" : "s", (long long)x->shape[x->ndim - 1]);
        return -1;
    }
    const tg_tensor *params[2] = {weight, bias};
    const char *names[2] = {"weight", "bias"};
    for (int k = 0; k < 2; k++) {
        const tg_tensor *p = params[k];
        if (!p)
            continue;
        bool same = p->ndim == ndim;
        for (int i = 0; same && i < ndim; i++)
            same = p->shape[i] == normalized_shape[i];
        if (!same) {
            tg_error(fn,
                     "%s of shape %s does not match normalized_shape %s\n"
                     "  rule: weight and bias have exactly the shape "
                     "normalized_shape (one value per element of a row)\n"
                     "  hint: make it with tg_ones(normalized_shape) / "
                     "tg_zeros(normalized_shape), or pass NULL for none",
                     names[k], tg_shape_str(p, sp),
                     tg_shape_format(normalized_shape, ndim, sn));
            return -1;
        }
        if (tg_norm_dtype_check(fn, names[k], p, x,
                                "weight, bias and x") < 0)
            return -1;
    }
    if (tg_norm_eps_check(fn, eps) < 0)
        return -1;
    *rows = 1;
    *cols = 1;
    for (int i = 0; i < x->ndim; i++)
        *(i < lead ? rows : cols) *= x->shape[i];
    return 0;
}

/* ---------------------------------------------------------------- kernels */

/* One row at a time, in double whatever T is (float32 rows are summed in
 * double: the two-pass variance then keeps its precision even when
 * |mean| >> std, where E[x^2] - E[x]^2 would cancel to noise):
 *   mean = sum(x) / N
 *   var  = sum((x - mean)^2) / N
 *   rstd = 1 / sqrt(var + eps)
 *   y    = (x - mean) * rstd * w + b
 * w and b may be NULL. mean and rstd receive M values each. */
#define LAYER_NORM_FORWARD(NAME, T)                                          \
    static void NAME(const T *x, const T *w, const T *b, T *y,              \
                     double *mean, double *rstd, int64_t M, int64_t N,      \
                     double eps)                                             \
    {                                                                        \
        for (int64_t r = 0; r < M; r++) {                                    \
            const T *xr = x + r * N;                                         \
            T *yr = y + r * N;                                               \
            double sum = 0.0;                                                \
            for (int64_t j = 0; j < N; j++)                                  \
                sum += xr[j];                                                \
            double m = sum / (double)N;                                      \
            double m2 = 0.0;                                                 \
            for (int64_t j = 0; j < N; j++) {                                \
                double d = xr[j] - m;                                        \
                m2 += d * d;                                                 \
            }                                                                \
            double rs = 1.0 / sqrt(m2 / (double)N + eps);                    \
            for (int64_t j = 0; j < N; j++) {                                \
                double v = (xr[j] - m) * rs;                                 \
                if (w)                                                       \
                    v *= w[j];                                               \
                if (b)                                                       \
                    v += b[j];                                               \
                yr[j] = (T)v;                                                \
            }                                                                \
            mean[r] = m;                                                     \
            rstd[r] = rs;                                                    \
        }                                                                    \
    }
LAYER_NORM_FORWARD(layer_norm_forward_f32, float)
LAYER_NORM_FORWARD(layer_norm_forward_f64, double)

/* forward: y = xhat * w + b with xhat = (x - mean) * rstd, per row. With
 * g = dy * w (the gradient reaching xhat), docs/normalization.md §3 gives
 *   dx  = rstd * (g - mean(g) - xhat * mean(g * xhat))
 *   dw += sum over rows of dy * xhat
 *   db += sum over rows of dy
 * xhat is recomputed from the saved mean and rstd (two numbers per row)
 * rather than kept (N numbers per row): llm.c's memory trade-off. dx, dw,
 * db may each be NULL (not needed); dw and db are (N,) double sums. */
#define LAYER_NORM_BACKWARD(NAME, T)                                         \
    static void NAME(const T *dy, const T *x, const T *w,                   \
                     const double *mean, const double *rstd, T *dx,         \
                     double *dw, double *db, int64_t M, int64_t N)          \
    {                                                                        \
        for (int64_t r = 0; r < M; r++) {                                    \
            const T *dyr = dy + r * N, *xr = x + r * N;                      \
            double m = mean[r], rs = rstd[r];                                \
            double g_mean = 0.0, gx_mean = 0.0;                              \
            for (int64_t j = 0; j < N; j++) {                                \
                double xhat = (xr[j] - m) * rs;                              \
                double g = w ? (double)dyr[j] * w[j] : dyr[j];               \
                g_mean += g;                                                 \
                gx_mean += g * xhat;                                         \
                if (dw)                                                      \
                    dw[j] += (double)dyr[j] * xhat;                          \
                if (db)                                                      \
                    db[j] += dyr[j];                                         \
            }                                                                \
            g_mean /= (double)N;                                             \
            gx_mean /= (double)N;                                            \
            if (!dx)                                                         \
                continue;                                                    \
            T *dxr = dx + r * N;                                             \
            for (int64_t j = 0; j < N; j++) {                                \
                double xhat = (xr[j] - m) * rs;                              \
                double g = w ? (double)dyr[j] * w[j] : dyr[j];               \
                dxr[j] = (T)(rs * (g - g_mean - xhat * gx_mean));            \
            }                                                                \
        }                                                                    \
    }
LAYER_NORM_BACKWARD(layer_norm_backward_f32, float)
LAYER_NORM_BACKWARD(layer_norm_backward_f64, double)

/* ----------------------------------------------------------- the fused op */

/* Inputs: 0 x, 1 weight, 2 bias. Saved: 0 x, 1 mean (M,), 2 rstd (M,),
 * both float64, 3 weight when there is one. */
typedef struct layer_norm_ctx {
    int64_t rows, cols; // M, N
    bool has_weight;
} layer_norm_ctx;

static int layer_norm_backward(tg_node *node, const tg_tensor *g,
                               tg_tensor **grads)
{
    const layer_norm_ctx *c = tg_node_ctx(node);
    const tg_tensor *x = tg_node_saved(node, 0);
    const tg_tensor *w = c->has_weight ? tg_node_saved(node, 3) : NULL;
    int wdim = 0, bdim = 0;
    const int64_t *wshape = tg_node_input_shape(node, 1, &wdim);
    const int64_t *bshape = tg_node_input_shape(node, 2, &bdim);
    bool need_w = tg_node_needs_grad(node, 1);
    bool need_b = tg_node_needs_grad(node, 2);
    int rc = -1;
    tg_tensor *dy = tg_contiguous_as(g, x->dtype);
    tg_tensor *xc = tg_contiguous_as(x, x->dtype);
    tg_tensor *wc = w ? tg_contiguous_as(w, x->dtype) : NULL;
    tg_tensor *dx = tg_node_needs_grad(node, 0)
                        ? tg_alloc(x->shape, x->ndim, x->dtype) : NULL;
    /* dw and db are summed over the rows in double, from zero; their
     * memory comes from the thread's free lists (tensor/memory.c), as a
     * training step asks for the same on every step */
    size_t sums = ((size_t)c->cols + 1) * sizeof(double);
    double *dw = need_w ? tg_block_alloc(sums) : NULL;
    double *db = need_b ? tg_block_alloc(sums) : NULL;
    if (dw)
        memset(dw, 0, sums);
    if (db)
        memset(db, 0, sums);
    if (!dy || !xc || (w && !wc) || (tg_node_needs_grad(node, 0) && !dx) ||
        (need_w && !dw) || (need_b && !db)) {
        if (dy && xc)
            tg_error("tg_layer_norm", "out of memory in the backward");
        goto done;
    }
    const double *mean = (const double *)tg_base_ptr(tg_node_saved(node, 1));
    const double *rstd = (const double *)tg_base_ptr(tg_node_saved(node, 2));
    if (!tg_use_reference_kernels() && c->rows > 0 && c->cols > 0) {
        if (tg_layer_norm_backward_fast(x->dtype, tg_base_ptr(dy),
                                     tg_base_ptr(xc),
                                     wc ? tg_base_ptr(wc) : NULL, mean, rstd,
                                     dx ? tg_base_ptr(dx) : NULL, dw, db,
                                     c->rows, c->cols) < 0) {
            tg_error("tg_layer_norm", "out of memory for the backward's scratch rows");
            goto done;
        }
    } else if (x->dtype == TG_FLOAT32)
        layer_norm_backward_f32(
            (const float *)tg_base_ptr(dy), (const float *)tg_base_ptr(xc),
            wc ? (const float *)tg_base_ptr(wc) : NULL, mean, rstd,
            dx ? (float *)tg_base_ptr(dx) : NULL, dw, db, c->rows, c->cols);
    else
        layer_norm_backward_f64(
            (const double *)tg_base_ptr(dy), (const double *)tg_base_ptr(xc),
            wc ? (const double *)tg_base_ptr(wc) : NULL, mean, rstd,
            dx ? (double *)tg_base_ptr(dx) : NULL, dw, db, c->rows, c->cols);
    grads[0] = dx;
    dx = NULL;
    if (need_w && !(grads[1] = tg_alloc_from_f64(dw, wshape, wdim, x->dtype)))
        goto done;
    if (need_b && !(grads[2] = tg_alloc_from_f64(db, bshape, bdim, x->dtype)))
        goto done;
    rc = 0;
done:
    tg_block_free(db, sums);
    tg_block_free(dw, sums);
    tg_release(dx);
    tg_release(wc);
    tg_release(xc);
    tg_release(dy);
    return rc;
}
static const tg_op layer_norm_op = {"NativeLayerNormBackward0",
                                    layer_norm_backward,
                                    sizeof(layer_norm_ctx)};

/* The M per-row statistics as x's leading dims followed by ndim ones, in
 * x's dtype (torch.native_layer_norm's mean and rstd). */
static tg_tensor *row_stats(const tg_tensor *x, int ndim, const tg_tensor *s)
{
    int64_t shape[TG_MAX_DIMS];
    for (int i = 0; i < x->ndim; i++)
        shape[i] = i < x->ndim - ndim ? x->shape[i] : 1;
    return tg_alloc_from_f64((const double *)tg_base_ptr(s), shape, x->ndim,
                             x->dtype);
}

tg_tensor *tg_layer_norm_ex(const tg_tensor *x,
                            const int64_t *normalized_shape, int ndim,
                            const tg_tensor *weight, const tg_tensor *bias,
                            double eps, tg_tensor **mean, tg_tensor **rstd)
{
    if (mean)
        *mean = NULL;
    if (rstd)
        *rstd = NULL;
    int64_t M, N;
    if (layer_norm_check("tg_layer_norm", x, normalized_shape, ndim, weight,
                         bias, eps, &M, &N) < 0)
        return NULL;
    const int64_t stat_shape[1] = {M};
    tg_tensor *xc = tg_contiguous_as(x, x->dtype);
    tg_tensor *wc = weight ? tg_contiguous_as(weight, x->dtype) : NULL;
    tg_tensor *bc = bias ? tg_contiguous_as(bias, x->dtype) : NULL;
    tg_tensor *mu = tg_alloc(stat_shape, 1, TG_FLOAT64);   // (M,)
    tg_tensor *rs = tg_alloc(stat_shape, 1, TG_FLOAT64);   // (M,)
    tg_tensor *out = tg_alloc(x->shape, x->ndim, x->dtype);
    if (!xc || (weight && !wc) || (bias && !bc) || !mu || !rs || !out) {
        tg_release(out);
        out = NULL;
        goto done;
    }
    double *pm = (double *)tg_base_ptr(mu), *pr = (double *)tg_base_ptr(rs);
    if (!tg_use_reference_kernels() && N > 0) {
        if (tg_layer_norm_forward_fast(
                x->dtype, tg_base_ptr(xc), wc ? tg_base_ptr(wc) : NULL,
                bc ? tg_base_ptr(bc) : NULL, tg_base_ptr(out), pm, pr, M, N,
                eps) < 0) {
            tg_error("tg_layer_norm", "out of memory for the forward's scratch rows");
            tg_release(out);
            out = NULL;
            goto done;
        }
    } else if (x->dtype == TG_FLOAT32)
        layer_norm_forward_f32(
            (const float *)tg_base_ptr(xc),
            wc ? (const float *)tg_base_ptr(wc) : NULL,
            bc ? (const float *)tg_base_ptr(bc) : NULL,
            (float *)tg_base_ptr(out), pm, pr, N ? M : 0, N, eps);
    else
        layer_norm_forward_f64(
            (const double *)tg_base_ptr(xc),
            wc ? (const double *)tg_base_ptr(wc) : NULL,
            bc ? (const double *)tg_base_ptr(bc) : NULL,
            (double *)tg_base_ptr(out), pm, pr, N ? M : 0, N, eps);
    if (N == 0) { // rows of no elements: mean 0 and rstd NaN, as PyTorch
        for (int64_t r = 0; r < M; r++) {
            pm[r] = 0.0;
            pr[r] = NAN;
        }
    }
    if (mean && !(*mean = row_stats(x, ndim, mu)))
        goto fail;
    if (rstd && !(*rstd = row_stats(x, ndim, rs)))
        goto fail;
    tg_node *node = tg_record(&layer_norm_op, &out, TG_INPUTS(x, weight, bias));
    if (node) {
        layer_norm_ctx *c = tg_node_ctx(node);
        c->rows = M;
        c->cols = N;
        c->has_weight = weight != NULL;
        tg_node_save(node, x);
        tg_node_save(node, mu);
        tg_node_save(node, rs);
        if (weight)
            tg_node_save(node, weight);
    }
    if (out) // recording can fail (memory, anomaly mode): then so do the stats
        goto done;
fail:
    tg_release(out);
    out = NULL;
    if (mean) {
        tg_release(*mean);
        *mean = NULL;
    }
    if (rstd) {
        tg_release(*rstd);
        *rstd = NULL;
    }
done:
    tg_release(rs);
    tg_release(mu);
    tg_release(bc);
    tg_release(wc);
    tg_release(xc);
    return out;
}

tg_tensor *tg_layer_norm(const tg_tensor *x, const int64_t *normalized_shape,
                         int ndim, const tg_tensor *weight,
                         const tg_tensor *bias, double eps)
{
    return tg_layer_norm_ex(x, normalized_shape, ndim, weight, bias, eps,
                            NULL, NULL);
}

/* ---------------------------------------------------- the composed form */

/* The same layer in primitive ops, one line per formula; the tape records
 * each op and differentiates the whole chain. It is the plain reference
 * the fused op is tested against. (Being plain, it keeps x - mean in x's
 * dtype: for float32 rows with |mean| >> std the fused op is the accurate
 * one.) */
tg_tensor *tg_layer_norm_composed(const tg_tensor *x,
                                  const int64_t *normalized_shape, int ndim,
                                  const tg_tensor *weight,
                                  const tg_tensor *bias, double eps)
{
    int64_t M, N;
    if (layer_norm_check("tg_layer_norm_composed", x, normalized_shape,
                         ndim, weight, bias, eps, &M, &N) < 0)
        return NULL;
    int dims[TG_MAX_DIMS]; // the last ndim dims: -ndim .. -1
    for (int i = 0; i < ndim; i++)
        dims[i] = i - ndim;
    tg_tensor *mean = tg_mean(x, dims, ndim, true);      // (M..., 1...)
    tg_tensor *xc = tg_sub(x, mean);                     // x - mean
    tg_tensor *sq = tg_mul(xc, xc);                      // (x - mean)^2
    tg_tensor *var = tg_mean(sq, dims, ndim, true);      // biased variance
    tg_tensor *var_eps = tg_add_scalar(var, eps);
    tg_tensor *rstd = tg_rsqrt(var_eps);                 // 1/sqrt(var+eps)
    tg_tensor *xhat = tg_mul(xc, rstd);
    tg_tensor *scaled = weight ? tg_mul(xhat, weight) : tg_retain(xhat);
    tg_tensor *out = bias ? tg_add(scaled, bias) : tg_retain(scaled);
    tg_release(scaled);
    tg_release(xhat);
    tg_release(rstd);
    tg_release(var_eps);
    tg_release(var);
    tg_release(sq);
    tg_release(xc);
    tg_release(mean);
    return out;
}
