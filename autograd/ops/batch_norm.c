/*
 * autograd/ops/batch_norm.c - BatchNorm: the fused op (forward, running
 * statistics, and the closed-form training backward of makemore part 4)
 * and the same layer composed from primitive ops, step by step.
 *
 * x is (N, C, ...); channel is dim 1. x is seen as a contiguous (N, C, S)
 * block with S = prod(shape[2:]), and each channel's statistics run over
 * its n = N * S values. The derivation of the backward is in
 * docs/normalization.md section 4. The kernels here are the plain
 * reference loops (what TG_KERNELS_REFERENCE runs); the fast ones, which
 * compute the same values up to rounding, are in
 * autograd/kernels/batch_norm_fast.c. LayerNorm is layer_norm.c; the modules
 * (BatchNorm1d, BatchNorm2d, num_batches_tracked, momentum None) are in
 * nn/norm.c.
 */
#include "../internal.h"
#include "../kernels/norm_fast.h"

#include <math.h>
#include <stdlib.h>

tg_batch_norm_options tg_batch_norm_defaults(void)
{
    return (tg_batch_norm_options){
        .eval = false, .momentum = 0.1, .eps = 1e-5, .correction = 0};
}

/* opts with every field left 0 replaced by its default; NULL: the
 * defaults. */
tg_batch_norm_options tg_batch_norm_options_resolve(const tg_batch_norm_options *opts)
{
    tg_batch_norm_options d = tg_batch_norm_defaults();
    if (!opts)
        return d;
    tg_batch_norm_options o = *opts;
    o.momentum = tg_option_or(o.momentum, d.momentum);
    o.eps = tg_option_or(o.eps, d.eps);
    return o;
}

/* ------------------------------------------------------------ arguments */

/* Checks that p (running_mean, weight, ...) is a (C,) tensor of x's dtype. */
static int channel_param_check(const char *fn, const char *name,
                               const tg_tensor *p, const tg_tensor *x)
{
    char sx[TG_SHAPE_STR_MAX], sp[TG_SHAPE_STR_MAX];
    int64_t C = x->shape[1];
    if (p->ndim != 1 || p->shape[0] != C) {
        tg_error(fn,
                 "%s of shape %s does not match the %lld channels of the "
                 "input of shape %s\n"
                 "  rule: dim 1 of x is the channel dim; running_mean, "
                 "running_var, weight and bias hold one value per channel, "
                 "shape (C,)\n"
                 "  hint: make the layer with num_features = x.shape[1] = "
                 "%lld",
                 name, tg_shape_str(p, sp), (long long)C,
                 tg_shape_str(x, sx), (long long)C);
        return -1;
    }
    return tg_norm_dtype_check(fn, name, p, x,
                               "the input, running statistics, weight and "
                               "bias");
}

/* Checks momentum, eps and correction (shared with the modules, which
 * check at construction). Returns 0, or -1 with an error naming fn. */
int tg_batch_norm_options_check(const char *fn,
                                const tg_batch_norm_options *o)
{
    if (!(o->momentum >= 0.0 && o->momentum <= 1.0)) {
        tg_error(fn,
                 "momentum is %g\n"
                 "  rule: momentum is in [0, 1]: running = (1 - momentum) "
                 "* running + momentum * batch\n"
                 "  hint: PyTorch's default is 0.1",
                 o->momentum);
        return -1;
    }
    if (tg_norm_eps_check(fn, o->eps) < 0)
        return -1;
    if (o->correction != 0 && o->correction != 1) {
        tg_error(fn,
                 "correction is %lld\n"
                 "  rule: the training variance divides by n - correction "
                 "with correction 0 (biased, PyTorch) or 1 (unbiased, "
                 "makemore part 4)\n"
                 "  hint: use 0 unless you are following makemore part 4",
                 (long long)o->correction);
        return -1;
    }
    return 0;
}

/* Checks the arguments of every BatchNorm entry point and fills the
 * layout. Returns 0, or -1 (with an error unless x was NULL). */
