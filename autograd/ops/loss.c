/*
 * autograd/ops/loss.c - the losses of torch.nn.functional: mse_loss,
 * binary_cross_entropy_with_logits, nll_loss and cross_entropy, each
 * forward next to its backward.
 *
 * Two kinds of loss live here:
 *  - pointwise losses (mse, bce with logits): one value l(x_i, t_i) per
 *    element of an input x and a target t of the same shape, then a
 *    reduction. One forward and one backward serve both; a loss is its
 *    value and its two partial derivatives, written side by side below.
 *  - class losses (nll, cross_entropy): one value per row of (N, C)
 *    log-probabilities, picked by an int64 label, and no gradient for the
 *    labels.
 *
 * Reductions (tg_reduction): mean divides the sum by the number of values
 * (numel for a pointwise loss, N rows for nll), sum adds them, none keeps
 * them. Mean and sum give a 0-d tensor; the mean of no values is 0 / 0 =
 * NaN and their sum is 0, as PyTorch. Every value is computed in double
 * from the inputs (float32 or float64) and rounded once to the input's
 * dtype (cross_entropy twice: see there); float32 sums accumulate in
 * double. Inputs of any layout are read as they are (or through a
 * contiguous float64 copy); labels of any layout too.
 *
 * What PyTorch has and this file does not: class weights, ignore_index
 * (PyTorch skips rows whose label is -100 by default; here every label
 * must lie in [0, C)), label smoothing, probability targets for
 * cross_entropy, spatial (N, C, d1, ...) inputs, pos_weight, and type
 * promotion between input and target (refused, with a hint). Input and
 * target of different shapes are refused too, where PyTorch's mse_loss
 * broadcasts with a warning. Not here either: log_softmax (softmax.c) and
 * accuracy (nn/data.c, a metric with no gradient).
 */
#include "../internal.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

/* --------------------------------------------------------------- checks */

static int reduction_check(const char *fn, tg_reduction reduction)
{
    if (reduction == TG_REDUCTION_MEAN || reduction == TG_REDUCTION_SUM ||
        reduction == TG_REDUCTION_NONE)
        return 0;
    tg_error(fn,
             "reduction is %d\n"
             "  rule: reduction is TG_REDUCTION_MEAN (0), TG_REDUCTION_SUM "
             "(1) or TG_REDUCTION_NONE (2)\n"
             "  hint: PyTorch's default is the mean: TG_REDUCTION_MEAN",
             (int)reduction);
    return -1;
}

static const char *dtype_constant(tg_dtype dtype)
{
    return dtype == TG_FLOAT64 ? "TG_FLOAT64" : "TG_FLOAT32";
}

/* x (called `name`) is float32 or float64. */
static int float_check(const char *fn, const char *loss, const char *name,
                       const tg_tensor *x)
{
    if (tg_dtype_is_float(x->dtype))
        return 0;
    tg_error(fn,
             "cannot take the %s of an %s tensor (%s)\n"
             "  rule: %s must be float32 or float64 (as in PyTorch)\n"
             "  hint: convert it first: tg_to_dtype(%s, TG_FLOAT32)",
             loss, tg_dtype_name(x->dtype), name, name, name);
    return -1;
}

/* x's shape as the C arguments that rebuild it: "TG_SHAPE(3, 4)", or
 * "NULL, 0" for a 0-d x. */
static const char *shape_args(const tg_tensor *x, char buf[TG_SHAPE_STR_MAX])
{
    if (x->ndim == 0)
        return strcpy(buf, "NULL, 0");
    int len = snprintf(buf, TG_SHAPE_STR_MAX, "TG_SHAPE(");
    for (int d = 0; d < x->ndim && len < TG_SHAPE_STR_MAX - 24; d++)
        len += snprintf(buf + len, (size_t)(TG_SHAPE_STR_MAX - len), "%s%lld",
                        d ? ", " : "", (long long)x->shape[d]);
    snprintf(buf + len, (size_t)(TG_SHAPE_STR_MAX - len), ")");
    return buf;
}

