/*
 * autograd/ops/group_norm.c - GroupNorm and InstanceNorm: one statistics
 * kernel and one closed-form backward over "groups", used by both ops, and
 * GroupNorm composed from primitive ops.
 *
 * x is (N, C, *), channel is dim 1, seen as a contiguous (N, G, D * S)
 * block: N samples, G groups of D = C / G channels, S = prod(shape[2:])
 * values per channel. Each of the N * G rows (one group of one sample) is
 * normalised on its own, exactly as a LayerNorm row; the affine weight and
 * bias are per channel, as in BatchNorm:
 *
 *   mean = sum(row) / (D S)
 *   var  = sum((row - mean)^2) / (D S)              (biased)
 *   rstd = 1 / sqrt(var + eps)
 *   y    = (x - mean) * rstd * w[c] + b[c]          c: the channel of x
 *
 * InstanceNorm is the case G = C (a row is one channel of one sample),
 * with optional running statistics; LayerNorm over (C, H, W) without an
 * affine part is the case G = 1. docs/normalization.md section 8 puts the
 * four normalisations side by side. What this file is not: a fast kernel
 * (there is one plain kernel, which is also the reference), nor the
 * modules (nn/group_norm.c).
 */
#include "../internal.h"

#include <math.h>
#include <stdlib.h>

/* ------------------------------------------------------------ the layout */

typedef struct gn_layout {
    int64_t N, C, S; // x as a contiguous (N, C, S) block
    int64_t G, D;    // groups, and channels per group: C = G * D
    int64_t rows;    // N * G, one statistic each
    int64_t n;       // values per row: D * S
} gn_layout;

static gn_layout gn_layout_of(const tg_tensor *x, int64_t G)
{
    gn_layout l = {.N = x->shape[0], .C = x->shape[1], .S = 1, .G = G};
    for (int i = 2; i < x->ndim; i++)
        l.S *= x->shape[i];
    l.D = l.C / G;
    l.rows = l.N * G;
    l.n = l.D * l.S;
    return l;
}

/* ---------------------------------------------------------------- kernels */

/* Per row r (group r % G of sample r / G), in double whatever T is (two
 * passes, so the variance keeps its precision when |mean| >> std):
 *   mean[r] = sum(x_r) / n
 *   m2[r]   = sum((x_r - mean[r])^2)          (the variance times n)
 * A row is n = D * S consecutive values of the contiguous x. */
#define GROUP_NORM_STATS(NAME, T)                                            \
    static void NAME(const T *x, double *mean, double *m2,                  \
                     const gn_layout *l)                                     \
    {                                                                        \
        for (int64_t r = 0; r < l->rows; r++) {                              \
            const T *xr = x + r * l->n;                                      \
            double sum = 0.0;                                                \
            for (int64_t j = 0; j < l->n; j++)                               \
                sum += xr[j];                                                \
            double m = sum / (double)l->n, sq = 0.0;                         \
            for (int64_t j = 0; j < l->n; j++) {                             \
                double d = xr[j] - m;                                        \
                sq += d * d;                                                 \
            }                                                                \
            mean[r] = m;                                                     \
            m2[r] = sq;                                                      \
        }                                                                    \
    }
GROUP_NORM_STATS(group_norm_stats_f32, float)
GROUP_NORM_STATS(group_norm_stats_f64, double)

/* y = (x - mean[r]) * rstd[r] * w[c] + b[c]; w, b may be NULL. Channel c
 * of row r's k-th channel block is (r % G) * D + k. */
#define GROUP_NORM_APPLY(NAME, T)                                            \
    static void NAME(const T *x, const T *w, const T *b, T *y,              \
                     const double *mean, const double *rstd,                \
                     const gn_layout *l)                                     \
    {                                                                        \
        for (int64_t r = 0; r < l->rows; r++)                                \
            for (int64_t k = 0; k < l->D; k++) {                             \
                int64_t c = (r % l->G) * l->D + k;                           \
                int64_t first = r * l->n + k * l->S;                         \
                double scale = rstd[r] * (w ? (double)w[c] : 1.0);           \
                double shift = b ? (double)b[c] : 0.0;                       \
                for (int64_t s = 0; s < l->S; s++)                           \
                    y[first + s] =                                           \
                        (T)((x[first + s] - mean[r]) * scale + shift);       \
            }                                                                \
    }