static int batch_norm_check(const char *fn, const tg_tensor *x,
                            const tg_tensor *running_mean,
                            const tg_tensor *running_var,
                            const tg_tensor *weight, const tg_tensor *bias,
                            const tg_batch_norm_options *o, bn_layout *l)
{
    if (!x)
        return -1;
    tg_check_alive(fn, x);
    tg_check_alive(fn, running_mean);
    tg_check_alive(fn, running_var);
    tg_check_alive(fn, weight);
    tg_check_alive(fn, bias);
    char sx[TG_SHAPE_STR_MAX];
    if (!tg_dtype_is_float(x->dtype)) {
        tg_error(fn,
                 "cannot normalise an %s tensor\n"
                 "  rule: BatchNorm needs a float32 or float64 input\n"
                 "  hint: convert first: tg_to_dtype(x, TG_FLOAT32)",
                 tg_dtype_name(x->dtype));
        return -1;
    }
    if (x->ndim < 2) {
        tg_error(fn,
                 "the input of shape %s has %d dim%s\n"
                 "  rule: BatchNorm needs (N, C) or (N, C, ...): a batch "
                 "of N samples with C channels in dim 1\n"
                 "  hint: a batch of feature vectors is (N, C); LayerNorm "
                 "normalises a single sample",
                 tg_shape_str(x, sx), x->ndim, x->ndim == 1 ? "" : "s");
        return -1;
    }
    if (tg_batch_norm_options_check(fn, o) < 0)
        return -1;
    if ((running_mean == NULL) != (running_var == NULL)) {
        tg_error(fn,
                 "running_%s is given but running_%s is NULL\n"
                 "  rule: pass both running statistics or neither\n"
                 "  hint: running_mean starts as zeros (C,), running_var "
                 "as ones (C,)",
                 running_mean ? "mean" : "var", running_mean ? "var" : "mean");
        return -1;
    }
    const tg_tensor *params[4] = {running_mean, running_var, weight, bias};
    const char *names[4] = {"running_mean", "running_var", "weight", "bias"};
    for (int k = 0; k < 4; k++) {
        if (params[k] && channel_param_check(fn, names[k], params[k], x) < 0)
            return -1;
        if (k < 2 && params[k] && params[k]->requires_grad) {
            tg_error(fn,
                     "%s requires grad\n"
                     "  rule: running statistics are buffers updated in "
                     "place, not parameters; no gradient flows into them\n"
                     "  hint: create them without tg_set_requires_grad",
                     names[k]);
            return -1;
        }
    }
    l->N = x->shape[0];
    l->C = x->shape[1];
    l->S = 1;
    for (int i = 2; i < x->ndim; i++)
        l->S *= x->shape[i];
    l->n = l->N * l->S;
    if (o->eval && !running_mean) {
        tg_error(fn,
                 "eval mode needs running statistics, but running_mean "
                 "and running_var are NULL\n"
                 "  rule: in eval BatchNorm normalises with the running "
                 "mean and variance collected in training\n"
                 "  hint: pass them, or train (training = true) to use "
                 "batch statistics");
        return -1;
    }
    if (!o->eval && l->n == 1) {
        tg_error(fn,
                 "expected more than 1 value per channel when training, "
                 "got input of shape %s\n"
                 "  rule: each channel's variance is taken over its n = "
                 "N * (product of dims after C) = %lld values, and one "
                 "value has no spread\n"
                 "  hint: use a batch of at least 2 samples, or eval mode "
                 "to normalise with the running statistics",
                 tg_shape_str(x, sx), (long long)l->n);
        return -1;
    }
    return 0;
}

/* ------------------------------------------------------ running statistics */

/* Both running statistics moved towards the batch's, in place and without
 * a gradient:
 *   running = (1 - momentum) * running + momentum * batch
 * element by element, rounded as the tensor ops would: running *
 * (T)(1 - momentum) in T, the running statistics' dtype; batch * momentum
 * in double; their sum in double, rounded once to T. mean and var are the
 * batch's (C,) mean and unbiased variance, in double. Shared by the fused
 * op (both kernels) and the composed form. Both new statistics are
 * computed before either is written, so running out of memory leaves the
 * two as they were. Returns 0 or -1. */