/* The checks of a pointwise loss: x float, t of x's dtype and shape. */
static int pair_check(const char *fn, const char *loss, const char *xname,
                      const tg_tensor *x, const char *tname,
                      const tg_tensor *t, tg_reduction reduction)
{
    char sx[TG_SHAPE_STR_MAX], st[TG_SHAPE_STR_MAX], args[TG_SHAPE_STR_MAX];
    if (float_check(fn, loss, xname, x) < 0)
        return -1;
    if (t->dtype != x->dtype) {
        tg_error(fn,
                 "%s is %s but %s is %s\n"
                 "  rule: %s and %s have one float dtype (PyTorch would "
                 "promote; tapegrad asks you to choose)\n"
                 "  hint: tg_to_dtype(%s, %s)",
                 xname, tg_dtype_name(x->dtype), tname,
                 tg_dtype_name(t->dtype), xname, tname, tname,
                 dtype_constant(x->dtype));
        return -1;
    }
    if (!tg_same_shape(x, t)) {
        tg_shape_str(x, sx);
        tg_shape_str(t, st);
        shape_args(x, args);
        if (x->numel == t->numel)
            tg_error(fn,
                     "%s of shape %s and %s of shape %s differ\n"
                     "  rule: %s and %s have the same shape; PyTorch "
                     "broadcasts them with a warning, which turns (N, 1) "
                     "against (N,) into an (N, N) loss\n"
                     "  hint: they have the same number of elements: "
                     "tg_reshape(%s, %s)",
                     xname, sx, tname, st, xname, tname, tname, args);
        else
            tg_error(fn,
                     "%s of shape %s and %s of shape %s differ\n"
                     "  rule: %s and %s have the same shape; PyTorch "
                     "broadcasts them with a warning, which usually hides "
                     "a bug\n"
                     "  hint: if broadcasting is what you mean, say so: "
                     "tg_broadcast_to(%s, %s)",
                     xname, sx, tname, st, xname, tname, tname, args);
        return -1;
    }
    return reduction_check(fn, reduction);
}

/* ------------------------------------------------------ pointwise losses */

/* A loss l(x, t) applied to each element pair, with its partial
 * derivatives dl/dx and dl/dt. */
typedef struct pointwise_loss {
    const char *fn;   // the public function, for messages
    const char *name; // as PyTorch spells it: "mse_loss"
    const char *input, *target; // the argument names
    double (*value)(double x, double t);
    double (*d_input)(double x, double t);
    double (*d_target)(double x, double t);
} pointwise_loss;

/* mse: l = (x - t)^2,  dl/dx = 2 (x - t),  dl/dt = -2 (x - t). */
static double mse_value(double x, double t)
{
    return (x - t) * (x - t);
}
static double mse_d_input(double x, double t)
{
    return 2.0 * (x - t);
}
static double mse_d_target(double x, double t)
{
    return -2.0 * (x - t);
}
static const pointwise_loss mse_loss = {
    "tg_mse_loss", "mse_loss", "input", "target",
    mse_value, mse_d_input, mse_d_target};

/* bce with logits. With p = sigmoid(x), the binary cross-entropy
 *   l = -(t log p + (1 - t) log(1 - p))
 * simplifies, using log p = -log(1 + exp(-x)) and log(1 - p) = -x + log p,
 * to l = x - x t + log(1 + exp(-x)). For x < 0, exp(-x) overflows (x =
 * -1000) and the same value is written x - x t - x + log(1 + exp(x)); both
 * cases at once:
 *   l = max(x, 0) - x t + log1p(exp(-|x|))
 * where exp(-|x|) <= 1 never overflows, and log1p keeps a tiny
 * exp(-|x|) accurate: at |x| = 20, log(1 + 2.1e-9) first rounds 1 +
 * 2.1e-9 to double, losing half of the digits of the term that makes up
 * the whole loss when t = 1 and x = 20.
 * Derivatives of the first form: dl/dx = 1 - t - exp(-x) / (1 + exp(-x))
 * = sigmoid(x) - t, and dl/dt = -x. */
static double bce_value(double x, double t)
{
    return fmax(x, 0.0) - x * t + log1p(exp(-fabs(x)));
}
/* sigmoid(x) without overflow: 1 / (1 + exp(-x)) for x >= 0, and the
 * equal exp(x) / (1 + exp(x)) for x < 0, so exp only sees values <= 0. */