GROUP_NORM_APPLY(group_norm_apply_f32, float)
GROUP_NORM_APPLY(group_norm_apply_f64, double)

/* forward: y = xhat * w[c] + b[c] with xhat = (x - mean) * rstd, per row.
 * Within a row this is LayerNorm's computation, with the weight read per
 * channel, so with g = dy * w[c] (the gradient reaching xhat) the same
 * derivation (docs/normalization.md section 3) gives, per row,
 *   dx  = rstd * (g - mean(g) - xhat * mean(g * xhat))
 * and, per channel c, summed over the samples and the values of c,
 *   dw[c] += sum(dy * xhat)
 *   db[c] += sum(dy)
 * xhat is recomputed from the saved mean and rstd (two numbers per row).
 * dw and db are (C,) double sums, zeroed by the caller; dx may be NULL. */
#define GROUP_NORM_BACKWARD(NAME, T)                                         \
    static void NAME(const T *dy, const T *x, const T *w,                   \
                     const double *mean, const double *rstd, T *dx,         \
                     double *dw, double *db, const gn_layout *l)             \
    {                                                                        \
        for (int64_t r = 0; r < l->rows; r++) {                              \
            double m = mean[r], rs = rstd[r];                                \
            double g_mean = 0.0, gx_mean = 0.0;                              \
            for (int64_t k = 0; k < l->D; k++) {                             \
                int64_t c = (r % l->G) * l->D + k;                           \
                int64_t first = r * l->n + k * l->S;                         \
                double wc = w ? (double)w[c] : 1.0;                          \
                for (int64_t s = 0; s < l->S; s++) {                         \
                    double xhat = (x[first + s] - m) * rs;                   \
                    double g = dy[first + s] * wc;                           \
                    g_mean += g;                                             \
                    gx_mean += g * xhat;                                     \
                    dw[c] += (double)dy[first + s] * xhat;                   \
                    db[c] += dy[first + s];                                  \
                }                                                            \
            }                                                                \
            g_mean /= (double)l->n;                                          \
            gx_mean /= (double)l->n;                                         \
            if (!dx)                                                         \
                continue;                                                    \
            for (int64_t k = 0; k < l->D; k++) {                             \
                int64_t c = (r % l->G) * l->D + k;                           \
                int64_t first = r * l->n + k * l->S;                         \
                double wc = w ? (double)w[c] : 1.0;                          \
                for (int64_t s = 0; s < l->S; s++) {                         \
                    double xhat = (x[first + s] - m) * rs;                   \
                    double g = dy[first + s] * wc;                           \
                    dx[first + s] = (T)(rs * (g - g_mean - xhat * gx_mean)); \
                }                                                            \
            }                                                                \
        }                                                                    \
    }
GROUP_NORM_BACKWARD(group_norm_backward_f32, float)
GROUP_NORM_BACKWARD(group_norm_backward_f64, double)

/* ------------------------------------------------------------ arguments */

/* Checks that p (weight, running_mean, ...) is a (C,) tensor of x's
 * dtype. */
static int gn_channel_param_check(const char *fn, const char *name,
                                  const tg_tensor *p, const tg_tensor *x)
{
    char sx[TG_SHAPE_STR_MAX], sp[TG_SHAPE_STR_MAX];
    int64_t C = x->shape[1];
    if (p->ndim != 1 || p->shape[0] != C) {
        tg_error(fn,
                 "%s of shape %s does not match the %lld channels of the "
                 "input of shape %s\n"
                 "  rule: dim 1 of x is the channel dim; %s holds one value "
                 "per channel, shape (C,)\n"
                 "  hint: make it with C = x.shape[1] = %lld values, or "
                 "pass NULL for none",
                 name, tg_shape_str(p, sp), (long long)C, tg_shape_str(x, sx),
                 name, (long long)C);
        return -1;
    }
    return tg_norm_dtype_check(fn, name, p, x, "the input and its per-channel "
                                               "tensors");
}