static int running_update(tg_tensor *running_mean, const double *mean,
                          tg_tensor *running_var, const double *var,
                          double momentum)
{
    const int64_t C = running_mean->numel;
    tg_tensor *next = tg_alloc(TG_SHAPE(2, C), TG_FLOAT64); // mean; var
    if (!next)
        return -1;
    double *p = (double *)tg_base_ptr(next);
    if (tg_to_f64_array(running_mean, p) < 0 ||
        tg_to_f64_array(running_var, p + C) < 0) {
        tg_release(next);
        return -1;
    }
    const bool f32 = running_mean->dtype == TG_FLOAT32;
    const float keep32 = (float)(1.0 - momentum);
    const double keep64 = 1.0 - momentum;
    for (int64_t i = 0; i < 2 * C; i++) {
        double batch = i < C ? mean[i] : var[i - C];
        double kept = f32 ? (double)((float)p[i] * keep32) : p[i] * keep64;
        double sum = kept + batch * momentum;
        p[i] = f32 ? (double)(float)sum : sum;
    }
    tg_no_grad_begin();
    tg_tensor *m = tg_select(next, 0, 0), *v = tg_select(next, 0, 1);
    int rc = m && v && tg_copy_(running_mean, m) == 0 &&
                     tg_copy_(running_var, v) == 0
                 ? 0
                 : -1;
    tg_no_grad_end();
    tg_release(v);
    tg_release(m);
    tg_release(next);
    return rc;
}

/* ---------------------------------------------------------------- kernels */

/* 1 / sqrt(m2 / (n - correction) + eps), 0 when that is 1 / 0 (as the
 * reference: a constant channel with eps 0 gives y = bias). */
double tg_bn_invstd(double m2, int64_t n, int64_t correction, double eps)
{
    double v = m2 / (double)(n - correction) + eps;
    return v == 0.0 ? 0.0 : 1.0 / sqrt(v);
}

/* Per channel c, in double whatever T is (two passes, so the variance keeps
 * its precision when |mean| >> std):
 *   mean[c] = sum(x_c) / n
 *   m2[c]   = sum((x_c - mean[c])^2)          (the variance times n)
 * x is a contiguous (N, C, S) block. */
#define BATCH_NORM_STATS(NAME, T)                                            \
    static void NAME(const T *x, double *mean, double *m2,                  \
                     const bn_layout *l)                                     \
    {                                                                        \
        for (int64_t c = 0; c < l->C; c++)                                   \
            mean[c] = m2[c] = 0.0;                                           \
        for (int64_t i = 0; i < l->N; i++)                                   \
            for (int64_t c = 0; c < l->C; c++) {                             \
                const T *xs = x + (i * l->C + c) * l->S;                     \
                for (int64_t s = 0; s < l->S; s++)                           \
                    mean[c] += xs[s];                                        \
            }                                                                \
        for (int64_t c = 0; c < l->C; c++)                                   \
            mean[c] /= (double)l->n;                                         \
        for (int64_t i = 0; i < l->N; i++)                                   \
            for (int64_t c = 0; c < l->C; c++) {                             \
                const T *xs = x + (i * l->C + c) * l->S;                     \
                for (int64_t s = 0; s < l->S; s++) {                         \
                    double d = xs[s] - mean[c];                              \
                    m2[c] += d * d;                                          \
                }                                                            \
            }                                                                \
    }
BATCH_NORM_STATS(batch_norm_stats_f32, float)
BATCH_NORM_STATS(batch_norm_stats_f64, double)