static double stable_sigmoid(double x)
{
    if (x >= 0.0)
        return 1.0 / (1.0 + exp(-x));
    double e = exp(x);
    return e / (1.0 + e);
}
static double bce_d_input(double x, double t)
{
    return stable_sigmoid(x) - t;
}
static double bce_d_target(double x, double t)
{
    (void)t;
    return -x;
}
static const pointwise_loss bce_loss = {
    "tg_binary_cross_entropy_with_logits",
    "binary_cross_entropy_with_logits", "logits", "targets",
    bce_value, bce_d_input, bce_d_target};

/* Inputs: 0 x, 1 t. Saved: 0 x, 1 t. */
typedef struct pointwise_ctx {
    const pointwise_loss *loss;
    tg_reduction reduction;
} pointwise_ctx;

/* forward: out = reduce(l(x_i, t_i)), so with g = dL/d(out)
 *   dx_i = dl/dx(x_i, t_i) * g_i      (none: g has x's shape)
 *   dx_i = dl/dx(x_i, t_i) * g        (sum: g is 0-d)
 *   dx_i = dl/dx(x_i, t_i) * g / n    (mean over n = numel values)
 * and the same for t with dl/dt. */
static int pointwise_backward(tg_node *node, const tg_tensor *g,
                              tg_tensor **grads)
{
    const pointwise_ctx *c = tg_node_ctx(node);
    const tg_tensor *x = tg_node_saved(node, 0), *t = tg_node_saved(node, 1);
    bool need_x = tg_node_needs_grad(node, 0);
    bool need_t = tg_node_needs_grad(node, 1);
    tg_tensor *xd = tg_contiguous_as(x, TG_FLOAT64);
    tg_tensor *td = tg_contiguous_as(t, TG_FLOAT64);
    tg_tensor *gd = tg_contiguous_as(g, TG_FLOAT64);
    tg_tensor *dx = need_x ? tg_alloc(x->shape, x->ndim, x->dtype) : NULL;
    tg_tensor *dt = need_t ? tg_alloc(t->shape, t->ndim, t->dtype) : NULL;
    if (!xd || !td || !gd || (need_x && !dx) || (need_t && !dt)) {
        tg_release(dt);
        tg_release(dx);
        dx = dt = NULL;
        goto done;
    }
    const double *px = (const double *)tg_base_ptr(xd);
    const double *pt = (const double *)tg_base_ptr(td);
    const double *pg = (const double *)tg_base_ptr(gd);
    bool per_element = c->reduction == TG_REDUCTION_NONE;
    double scale = c->reduction == TG_REDUCTION_MEAN ? 1.0 / (double)x->numel
                                                     : 1.0;
    for (int64_t i = 0; i < x->numel; i++) {
        double gi = (per_element ? pg[i] : pg[0]) * scale;
        if (dx)
            tg_store_contiguous(dx, i, c->loss->d_input(px[i], pt[i]) * gi);
        if (dt)
            tg_store_contiguous(dt, i, c->loss->d_target(px[i], pt[i]) * gi);
    }
done:
    tg_release(gd);
    tg_release(td);
    tg_release(xd);
    grads[0] = dx;
    grads[1] = dt;
    return (need_x && !dx) || (need_t && !dt) ? -1 : 0;
}
static const tg_op mse_op = {"MseLossBackward0", pointwise_backward,
                             sizeof(pointwise_ctx)};
static const tg_op bce_op = {"BinaryCrossEntropyWithLogitsBackward0",
                             pointwise_backward, sizeof(pointwise_ctx)};

/* out = reduce(l(x_i, t_i)): the values in double, one rounding to x's
 * dtype at the end (per element for none, once for the sum or mean). */