/* What GroupNorm and InstanceNorm both check: x is a float tensor of at
 * least 2 dims, weight and bias are (C,) of x's dtype, eps >= 0. */
static int gn_common_check(const char *fn, const char *layer,
                           const tg_tensor *x, const tg_tensor *weight,
                           const tg_tensor *bias, double eps)
{
    char sx[TG_SHAPE_STR_MAX];
    if (!tg_dtype_is_float(x->dtype)) {
        tg_error(fn,
                 "cannot normalise an %s tensor\n"
                 "  rule: %s needs a float32 or float64 input\n"
                 "  hint: convert first: tg_to_dtype(x, TG_FLOAT32)",
                 tg_dtype_name(x->dtype), layer);
        return -1;
    }
    if (x->ndim < 2) {
        tg_error(fn,
                 "the input of shape %s has %d dim%s\n"
                 "  rule: %s needs (N, C, ...): a batch of N samples with "
                 "C channels in dim 1\n"
                 "  hint: one sample of C channels is tg_unsqueeze(x, 0)",
                 tg_shape_str(x, sx), x->ndim, x->ndim == 1 ? "" : "s",
                 layer);
        return -1;
    }
    if (weight && gn_channel_param_check(fn, "weight", weight, x) < 0)
        return -1;
    if (bias && gn_channel_param_check(fn, "bias", bias, x) < 0)
        return -1;
    return tg_norm_eps_check(fn, eps);
}

/* Checks the arguments of tg_group_norm and tg_group_norm_composed and
 * fills the layout. Returns 0, or -1 (with an error unless x was NULL). */
static int group_norm_check(const char *fn, const tg_tensor *x,
                            int64_t num_groups, const tg_tensor *weight,
                            const tg_tensor *bias, double eps, gn_layout *l)
{
    if (!x)
        return -1;
    char sx[TG_SHAPE_STR_MAX];
    if (gn_common_check(fn, "GroupNorm", x, weight, bias, eps) < 0)
        return -1;
    int64_t C = x->shape[1];
    if (num_groups < 1 || C % num_groups != 0) {
        tg_error(fn,
                 "cannot split the %lld channels of the input of shape %s "
                 "into %lld groups\n"
                 "  rule: num_groups >= 1 divides C = x.shape[1]: each group "
                 "holds C / num_groups channels\n"
                 "  hint: num_groups 1 normalises each sample whole "
                 "(LayerNorm over (C, ...)); num_groups C normalises each "
                 "channel (InstanceNorm)",
                 (long long)C, tg_shape_str(x, sx), (long long)num_groups);
        return -1;
    }
    *l = gn_layout_of(x, num_groups);
    if (l->N * l->n == 1) {
        tg_error(fn,
                 "expected more than 1 value per channel when training, got "
                 "input of shape %s with %lld groups\n"
                 "  rule: as torch.nn.functional.group_norm, an input with "
                 "N * (C / num_groups) * (product of dims after C) == 1 is "
                 "refused: its one group holds one value, which normalises "
                 "to 0 whatever it is\n"
                 "  hint: use a group of more than one value (fewer groups, "
                 "or a larger input)",
                 tg_shape_str(x, sx), (long long)num_groups);
        return -1;
    }
    return 0;
}

/* ----------------------------------------------------------- the fused op */

/* The one op behind tg_group_norm and the training tg_instance_norm.
 * Inputs: 0 x, 1 weight, 2 bias. Saved: 0 x, 1 mean (rows,), 2 rstd
 * (rows,), both float64, 3 weight when there is one. */
typedef struct group_norm_ctx {
    gn_layout layout;
    bool has_weight;
    const char *fn; // the public function, for a failure in backward
} group_norm_ctx;