/* y = (x - mean[c]) * invstd[c] * w[c] + b[c]; w, b may be NULL. */
#define BATCH_NORM_APPLY(NAME, T)                                            \
    static void NAME(const T *x, const T *w, const T *b, T *y,              \
                     const double *mean, const double *invstd,              \
                     const bn_layout *l)                                     \
    {                                                                        \
        for (int64_t i = 0; i < l->N; i++)                                   \
            for (int64_t c = 0; c < l->C; c++) {                             \
                int64_t first = (i * l->C + c) * l->S;                       \
                double scale = invstd[c] * (w ? (double)w[c] : 1.0);         \
                double shift = b ? (double)b[c] : 0.0;                       \
                for (int64_t s = 0; s < l->S; s++)                           \
                    y[first + s] =                                           \
                        (T)((x[first + s] - mean[c]) * scale + shift);       \
            }                                                                \
    }
BATCH_NORM_APPLY(batch_norm_apply_f32, float)
BATCH_NORM_APPLY(batch_norm_apply_f64, double)

/* forward (training): y = xhat * w + b, xhat = (x - mean) * invstd, with
 * the batch's own mean and invstd = 1 / sqrt(sum((x - mean)^2) / (n - k)
 * + eps), k the correction. docs/normalization.md §4 gives, per channel,
 *   dx  = w * invstd / n * (n * dy - sum(dy) - n/(n-k) * xhat * sum(dy * xhat))
 *   dw += sum(dy * xhat)
 *   db += sum(dy)
 * (k = 0: makemore part 4's closed form for PyTorch's biased variance;
 * k = 1: the lecture's unbiased one, with the extra factor n / (n - 1)).
 * forward (eval): mean and invstd are constants from the running
 * statistics, so y is affine in x and dx = dy * w * invstd.
 * sdy and sdyx receive sum(dy) and sum(dy * xhat) per channel (C,); dx may
 * be NULL. */
#define BATCH_NORM_BACKWARD(NAME, T)                                         \
    static void NAME(const T *dy, const T *x, const T *w,                   \
                     const double *mean, const double *invstd, T *dx,       \
                     double *sdy, double *sdyx, bool training,              \
                     int64_t correction, const bn_layout *l)                 \
    {                                                                        \
        for (int64_t c = 0; c < l->C; c++)                                   \
            sdy[c] = sdyx[c] = 0.0;                                          \
        for (int64_t i = 0; i < l->N; i++)                                   \
            for (int64_t c = 0; c < l->C; c++) {                             \
                int64_t first = (i * l->C + c) * l->S;                       \
                for (int64_t s = 0; s < l->S; s++) {                         \
                    double xhat = (x[first + s] - mean[c]) * invstd[c];      \
                    sdy[c] += dy[first + s];                                 \
                    sdyx[c] += (double)dy[first + s] * xhat;                 \
                }                                                            \
            }                                                                \
        if (!dx)                                                             \
            return;                                                          \
        double n = (double)l->n;                                             \
        double unbias = n / (n - (double)correction); /* n/(n-k) */          \
        for (int64_t i = 0; i < l->N; i++)                                   \
            for (int64_t c = 0; c < l->C; c++) {                             \
                int64_t first = (i * l->C + c) * l->S;                       \
                double scale = invstd[c] * (w ? (double)w[c] : 1.0);         \
                for (int64_t s = 0; s < l->S; s++) {                         \
                    double g = dy[first + s];                                \
                    if (!training) {                                         \
                        dx[first + s] = (T)(g * scale);                      \
                        continue;                                            \
                    }                                                        \
                    double xhat = (x[first + s] - mean[c]) * invstd[c];      \
                    dx[first + s] = (T)(scale / n *                          \
                                        (n * g - sdy[c] -                    \
                                         unbias * xhat * sdyx[c]));          \
                }                                                            \
            }                                                                \
    }
BATCH_NORM_BACKWARD(batch_norm_backward_f32, float)
BATCH_NORM_BACKWARD(batch_norm_backward_f64, double)

/* ----------------------------------------------------------- the fused op */

/* Inputs: 0 x, 1 weight, 2 bias (the running statistics are not inputs:
 * no gradient flows into them). Saved: 0 x, 1 mean (C,), 2 invstd (C,),
 * both float64, 3 weight when there is one. */
typedef struct batch_norm_ctx {
    bn_layout layout;
    bool training;
    int64_t correction;
    bool has_weight;
} batch_norm_ctx;