static tg_tensor *pointwise_forward(const pointwise_loss *loss,
                                    const tg_op *op, const tg_tensor *x,
                                    const tg_tensor *t,
                                    tg_reduction reduction)
{
    if (!x || !t)
        return NULL;
    tg_check_alive(loss->fn, x);
    tg_check_alive(loss->fn, t);
    if (pair_check(loss->fn, loss->name, loss->input, x, loss->target, t,
                   reduction) < 0)
        return NULL;
    tg_tensor *xd = tg_contiguous_as(x, TG_FLOAT64);
    tg_tensor *td = tg_contiguous_as(t, TG_FLOAT64);
    tg_tensor *out = NULL;
    if (!xd || !td)
        goto done;
    const double *px = (const double *)tg_base_ptr(xd);
    const double *pt = (const double *)tg_base_ptr(td);
    if (reduction == TG_REDUCTION_NONE) {
        out = tg_alloc(x->shape, x->ndim, x->dtype);
        for (int64_t i = 0; out && i < x->numel; i++)
            tg_store_contiguous(out, i, loss->value(px[i], pt[i]));
    } else {
        double sum = 0.0;
        for (int64_t i = 0; i < x->numel; i++)
            sum += loss->value(px[i], pt[i]);
        if (reduction == TG_REDUCTION_MEAN)
            sum /= (double)x->numel; // 0 / 0 = NaN for no values
        out = tg_scalar(sum, x->dtype);
    }
    tg_node *node = tg_record(op, &out, TG_INPUTS(x, t));
    if (node) {
        pointwise_ctx *c = tg_node_ctx(node);
        c->loss = loss;
        c->reduction = reduction;
        tg_node_save(node, x);
        tg_node_save(node, t);
    }
done:
    tg_release(td);
    tg_release(xd);
    return out;
}

/* out = reduce((input - target)^2) */
tg_tensor *tg_mse_loss(const tg_tensor *input, const tg_tensor *target,
                       tg_reduction reduction)
{
    return pointwise_forward(&mse_loss, &mse_op, input, target, reduction);
}

/* out = reduce(max(x, 0) - x t + log1p(exp(-|x|))) */
tg_tensor *tg_binary_cross_entropy_with_logits(const tg_tensor *logits,
                                               const tg_tensor *targets,
                                               tg_reduction reduction)
{
    return pointwise_forward(&bce_loss, &bce_op, logits, targets, reduction);
}

/* ---------------------------------------------------------- class losses */
/*
 * logp is (N, C): row i holds the log-probabilities of C classes for
 * sample i, and labels (N,) the right class y_i of each. Or logp is (C,),
 * one sample, with a 0-d label: then N = 1 and the result of reduction
 * none is 0-d, as PyTorch.
 *
 *   l_i = -logp[i, y_i]
 *   mean: sum_i l_i / N     sum: sum_i l_i     none: (l_0, ..., l_{N-1})
 *
 * PyTorch's mean divides by the sum of the class weights of the rows it
 * counts; with no weights and no ignored rows that is N.
 */

/* The label of row i (labels is (N,), or 0-d for one row). */
static int64_t label_at(const tg_tensor *labels, int64_t i)
{
    const int64_t *p = (const int64_t *)tg_base_ptr(labels);
    return labels->ndim == 0 ? p[0] : p[i * labels->strides[0]];
}

/* Checks logp (called `name`: "logp" or "logits") and labels, and gives
 * the rows N and classes C. Every label is checked to lie in [0, C). */