static int group_norm_backward(tg_node *node, const tg_tensor *g,
                               tg_tensor **grads)
{
    const group_norm_ctx *c = tg_node_ctx(node);
    const gn_layout *l = &c->layout;
    const tg_tensor *x = tg_node_saved(node, 0);
    const tg_tensor *w = c->has_weight ? tg_node_saved(node, 3) : NULL;
    const double *mean = (const double *)tg_base_ptr(tg_node_saved(node, 1));
    const double *rstd = (const double *)tg_base_ptr(tg_node_saved(node, 2));
    bool need_x = tg_node_needs_grad(node, 0);
    int rc = -1;
    tg_tensor *dy = tg_contiguous_as(g, x->dtype);
    tg_tensor *xc = tg_contiguous_as(x, x->dtype);
    tg_tensor *wc = w ? tg_contiguous_as(w, x->dtype) : NULL;
    tg_tensor *dx = need_x ? tg_alloc(x->shape, x->ndim, x->dtype) : NULL;
    double *sums = tg_calloc(2 * ((size_t)l->C + 1), sizeof *sums);
    if (!dy || !xc || (w && !wc) || (need_x && !dx) || !sums) {
        if (dy && xc)
            tg_error(c->fn, "out of memory in the GroupNorm backward");
        goto done;
    }
    double *dw = sums, *db = sums + l->C + 1; // (C,) each
    /* An empty x has nothing to sum: dx is empty, dw and db are zeros. */
    if (x->numel > 0 && x->dtype == TG_FLOAT32)
        group_norm_backward_f32(
            (const float *)tg_base_ptr(dy), (const float *)tg_base_ptr(xc),
            wc ? (const float *)tg_base_ptr(wc) : NULL, mean, rstd,
            dx ? (float *)tg_base_ptr(dx) : NULL, dw, db, l);
    else if (x->numel > 0)
        group_norm_backward_f64(
            (const double *)tg_base_ptr(dy), (const double *)tg_base_ptr(xc),
            wc ? (const double *)tg_base_ptr(wc) : NULL, mean, rstd,
            dx ? (double *)tg_base_ptr(dx) : NULL, dw, db, l);
    grads[0] = dx;
    dx = NULL;
    if (tg_node_needs_grad(node, 1) &&
        !(grads[1] = tg_alloc_from_f64(dw, &l->C, 1, x->dtype)))
        goto done;
    if (tg_node_needs_grad(node, 2) &&
        !(grads[2] = tg_alloc_from_f64(db, &l->C, 1, x->dtype)))
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
static const tg_op group_norm_op = {"NativeGroupNormBackward0",
                                    group_norm_backward,
                                    sizeof(group_norm_ctx)};

/* Normalises x (already checked) with the layout l, and records the node.
 * When mean_out and m2_out are given they receive the rows' means and sums
 * of squared deviations (rows values each) for running statistics.
 * zero_rstd: a row with var + eps == 0 gets rstd 0 (y = bias) rather than
 * inf (y = NaN). Returns a new reference, or NULL after an error. */
static tg_tensor *group_norm_run(const char *fn, const tg_tensor *x,
                                 const gn_layout *l, const tg_tensor *weight,
                                 const tg_tensor *bias, double eps,
                                 bool zero_rstd, double *mean_out,
                                 double *m2_out)
{
    const int64_t rows = l->rows;
    tg_tensor *xc = tg_contiguous_as(x, x->dtype);
    tg_tensor *wc = weight ? tg_contiguous_as(weight, x->dtype) : NULL;
    tg_tensor *bc = bias ? tg_contiguous_as(bias, x->dtype) : NULL;
    tg_tensor *mu = tg_alloc(&rows, 1, TG_FLOAT64); // (rows,) mean
    tg_tensor *rs = tg_alloc(&rows, 1, TG_FLOAT64); // (rows,) rstd
    double *m2 = tg_calloc((size_t)rows + 1, sizeof *m2);
    tg_tensor *out = tg_alloc(x->shape, x->ndim, x->dtype);
    if (!xc || (weight && !wc) || (bias && !bc) || !mu || !rs || !m2 ||
        !out)
        goto fail;
    double *pm = (double *)tg_base_ptr(mu), *pr = (double *)tg_base_ptr(rs);
    if (x->numel > 0) { // rows of no values have no statistics
        if (x->dtype == TG_FLOAT32)
            group_norm_stats_f32((const float *)tg_base_ptr(xc), pm, m2, l);
        else
            group_norm_stats_f64((const double *)tg_base_ptr(xc), pm, m2, l);
        /* A constant row with eps 0: PyTorch's group_norm gives rstd = inf
         * and y = NaN; its instance_norm, which runs BatchNorm's kernel,
         * gives rstd = 0 and y = bias. Both are followed. */
        for (int64_t r = 0; r < rows; r++) {
            double v = m2[r] / (double)l->n + eps;
            pr[r] = zero_rstd && v == 0.0 ? 0.0 : 1.0 / sqrt(v);
        }
        if (x->dtype == TG_FLOAT32)
            group_norm_apply_f32((const float *)tg_base_ptr(xc),
                                 wc ? (const float *)tg_base_ptr(wc) : NULL,
                                 bc ? (const float *)tg_base_ptr(bc) : NULL,
                                 (float *)tg_base_ptr(out), pm, pr, l);
        else
            group_norm_apply_f64(
                (const double *)tg_base_ptr(xc),
                wc ? (const double *)tg_base_ptr(wc) : NULL,
                bc ? (const double *)tg_base_ptr(bc) : NULL,
                (double *)tg_base_ptr(out), pm, pr, l);
    }
    tg_node *node =
        tg_record(&group_norm_op, &out, TG_INPUTS(x, weight, bias));
    if (node) {
        group_norm_ctx *c = tg_node_ctx(node);
        c->layout = *l;
        c->has_weight = weight != NULL;
        c->fn = fn;
        if (tg_node_save(node, x) < 0 || tg_node_save(node, mu) < 0 ||
            tg_node_save(node, rs) < 0 ||
            (weight && tg_node_save(node, weight) < 0))
            goto fail;
    }
    if (!out)
        goto fail;
    for (int64_t r = 0; mean_out && r < rows; r++) {
        mean_out[r] = pm[r];
        m2_out[r] = m2[r];
    }
    goto done;
fail:
    tg_release(out);
    out = NULL;
done:
    free(m2);
    tg_release(rs);
    tg_release(mu);
    tg_release(bc);
    tg_release(wc);
    tg_release(xc);
    return out;
}

tg_tensor *tg_group_norm(const tg_tensor *x, int64_t num_groups,
                         const tg_tensor *weight, const tg_tensor *bias,
                         double eps)
{
    tg_check_alive("tg_group_norm", x);
    tg_check_alive("tg_group_norm", weight);
    tg_check_alive("tg_group_norm", bias);
    gn_layout l;
    if (group_norm_check("tg_group_norm", x, num_groups, weight, bias, eps,
                         &l) < 0)
        return NULL;
    return group_norm_run("tg_group_norm", x, &l, weight, bias, eps, false,
                          NULL, NULL);
}

/* --------------------------------------------------------- InstanceNorm */

/* Checks the arguments of tg_instance_norm and fills the layout (G = C).
 * Returns 0, or -1 (with an error unless x was NULL). */
static int instance_norm_check(const char *fn, const tg_tensor *x,
                               const tg_tensor *running_mean,
                               const tg_tensor *running_var,
                               const tg_tensor *weight, const tg_tensor *bias,
                               bool use_input_stats, double momentum,
                               double eps, gn_layout *l)
{
    if (!x)
        return -1;
    char sx[TG_SHAPE_STR_MAX];
    if (gn_common_check(fn, "InstanceNorm", x, weight, bias, eps) < 0)
        return -1;
    if (!(momentum >= 0.0 && momentum <= 1.0)) {
        tg_error(fn,
                 "momentum is %g\n"
                 "  rule: momentum is in [0, 1]: running = (1 - momentum) "
                 "* running + momentum * batch\n"
                 "  hint: PyTorch's default is 0.1",
                 momentum);
        return -1;
    }
    if ((running_mean == NULL) != (running_var == NULL)) {
        tg_error(fn,
                 "running_%s is given but running_%s is NULL\n"
                 "  rule: pass both running statistics or neither\n"
                 "  hint: running_mean starts as zeros (C,), running_var "
                 "as ones (C,)",
                 running_mean ? "mean" : "var", running_mean ? "var" : "mean");
        return -1;
    }
    const tg_tensor *stats[2] = {running_mean, running_var};
    const char *names[2] = {"running_mean", "running_var"};
    for (int k = 0; k < 2; k++) {
        if (!stats[k])
            continue;
        if (gn_channel_param_check(fn, names[k], stats[k], x) < 0)
            return -1;
        if (stats[k]->requires_grad) {
            tg_error(fn,
                     "%s requires grad\n"
                     "  rule: running statistics are buffers updated in "
                     "place, not parameters; no gradient flows into them\n"
                     "  hint: create them without tg_set_requires_grad",
                     names[k]);
            return -1;
        }
    }
    if (!use_input_stats && !running_mean) {
        tg_error(fn,
                 "use_input_stats is false but running_mean and running_var "
                 "are NULL\n"
                 "  rule: without the input's statistics InstanceNorm "
                 "normalises with the running mean and variance\n"
                 "  hint: pass them, or use_input_stats = true");
        return -1;
    }
    *l = gn_layout_of(x, x->shape[1]);
    if (use_input_stats && l->S == 1) {
        tg_error(fn,
                 "expected more than 1 spatial element when training, got "
                 "input of shape %s\n"
                 "  rule: InstanceNorm takes each channel's statistics over "
                 "its values in one sample, the product of the dims after "
                 "C, here 1: one value has no spread\n"
                 "  hint: (N, C) features have no spatial dims; BatchNorm1d "
                 "or LayerNorm normalise them",
                 tg_shape_str(x, sx));
        return -1;
    }
    return 0;
}

/* In PyTorch's instance_norm each sample's copy of the running statistics
 * moves towards that sample's channel statistics, and the copies are then
 * averaged over the batch:
 *   running_mean = (1 - m) * running_mean + m * mean over n of mean[n, c]
 *   running_var  = (1 - m) * running_var
 *                  + m * mean over n of var[n, c] * S / (S - 1)   (unbiased)
 * computed here in double and written to the buffers in place (no
 * gradient). Both are computed before either is written. 0 or -1. */
static int instance_norm_running_update(tg_tensor *running_mean,
                                        tg_tensor *running_var,
                                        const double *mean, const double *m2,
                                        const gn_layout *l, double momentum)
{
    const int64_t C = l->C;
    double *v = tg_malloc(4 * (size_t)C * sizeof *v);
    if (!v)
        return -1;
    double *rm = v, *rv = v + C, *bm = v + 2 * C, *bv = v + 3 * C;
    int rc = -1;
    tg_tensor *new_mean = NULL, *new_var = NULL;
    if (tg_to_f64_array(running_mean, rm) < 0 ||
        tg_to_f64_array(running_var, rv) < 0)
        goto done;
    for (int64_t c = 0; c < C; c++)
        bm[c] = bv[c] = 0.0;
    for (int64_t i = 0; i < l->N; i++) // in sample order
        for (int64_t c = 0; c < C; c++) {
            bm[c] += mean[i * C + c];
            bv[c] += m2[i * C + c] / (double)(l->S - 1);
        }
    for (int64_t c = 0; c < C; c++) {
        rm[c] = (1.0 - momentum) * rm[c] + momentum * (bm[c] / (double)l->N);
        rv[c] = (1.0 - momentum) * rv[c] + momentum * (bv[c] / (double)l->N);
    }
    new_mean = tg_alloc_from_f64(rm, &C, 1, running_mean->dtype);
    new_var = tg_alloc_from_f64(rv, &C, 1, running_var->dtype);
    if (!new_mean || !new_var)
        goto done;
    tg_no_grad_begin();
    rc = tg_copy_(running_mean, new_mean) == 0 &&
                 tg_copy_(running_var, new_var) == 0
             ? 0
             : -1;
    tg_no_grad_end();
done:
    tg_release(new_var);
    tg_release(new_mean);
    free(v);
    return rc;
}

tg_tensor *tg_instance_norm(const tg_tensor *x, tg_tensor *running_mean,
                            tg_tensor *running_var, const tg_tensor *weight,
                            const tg_tensor *bias, bool use_input_stats,
                            double momentum, double eps)
{
    const char *fn = "tg_instance_norm";
    tg_check_alive(fn, x);
    tg_check_alive(fn, running_mean);
    tg_check_alive(fn, running_var);
    tg_check_alive(fn, weight);
    tg_check_alive(fn, bias);
    gn_layout l;
    if (instance_norm_check(fn, x, running_mean, running_var, weight, bias,
                            use_input_stats, momentum, eps, &l) < 0)
        return NULL;
    /* Without the input's statistics every channel is normalised with the
     * running ones, the same in every sample: that is BatchNorm in eval
     * (PyTorch computes it so too), and its backward is the plain affine
     * dx = dy * w * invstd. */
    if (!use_input_stats)
        return tg_batch_norm(x, running_mean, running_var, weight, bias,
                             false, momentum, eps);
    bool update = running_mean && x->numel > 0;
    double *stats = update ? tg_malloc(2 * (size_t)l.rows * sizeof *stats)
                           : NULL;
    if (update && !stats)
        return NULL;
    tg_tensor *out = group_norm_run(fn, x, &l, weight, bias, eps, true,
                                    stats, stats ? stats + l.rows : NULL);
    /* Last: when anything before fails, the running statistics have not
     * moved. An empty input leaves them alone (PyTorch would average over
     * no samples and write NaN). */
    if (out && update &&
        instance_norm_running_update(running_mean, running_var, stats,
                                     stats + l.rows, &l, momentum) < 0) {
        tg_release(out);
        out = NULL;
    }
    free(stats);
    return out;
}

/* ---------------------------------------------------- the composed form */

/* GroupNorm in primitive ops, one line per formula; the tape records each
 * op and differentiates the chain. It is the plain reference the fused op
 * is tested against:
 *   xg    = x viewed as (N, G, D * S)
 *   mean  = mean(xg, dim 2)
 *   xc    = xg - mean
 *   var   = mean(xc^2, dim 2)                      (biased)
 *   xhat  = xc * rsqrt(var + eps), viewed back as x's shape
 *   y     = xhat * w + b      (w, b viewed as (1, C, 1, ...))
 * (Being plain, it keeps x - mean in x's dtype.) */
tg_tensor *tg_group_norm_composed(const tg_tensor *x, int64_t num_groups,
                                  const tg_tensor *weight,
                                  const tg_tensor *bias, double eps)
{
    tg_check_alive("tg_group_norm_composed", x);
    tg_check_alive("tg_group_norm_composed", weight);
    tg_check_alive("tg_group_norm_composed", bias);
    gn_layout l;
    if (group_norm_check("tg_group_norm_composed", x, num_groups, weight,
                         bias, eps, &l) < 0)
        return NULL;
    int64_t gshape[3] = {l.N, l.G, l.n};
    int64_t cshape[TG_MAX_DIMS]; // (1, C, 1, ...): broadcasts against x
    for (int i = 0; i < x->ndim; i++)
        cshape[i] = i == 1 ? l.C : 1;
    int last[1] = {2};
    tg_tensor *xg = tg_reshape(x, gshape, 3);
    tg_tensor *mean = tg_mean(xg, last, 1, true);        // (N, G, 1)
    tg_tensor *xc = tg_sub(xg, mean);                    // x - mean
    tg_tensor *sq = tg_mul(xc, xc);                      // (x - mean)^2
    tg_tensor *var = tg_mean(sq, last, 1, true);         // biased variance
    tg_tensor *var_eps = tg_add_scalar(var, eps);
    tg_tensor *rstd = tg_rsqrt(var_eps);                 // 1/sqrt(var+eps)
    tg_tensor *xhat_g = tg_mul(xc, rstd);
    tg_tensor *xhat = tg_reshape(xhat_g, x->shape, x->ndim);
    tg_tensor *w = weight ? tg_reshape(weight, cshape, x->ndim) : NULL;
    tg_tensor *b = bias ? tg_reshape(bias, cshape, x->ndim) : NULL;
    tg_tensor *scaled = w ? tg_mul(xhat, w) : tg_retain(xhat);
    tg_tensor *out = b ? tg_add(scaled, b) : tg_retain(scaled);
    tg_release(scaled);
    tg_release(b);
    tg_release(w);
    tg_release(xhat);
    tg_release(xhat_g);
    tg_release(rstd);
    tg_release(var_eps);
    tg_release(var);
    tg_release(sq);
    tg_release(xc);
    tg_release(mean);
    tg_release(xg);
    return out;
}