static int batch_norm_backward(tg_node *node, const tg_tensor *g,
                               tg_tensor **grads)
{
    const batch_norm_ctx *c = tg_node_ctx(node);
    const bn_layout *l = &c->layout;
    const tg_tensor *x = tg_node_saved(node, 0);
    const tg_tensor *w = c->has_weight ? tg_node_saved(node, 3) : NULL;
    const double *mean = (const double *)tg_base_ptr(tg_node_saved(node, 1));
    const double *invstd =
        (const double *)tg_base_ptr(tg_node_saved(node, 2));
    bool need_x = tg_node_needs_grad(node, 0);
    bool fast = !tg_use_reference_kernels() && l->n * l->C > 0;
    int rc = -1;
    tg_tensor *dy = tg_contiguous_as(g, x->dtype);
    tg_tensor *xc = tg_contiguous_as(x, x->dtype);
    tg_tensor *wc = w ? tg_contiguous_as(w, x->dtype) : NULL;
    tg_tensor *dx = need_x ? tg_alloc(x->shape, x->ndim, x->dtype) : NULL;
    size_t nsums = 2 * ((size_t)l->C + 1) + (fast ? tg_bn_scratch_doubles(l) : 0);
    double *sums = tg_malloc(nsums * sizeof *sums);
    if (!dy || !xc || (w && !wc) || (need_x && !dx) || !sums) {
        if (dy && xc)
            tg_error("tg_batch_norm", "out of memory in the backward");
        goto done;
    }
    double *sdy = sums, *sdyx = sums + l->C + 1; // (C,) each
    double *scratch = sums + 2 * (l->C + 1);
    if (fast && x->dtype == TG_FLOAT32)
        tg_bn_fast_backward_f32(
            (const float *)tg_base_ptr(dy), (const float *)tg_base_ptr(xc),
            wc ? (const float *)tg_base_ptr(wc) : NULL, mean, invstd,
            dx ? (float *)tg_base_ptr(dx) : NULL, sdy, sdyx, c->training,
            c->correction, l, scratch);
    else if (fast)
        tg_bn_fast_backward_f64(
            (const double *)tg_base_ptr(dy), (const double *)tg_base_ptr(xc),
            wc ? (const double *)tg_base_ptr(wc) : NULL, mean, invstd,
            dx ? (double *)tg_base_ptr(dx) : NULL, sdy, sdyx, c->training,
            c->correction, l, scratch);
    else if (x->dtype == TG_FLOAT32)
        batch_norm_backward_f32(
            (const float *)tg_base_ptr(dy), (const float *)tg_base_ptr(xc),
            wc ? (const float *)tg_base_ptr(wc) : NULL, mean, invstd,
            dx ? (float *)tg_base_ptr(dx) : NULL, sdy, sdyx, c->training,
            c->correction, l);
    else
        batch_norm_backward_f64(
            (const double *)tg_base_ptr(dy), (const double *)tg_base_ptr(xc),
            wc ? (const double *)tg_base_ptr(wc) : NULL, mean, invstd,
            dx ? (double *)tg_base_ptr(dx) : NULL, sdy, sdyx, c->training,
            c->correction, l);
    grads[0] = dx;
    dx = NULL;
    /* dw = sum(dy * xhat), db = sum(dy), per channel */
    if (tg_node_needs_grad(node, 1) &&
        !(grads[1] = tg_alloc_from_f64(sdyx, &l->C, 1, x->dtype)))
        goto done;
    if (tg_node_needs_grad(node, 2) &&
        !(grads[2] = tg_alloc_from_f64(sdy, &l->C, 1, x->dtype)))
        goto done;
    rc = 0;
done:
    free(sums);
    tg_release(dx);
    tg_release(wc);
    tg_release(xc);
    tg_release(dy);
    return rc;
}
static const tg_op batch_norm_op = {"NativeBatchNormBackward0",
                                    batch_norm_backward,
                                    sizeof(batch_norm_ctx)};