static int class_check(const char *fn, const char *loss, const char *name,
                       const tg_tensor *x, const tg_tensor *labels,
                       tg_reduction reduction, int64_t *rows,
                       int64_t *classes)
{
    /* The shapes are formatted only when a message needs them: this runs
     * on every training step. */
    char sx[TG_SHAPE_STR_MAX], sl[TG_SHAPE_STR_MAX];
#define FORMAT_SHAPES() (tg_shape_str(x, sx), tg_shape_str(labels, sl))
    if (float_check(fn, loss, name, x) < 0)
        return -1;
    if (x->ndim != 1 && x->ndim != 2) {
        FORMAT_SHAPES();
        tg_error(fn,
                 "%s has shape %s\n"
                 "  rule: %s is (N, C), one row of C class scores per "
                 "sample, or (C,) for one sample\n"
                 "  hint: for (N, C, d1, ...) put the class dim last and "
                 "flatten to (N * d1 * ..., C), the labels to "
                 "(N * d1 * ...,)",
                 name, sx, name);
        return -1;
    }
    if (labels->dtype != TG_INT64) {
        tg_error(fn,
                 "labels are %s\n"
                 "  rule: labels are int64 class indices (PyTorch's Long "
                 "targets); they get no gradient\n"
                 "  hint: convert them: tg_to_dtype(labels, TG_INT64)",
                 tg_dtype_name(labels->dtype));
        return -1;
    }
    int64_t N = x->ndim == 2 ? x->shape[0] : 1;
    int64_t C = x->shape[x->ndim - 1];
    if (x->ndim == 1 && labels->ndim != 0) {
        FORMAT_SHAPES();
        tg_error(fn,
                 "%s of shape %s is one sample, but labels have shape %s\n"
                 "  rule: %s of shape (C,) takes a 0-d label\n"
                 "  hint: for a batch of one, make %s (1, C) with "
                 "tg_unsqueeze(%s, 0) and keep labels (1,)",
                 name, sx, sl, name, name, name);
        return -1;
    }
    if (x->ndim == 2 && (labels->ndim != 1 || labels->shape[0] != N)) {
        FORMAT_SHAPES();
        if (labels->ndim == 1)
            tg_error(fn,
                     "%s of shape %s has %lld row%s but labels of shape %s "
                     "have %lld\n"
                     "  rule: one label per row: labels are (N,) for %s "
                     "(N, C), and %lld != %lld\n"
                     "  hint: take the labels of the same batch as %s",
                     name, sx, (long long)N, tg_plural(N), sl,
                     (long long)labels->shape[0], name, (long long)N,
                     (long long)labels->shape[0], name);
        else
            tg_error(fn,
                     "%s of shape %s needs labels of shape (%lld,), not "
                     "%s\n"
                     "  rule: one label per row: labels are (N,) for %s "
                     "(N, C)\n"
                     "  hint: tg_reshape(labels, TG_SHAPE(-1)) flattens "
                     "them",
                     name, sx, (long long)N, sl, name);
        return -1;
    }
    for (int64_t i = 0; i < N; i++) {
        int64_t y = label_at(labels, i);
        if (y >= 0 && y < C)
            continue;
        char where[48];
        FORMAT_SHAPES();
        if (x->ndim == 2)
            snprintf(where, sizeof where, "labels[%lld]", (long long)i);
        else
            snprintf(where, sizeof where, "the label");
        tg_error(fn,
                 "%s is %lld but %s of shape %s has %lld class%s\n"
                 "  rule: a label is a class index in [0, C) = [0, %lld); "
                 "there is no ignore_index (PyTorch skips labels equal to "
                 "-100)\n"
                 "  hint: labels count from 0; check the labels of that "
                 "row, or give %s one column per class",
                 where, (long long)y, name, sx, (long long)C,
                 C == 1 ? "" : "es", (long long)C, name);
        return -1;
    }
    if (reduction_check(fn, reduction) < 0)
        return -1;
    *rows = N;
    *classes = C;
    return 0;
#undef FORMAT_SHAPES
}

/* Saved: 0 labels. Inputs: 0 logp (the labels are no input: they have no
 * gradient, as in PyTorch's graph). */
typedef struct nll_ctx {
    tg_reduction reduction;
    int64_t rows; // N
} nll_ctx;

/* forward: l_i = -logp[i, y_i], so dl_i/dlogp[i, c] = -1 when c = y_i and
 * 0 otherwise: the gradient is zero except one entry per row,
 *   dlogp[i, y_i] = -g_i   (none)   -g   (sum)   -g / N   (mean). */
static int nll_backward(tg_node *node, const tg_tensor *g, tg_tensor **grads)
{
    const nll_ctx *c = tg_node_ctx(node);
    const tg_tensor *labels = tg_node_saved(node, 0);
    int ndim;
    const int64_t *shape = tg_node_input_shape(node, 0, &ndim);
    tg_dtype dtype = tg_node_input_dtype(node, 0);
    tg_tensor *gd = tg_contiguous_as(g, TG_FLOAT64);
    tg_tensor *dx = gd ? tg_alloc(shape, ndim, dtype) : NULL;
    if (dx) {
        int64_t C = shape[ndim - 1];
        const double *pg = (const double *)tg_base_ptr(gd);
        bool per_row = c->reduction == TG_REDUCTION_NONE;
        double scale = c->reduction == TG_REDUCTION_MEAN
                           ? 1.0 / (double)c->rows : 1.0;
        for (int64_t k = 0; k < dx->numel; k++)
            tg_store_contiguous(dx, k, 0.0);
        for (int64_t i = 0; i < c->rows; i++)
            tg_store_contiguous(dx, i * C + label_at(labels, i),
                                -(per_row ? pg[i] : pg[0]) * scale);
    }
    tg_release(gd);
    grads[0] = dx;
    return dx ? 0 : -1;
}
static const tg_op nll_op = {"NllLossBackward0", nll_backward,
                             sizeof(nll_ctx)};