tg_tensor *tg_batch_norm_ex(const tg_tensor *x, tg_tensor *running_mean,
                            tg_tensor *running_var, const tg_tensor *weight,
                            const tg_tensor *bias,
                            const tg_batch_norm_options *opts,
                            tg_tensor **mean, tg_tensor **invstd)
{
    if (mean)
        *mean = NULL;
    if (invstd)
        *invstd = NULL;
    tg_batch_norm_options o = tg_batch_norm_options_resolve(opts);
    bn_layout l;
    if (batch_norm_check("tg_batch_norm", x, running_mean, running_var,
                         weight, bias, &o, &l) < 0)
        return NULL;
    const int64_t C = l.C;
    /* The fast kernels need no tensor for the sums of squares: they keep
     * them in their scratch. */
    bool fast = !tg_use_reference_kernels() && l.n * l.C > 0;
    tg_tensor *xc = tg_contiguous_as(x, x->dtype);
    tg_tensor *wc = weight ? tg_contiguous_as(weight, x->dtype) : NULL;
    tg_tensor *bc = bias ? tg_contiguous_as(bias, x->dtype) : NULL;
    tg_tensor *mu = tg_alloc(&C, 1, TG_FLOAT64);   // (C,) mean used
    tg_tensor *is = tg_alloc(&C, 1, TG_FLOAT64);   // (C,) invstd used
    tg_tensor *m2 = fast ? NULL : tg_alloc(&C, 1, TG_FLOAT64); // (C,)
    tg_tensor *out = tg_alloc(x->shape, x->ndim, x->dtype);
    double *scratch = // (C,) sums of squares, then the kernels' scratch
        fast && out ? tg_malloc(((size_t)C + tg_bn_scratch_doubles(&l)) *
                                sizeof *scratch)
                    : NULL;
    if (!xc || (weight && !wc) || (bias && !bc) || !mu || !is ||
        (fast ? !scratch : !m2) || !out) {
        if (fast && !scratch && xc && (!weight || wc) && (!bias || bc) &&
            mu && is && out)
            tg_error("tg_batch_norm",
                     "out of memory for the forward's scratch");
        goto fail;
    }
    double *pm = (double *)tg_base_ptr(mu), *pi = (double *)tg_base_ptr(is);
    double *pm2 = fast ? scratch : (double *)tg_base_ptr(m2);
    if (o.eval) {
        if (tg_to_f64_array(running_mean, pm) < 0 ||
            tg_to_f64_array(running_var, pi) < 0)
            goto fail;
        for (int64_t c = 0; c < C; c++)
            pi[c] = 1.0 / sqrt(pi[c] + o.eps);
    }
    if (fast && x->dtype == TG_FLOAT32) {
        tg_bn_fast_forward_f32((const float *)tg_base_ptr(xc),
                            wc ? (const float *)tg_base_ptr(wc) : NULL,
                            bc ? (const float *)tg_base_ptr(bc) : NULL,
                            (float *)tg_base_ptr(out), pm, pi, pm2, &o, &l,
                            scratch + C);
    } else if (fast) {
        tg_bn_fast_forward_f64((const double *)tg_base_ptr(xc),
                            wc ? (const double *)tg_base_ptr(wc) : NULL,
                            bc ? (const double *)tg_base_ptr(bc) : NULL,
                            (double *)tg_base_ptr(out), pm, pi, pm2, &o, &l,
                            scratch + C);
    } else {
        if (!o.eval) {
            if (x->dtype == TG_FLOAT32)
                batch_norm_stats_f32((const float *)tg_base_ptr(xc), pm, pm2,
                                     &l);
            else
                batch_norm_stats_f64((const double *)tg_base_ptr(xc), pm,
                                     pm2, &l);
            /* A constant channel with eps 0 has var + eps = 0: PyTorch
             * then sets invstd to 0 (y = bias) rather than inf (y =
             * NaN). */
            for (int64_t c = 0; c < C; c++)
                pi[c] = tg_bn_invstd(pm2[c], l.n, o.correction, o.eps);
        }
        if (x->dtype == TG_FLOAT32)
            batch_norm_apply_f32((const float *)tg_base_ptr(xc),
                                 wc ? (const float *)tg_base_ptr(wc) : NULL,
                                 bc ? (const float *)tg_base_ptr(bc) : NULL,
                                 (float *)tg_base_ptr(out), pm, pi, &l);
        else
            batch_norm_apply_f64(
                (const double *)tg_base_ptr(xc),
                wc ? (const double *)tg_base_ptr(wc) : NULL,
                bc ? (const double *)tg_base_ptr(bc) : NULL,
                (double *)tg_base_ptr(out), pm, pi, &l);
    }
    if (mean && !(*mean = tg_alloc_from_f64(pm, &C, 1, x->dtype)))
        goto fail;
    if (invstd && !(*invstd = tg_alloc_from_f64(pi, &C, 1, x->dtype)))
        goto fail;
    tg_node *node =
        tg_record(&batch_norm_op, &out, TG_INPUTS(x, weight, bias));
    if (node) {
        batch_norm_ctx *c = tg_node_ctx(node);
        c->layout = l;
        c->training = !o.eval;
        c->correction = o.correction;
        c->has_weight = weight != NULL;
        /* A tensor that could not be saved (out of memory, reported)
         * fails the op now, before the running statistics move, rather
         * than its backward later. */
        if (tg_node_save(node, x) < 0 || tg_node_save(node, mu) < 0 ||
            tg_node_save(node, is) < 0 ||
            (weight && tg_node_save(node, weight) < 0))
            goto fail;
    }
    /* Last: when anything before fails, the running statistics have not
     * moved. An empty batch (n = 0) has no statistics and leaves them
     * alone, as PyTorch. */
    if (out && !o.eval && running_mean && l.n > 0) {
        for (int64_t c = 0; c < C; c++) // the running variance is unbiased
            pm2[c] /= (double)(l.n - 1);
        if (running_update(running_mean, pm, running_var, pm2,
                           o.momentum) < 0)
            goto fail;
    }
    if (out)
        goto done;
fail:
    tg_release(out);
    out = NULL;
    if (mean) {
        tg_release(*mean);
        *mean = NULL;
    }
    if (invstd) {
        tg_release(*invstd);
        *invstd = NULL;
    }
done:
    free(scratch);
    tg_release(m2);
    tg_release(is);
    tg_release(mu);
    tg_release(bc);
    tg_release(wc);
    tg_release(xc);
    return out;
}

tg_tensor *tg_batch_norm(const tg_tensor *x, tg_tensor *running_mean,
                         tg_tensor *running_var, const tg_tensor *weight,
                         const tg_tensor *bias, bool training,
                         double momentum, double eps)
{
    /* plain arguments are literal values: eps 0 means no eps */
    tg_batch_norm_options o = {.eval = !training,
                               .momentum = tg_option_literal(momentum),
                               .eps = tg_option_literal(eps),
                               .correction = 0};
    return tg_batch_norm_ex(x, running_mean, running_var, weight, bias, &o,
                            NULL, NULL);
}

/* ---------------------------------------------------- the composed form */

/* makemore part 4's forward, one primitive op per line, with its names:
 *   bnmeani   = mean(x) per channel                         (1, C, 1...)
 *   bndiff    = x - bnmeani
 *   bndiff2   = bndiff^2
 *   bnvar     = sum(bndiff2) / (n - correction)
 *   bnvar_inv = (bnvar + eps)^-1/2
 *   bnraw     = bndiff * bnvar_inv
 *   out       = w * bnraw + b
 * In eval, bnmeani and bnvar are the running statistics. The tape
 * differentiates the chain; this is the reference for the fused op.
 * (Being plain, it keeps x - mean in x's dtype: for float32 channels with
 * |mean| >> std the fused op is the accurate one.) */