/* The nll_loss of arguments already checked (N rows). */
static tg_tensor *nll_checked(const tg_tensor *logp, const tg_tensor *labels,
                              tg_reduction reduction, int64_t N)
{
    /* logp[i, y] lives at element i * stride0 + y * stride1; a (C,) logp
     * is row 0 with stride1 = strides[0]. Read in place: no copy. */
    int64_t row_stride = logp->ndim == 2 ? logp->strides[0] : 0;
    int64_t col_stride = logp->strides[logp->ndim - 1];
    const char *base = tg_base_ptr(logp);
    tg_tensor *out = NULL;
    double sum = 0.0;
    if (reduction == TG_REDUCTION_NONE)
        out = tg_alloc(labels->shape, labels->ndim, logp->dtype); // (N,) or ()
    for (int64_t i = 0; i < N; i++) {
        int64_t at = i * row_stride + label_at(labels, i) * col_stride;
        double v = logp->dtype == TG_FLOAT32
                       ? (double)((const float *)base)[at]
                       : ((const double *)base)[at];
        if (out)
            tg_store_contiguous(out, i, -v);
        sum -= v;
    }
    if (reduction != TG_REDUCTION_NONE)
        out = tg_scalar(reduction == TG_REDUCTION_MEAN ? sum / (double)N
                                                       : sum, // 0/0: NaN
                        logp->dtype);
    tg_node *node = tg_record(&nll_op, &out, TG_INPUTS(logp));
    if (node) {
        nll_ctx *c = tg_node_ctx(node);
        c->reduction = reduction;
        c->rows = N;
        tg_node_save(node, labels);
    }
    return out;
}

/* out = reduce(-logp[i, labels[i]]) */
tg_tensor *tg_nll_loss(const tg_tensor *logp, const tg_tensor *labels,
                       tg_reduction reduction)
{
    if (!logp || !labels)
        return NULL;
    tg_check_alive("tg_nll_loss", logp);
    tg_check_alive("tg_nll_loss", labels);
    int64_t N, C;
    if (class_check("tg_nll_loss", "nll_loss", "logp", logp, labels,
                    reduction, &N, &C) < 0)
        return NULL;
    return nll_checked(logp, labels, reduction, N);
}

/* Cross-entropy is nll_loss of the log-softmax, recorded as the two nodes
 * LogSoftmaxBackward0 and NllLossBackward0, as PyTorch composes it:
 *   l_i = -log softmax(z_i)[y_i] = logsumexp(z_i) - z_i[y_i]
 * log_softmax subtracts the row maximum before exp (softmax.c), so logits
 * like 1000 and -1000 give finite values. The two backwards combine to the
 * familiar dz_i = (softmax(z_i) - onehot(y_i)) * g_i. In float32 the
 * log-probabilities are rounded to float32 between the two ops, as in
 * PyTorch: a second rounding, the one exception to "rounded once". */
tg_tensor *tg_cross_entropy(const tg_tensor *logits, const tg_tensor *labels,
                            tg_reduction reduction)
{
    if (!logits || !labels)
        return NULL;
    tg_check_alive("tg_cross_entropy", logits);
    tg_check_alive("tg_cross_entropy", labels);
    int64_t N, C;
    if (class_check("tg_cross_entropy", "cross_entropy", "logits", logits,
                    labels, reduction, &N, &C) < 0)
        return NULL;
    tg_tensor *logp = tg_log_softmax(logits, logits->ndim - 1); // class dim
    tg_tensor *out = logp ? nll_checked(logp, labels, reduction, N) : NULL;
    tg_release(logp);
    return out;
}