tg_tensor *tg_batch_norm_composed(const tg_tensor *x,
                                  tg_tensor *running_mean,
                                  tg_tensor *running_var,
                                  const tg_tensor *weight,
                                  const tg_tensor *bias,
                                  const tg_batch_norm_options *opts)
{
    tg_batch_norm_options o = tg_batch_norm_options_resolve(opts);
    bn_layout l;
    if (batch_norm_check("tg_batch_norm_composed", x, running_mean,
                         running_var, weight, bias, &o, &l) < 0)
        return NULL;
    int dims[TG_MAX_DIMS], nd = 0; // every dim but the channel's
    int64_t cshape[TG_MAX_DIMS];   // (1, C, 1, ...): broadcasts against x
    for (int i = 0; i < x->ndim; i++) {
        if (i != 1)
            dims[nd++] = i;
        cshape[i] = i == 1 ? l.C : 1;
    }
    tg_tensor *bnmeani, *bnvar, *bndiff, *bndiff2 = NULL, *bnsum2 = NULL;
    if (!o.eval) {
        bnmeani = tg_mean(x, dims, nd, true);
        bndiff = tg_sub(x, bnmeani);
        bndiff2 = tg_mul(bndiff, bndiff);
        bnsum2 = tg_sum(bndiff2, dims, nd, true);
        bnvar = tg_div_scalar(bnsum2, (double)(l.n - o.correction));
    } else {
        bnmeani = tg_reshape(running_mean, cshape, x->ndim);
        bnvar = tg_reshape(running_var, cshape, x->ndim);
        bndiff = tg_sub(x, bnmeani);
    }
    tg_tensor *bnvar_eps = tg_add_scalar(bnvar, o.eps);
    tg_tensor *bnvar_inv = tg_rsqrt(bnvar_eps);
    tg_tensor *bnraw = tg_mul(bndiff, bnvar_inv);
    tg_tensor *w = weight ? tg_reshape(weight, cshape, x->ndim) : NULL;
    tg_tensor *b = bias ? tg_reshape(bias, cshape, x->ndim) : NULL;
    tg_tensor *scaled = w ? tg_mul(w, bnraw) : tg_retain(bnraw);
    tg_tensor *out = b ? tg_add(scaled, b) : tg_retain(scaled);
    if (out && !o.eval && running_mean && l.n > 0) {
        /* the running variance is unbiased: sum(bndiff2) / (n - 1) */
        tg_no_grad_begin();
        const int64_t C = l.C;
        tg_tensor *mean_c = tg_reshape(bnmeani, &C, 1);
        tg_tensor *var_sum = tg_reshape(bnsum2, &C, 1);
        tg_tensor *var_c = tg_div_scalar(var_sum, (double)(l.n - 1));
        tg_tensor *batch = tg_alloc(TG_SHAPE(2, C), TG_FLOAT64); // mean; var
        double *pb = batch ? (double *)tg_base_ptr(batch) : NULL;
        if (!mean_c || !var_c || !batch ||
            tg_to_f64_array(mean_c, pb) < 0 ||
            tg_to_f64_array(var_c, pb + C) < 0 ||
            running_update(running_mean, pb, running_var, pb + C,
                           o.momentum) < 0) {
            tg_release(out);
            out = NULL;
        }
        tg_release(batch);
        tg_release(var_c);
        tg_release(var_sum);
        tg_release(mean_c);
        tg_no_grad_end();
    }
    tg_release(scaled);
    tg_release(b);
    tg_release(w);
    tg_release(bnraw);
    tg_release(bnvar_inv);
    tg_release(bnvar_eps);
    tg_release(bnsum2);
    tg_release(bndiff2);
    tg_release(bndiff);
    tg_release(bnvar);
    tg_release(bnmeani);
    return out;
}

/* ------------------------------------------- the checks, for other ops */

int tg_batch_norm_args_check(const char *fn, const tg_tensor *x,
                             const tg_tensor *running_mean,
                             const tg_tensor *running_var,
                             const tg_tensor *weight, const tg_tensor *bias,
                             const tg_batch_norm_options *opts)
{
    bn_layout l;
    return batch_norm_check(fn, x, running_mean, running_var, weight, bias,
                            opts, &l);
}
