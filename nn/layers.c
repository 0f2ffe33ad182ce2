/*
 * nn/layers.c - the layers of torch.nn that are compositions of ops:
 * Linear, the activations ReLU, Tanh and GELU, Dropout and Sequential, and
 * tg_mlp_new, which stacks them (with a norm layer) as torchvision's MLP.
 *
 * Nothing here has a backward of its own: every forward is built from
 * differentiable ops (tg_linear, tg_mul, tg_relu, ...), so the tape
 * differentiates the layers. Linear draws its initial weights from the
 * default generator exactly as PyTorch does (SEMANTICS.md section 5), so a
 * model built after tg_manual_seed(s) starts where torch.manual_seed(s)
 * would. The normalisation layers are in norm.c, the module object in
 * module.c.
 */
#include "nn.h"

#include "../autograd/internal.h"
#include "internal.h"

#include <math.h>
#include <stdio.h>

/* ----------------------------------------------------------------- Linear */

typedef struct linear_data {
    int64_t in_features, out_features;
    bool bias;
} linear_data;

static void linear_describe(const tg_module *m, char *buf, size_t size)
{
    const linear_data *d = tg_module_data_const(m);
    snprintf(buf, size, "in_features=%lld, out_features=%lld, bias=%s",
             (long long)d->in_features, (long long)d->out_features,
             tg_py_bool(d->bias));
}

/* y = x W^T + b for x (..., in): W is (out, in), so W^T is (in, out) and
 * the product maps the last dim of x from in to out features; b (out,) is
 * added to every row. tg_linear does both in one node, as PyTorch's addmm
 * (autograd/ops/linear.c); the checks here word the errors for the layer. */
static tg_tensor *linear_forward(tg_module *m, const tg_tensor *x)
{
    const linear_data *d = tg_module_data(m);
    tg_tensor *w = tg_module_parameter(m, "weight");
    tg_tensor *b = d->bias ? tg_module_parameter(m, "bias") : NULL;
    if (!w || (d->bias && !b))
        return NULL;
    char sx[TG_SHAPE_STR_MAX];
    if (x->ndim == 0) {
        tg_error("tg_module_forward",
                 "Linear(in_features=%lld, out_features=%lld) got a 0-d "
                 "input\n"
                 "  rule: x is (..., in_features): at least one dim, the "
                 "last one of size in_features\n"
                 "  hint: a single sample of %lld features is a (%lld,) "
                 "tensor",
                 (long long)d->in_features, (long long)d->out_features,
                 (long long)d->in_features, (long long)d->in_features);
        return NULL;
    }
    int64_t last = x->shape[x->ndim - 1];
    if (last != d->in_features) {
        tg_error("tg_module_forward",
                 "Linear(in_features=%lld, out_features=%lld) got an input "
                 "of shape %s\n"
                 "  rule: x.shape[-1] must equal in_features, but %lld != "
                 "%lld\n"
                 "  hint: the layer before must give %lld features, or "
                 "this layer must be tg_linear_new(%lld, %lld, ...)",
                 (long long)d->in_features, (long long)d->out_features,
                 tg_shape_str(x, sx), (long long)last,
                 (long long)d->in_features, (long long)d->in_features,
                 (long long)last, (long long)d->out_features);
        return NULL;
    }
    if (x->dtype != w->dtype) {
        const char *wname = w->dtype == TG_FLOAT32 ? "TG_FLOAT32"
                                                   : "TG_FLOAT64";
        char model[96] = "";
        if (tg_dtype_is_float(x->dtype))
            snprintf(model, sizeof model,
                     ", or the model with tg_module_to_dtype(model, %s)",
                     x->dtype == TG_FLOAT32 ? "TG_FLOAT32" : "TG_FLOAT64");
        tg_error("tg_module_forward",
                 "Linear's weight is %s but the input is %s\n"
                 "  rule: the input and the parameters have one dtype (as "
                 "in PyTorch, nothing is converted silently)\n"
                 "  hint: convert x with tg_to_dtype(x, %s)%s",
                 tg_dtype_name(w->dtype), tg_dtype_name(x->dtype), wname,
                 model);
        return NULL;
    }
    return tg_linear(x, w, b); // one AddmmBackward0 node
}

static const tg_module_type linear_type = {"Linear", linear_forward,
                                           linear_describe,
                                           sizeof(linear_data)};

/* PyTorch's reset_parameters: kaiming_uniform_(weight, a=sqrt(5)), whose
 * bound sqrt(3) * gain / sqrt(fan_in) with gain = sqrt(2 / (1 + a^2)) is
 * 1 / sqrt(in_features), then bias ~ U(-1/sqrt(fan_in), 1/sqrt(fan_in)).
 * tg_uniform_ rounds the bounds to float32 and draws each element as
 * fmaf(u, 2k, -k) with u the low 24 bits of one 32-bit draw, as PyTorch's
 * CPU kernel does. (In double, PyTorch's kaiming expression differs from
 * 1 / sqrt(in) in the last bit for most sizes, but the two round to the same
 * float32 bound for every in_features up to 2e7, checked in NumPy.) */
tg_module *tg_linear_new(int64_t in_features, int64_t out_features,
                         bool bias)
{
    const char *fn = "tg_linear_new";
    if (in_features < 1 || out_features < 1) {
        tg_error(fn,
                 "cannot make a Linear layer with in_features %lld and "
                 "out_features %lld\n"
                 "  rule: both sizes are >= 1 (PyTorch accepts 0 with a "
                 "warning, but the weights are then empty and the bound "
                 "1/sqrt(in_features) is infinite; tapegrad refuses)\n"
                 "  hint: in_features is x.shape[-1] of the inputs, "
                 "out_features the number of outputs, e.g. "
                 "tg_linear_new(2, 64, true)",
                 (long long)in_features, (long long)out_features);
        return NULL;
    }
    const int64_t wshape[2] = {out_features, in_features};
    if (tg_shape_check(fn, wshape, 2) < 0)
        return NULL;
    tg_module *m = tg_module_new(&linear_type);
    if (!m)
        return NULL;
    linear_data *d = tg_module_data(m);
    d->in_features = in_features;
    d->out_features = out_features;
    d->bias = bias;
    double k = 1.0 / sqrt((double)in_features);
    if (tg_module_add_uniform(m, "weight", wshape, 2, k) < 0 ||
        (bias && tg_module_add_uniform(m, "bias", &out_features, 1, k) < 0)) {
        tg_module_free(m);
        return NULL;
    }
    return m;
}

/* ------------------------------------------------------------ activations */

static tg_tensor *relu_forward(tg_module *m, const tg_tensor *x)
{
    (void)m;
    return tg_relu(x);
}

static tg_tensor *tanh_forward(tg_module *m, const tg_tensor *x)
{
    (void)m;
    return tg_tanh(x);
}

typedef struct gelu_data {
    tg_gelu_approx approx;
} gelu_data;

static tg_tensor *gelu_forward(tg_module *m, const tg_tensor *x)
{
    const gelu_data *d = tg_module_data(m);
    return tg_gelu(x, d->approx);
}

static void gelu_describe(const tg_module *m, char *buf, size_t size)
{
    const gelu_data *d = tg_module_data_const(m);
    snprintf(buf, size, "approximate='%s'",
             d->approx == TG_GELU_TANH ? "tanh" : "none");
}

static const tg_module_type relu_type = {"ReLU", relu_forward, NULL, 0};
static const tg_module_type tanh_type = {"Tanh", tanh_forward, NULL, 0};
static const tg_module_type gelu_type = {"GELU", gelu_forward, gelu_describe,
                                         sizeof(gelu_data)};

tg_module *tg_relu_new(void) { return tg_module_new(&relu_type); }
tg_module *tg_tanh_new(void) { return tg_module_new(&tanh_type); }

tg_module *tg_gelu_new(tg_gelu_approx approx)
{
    if (approx != TG_GELU_EXACT && approx != TG_GELU_TANH) {
        tg_error("tg_gelu_new",
                 "unknown approximation %d\n"
                 "  rule: approx is TG_GELU_EXACT (torch's "
                 "approximate='none') or TG_GELU_TANH ('tanh')\n"
                 "  hint: tg_gelu_new(TG_GELU_EXACT) is nn.GELU()",
                 (int)approx);
        return NULL;
    }
    tg_module *m = tg_module_new(&gelu_type);
    if (m)
        ((gelu_data *)tg_module_data(m))->approx = approx;
    return m;
}

/* ---------------------------------------------------------------- Dropout */

typedef struct dropout_data {
    double p;
} dropout_data;

static void dropout_describe(const tg_module *m, char *buf, size_t size)
{
    const dropout_data *d = tg_module_data_const(m);
    char p[32];
    snprintf(buf, size, "p=%s, inplace=False", tg_py_float(d->p, p));
}

/* The mask of one training forward, x's shape and dtype: 0 where a uniform
 * draw u < p (probability p), 1 / (1 - p) elsewhere, so that
 * E[mask] = (1 - p) / (1 - p) = 1 and E[y] = x. The scale is rounded to x's
 * dtype first, as PyTorch's noise.div_(1 - p) on a float tensor does.
 * New reference. */
static tg_tensor *dropout_mask(const tg_tensor *x, double p)
{
    tg_tensor *mask = tg_rand(x->shape, x->ndim, x->dtype); // contiguous
    if (!mask)
        return NULL;
    if (x->dtype == TG_FLOAT32) {
        float *u = tg_data_f32(mask);
        float scale = 1.0f / (float)(1.0 - p);
        for (int64_t i = 0; i < mask->numel; i++)
            u[i] = (double)u[i] < p ? 0.0f : scale;
    } else {
        double *u = tg_data_f64(mask);
        double scale = 1.0 / (1.0 - p);
        for (int64_t i = 0; i < mask->numel; i++)
            u[i] = u[i] < p ? 0.0 : scale;
    }
    return mask;
}

/* y = x * mask: the backward (MulBackward0) multiplies the gradient by the
 * same mask, so dropped elements get no gradient and kept ones get
 * 1 / (1 - p) of it. As PyTorch's CPU dropout: in eval mode, with p = 0 or
 * an empty x, the input itself is returned (a new reference to it, no
 * draws); with p = 1 the output is x * 0 (zeros, -0 for negative x) and no
 * numbers are drawn. */
static tg_tensor *dropout_forward(tg_module *m, const tg_tensor *x)
{
    const dropout_data *d = tg_module_data(m);
    if (!tg_dtype_is_float(x->dtype)) {
        char sx[TG_SHAPE_STR_MAX];
        tg_error("tg_module_forward",
                 "Dropout got an %s input of shape %s\n"
                 "  rule: dropout scales the kept elements by 1 / (1 - p), "
                 "so the input is float32 or float64\n"
                 "  hint: tg_to_dtype(x, TG_FLOAT32)",
                 tg_dtype_name(x->dtype), tg_shape_str(x, sx));
        return NULL;
    }
    if (!tg_module_is_training(m) || d->p == 0.0 || x->numel == 0)
        return tg_retain((tg_tensor *)x);
    tg_tensor *mask = d->p == 1.0 ? tg_scalar(0.0, x->dtype)
                                  : dropout_mask(x, d->p);
    tg_tensor *y = tg_mul(x, mask);
    tg_release(mask);
    return y;
}

static const tg_module_type dropout_type = {"Dropout", dropout_forward,
                                            dropout_describe,
                                            sizeof(dropout_data)};

tg_module *tg_dropout_new(double p)
{
    if (!(p >= 0.0 && p <= 1.0)) {
        char s[32];
        tg_error("tg_dropout_new",
                 "dropout probability has to be between 0 and 1, but got "
                 "%s\n"
                 "  rule: p is the probability of zeroing an element, in "
                 "[0, 1]\n"
                 "  hint: p = 0.1 drops one element in ten; PyTorch's "
                 "default is 0.5",
                 tg_py_float(p, s));
        return NULL;
    }
    tg_module *m = tg_module_new(&dropout_type);
    if (m)
        ((dropout_data *)tg_module_data(m))->p = p;
    return m;
}

/* ------------------------------------------------------------- Sequential */

/* Each child applied to the previous one's output; the intermediate
 * results are released as soon as the next child has used them (the tape
 * keeps what backward needs). No children: the input itself, as PyTorch's
 * empty nn.Sequential returns its input. */
static tg_tensor *sequential_forward(tg_module *m, const tg_tensor *x)
{
    int n = tg_module_num_children(m);
    tg_tensor *h = tg_retain((tg_tensor *)x);
    for (int i = 0; i < n && h; i++) {
        tg_tensor *next = tg_module_forward(tg_module_child_at(m, i), h);
        tg_release(h);
        h = next;
    }
    return h;
}

static const tg_module_type sequential_type = {"Sequential",
                                               sequential_forward, NULL, 0};

/* Registers child under the next index ("0", "1", ...). */
static int append_child(tg_module *seq, tg_module *child)
{
    char name[24];
    snprintf(name, sizeof name, "%d", tg_module_num_children(seq));
    return tg_module_add_child(seq, name, child);
}

tg_module *tg_sequential_new(tg_module *const *mods, int n)
{
    if (n < 0 || (n > 0 && !mods)) {
        tg_error("tg_sequential_new",
                 "got %d modules at %p\n"
                 "  rule: mods points to n >= 0 modules (mods may be NULL "
                 "only when n is 0)\n"
                 "  hint: TG_SEQUENTIAL(a, b, c) counts them for you",
                 n, (const void *)mods);
        return NULL;
    }
    tg_module *seq = tg_module_new(&sequential_type);
    /* Every module is taken, also when something fails: each one is added
     * (tg_module_add_child frees those it cannot adopt), and on failure the
     * Sequential, with all it adopted, is freed. A NULL (a constructor that
     * failed, which has reported its error) fails the whole without a
     * second message. */
    bool failed = !seq;
    for (int i = 0; i < n; i++) {
        if (seq) {
            if (!mods[i] || append_child(seq, mods[i]) < 0)
                failed = true;
            continue;
        }
        bool seen = false; // out of memory: free each module once
        for (int j = 0; j < i && !seen; j++)
            seen = mods[j] == mods[i];
        if (!seen)
            tg_module_drop(mods[i]);
    }
    if (failed) {
        tg_module_free(seq);
        return NULL;
    }
    return seq;
}

int tg_sequential_append(tg_module *seq, tg_module *child)
{
    if (!seq || !child) {
        tg_module_drop(child);
        return -1;
    }
    if (tg_module_get_type(seq) != &sequential_type) {
        const char *type = tg_module_get_type(seq)->name;
        tg_module_drop(child);
        tg_error("tg_sequential_append",
                 "cannot append to a %s\n"
                 "  rule: layers are appended to a Sequential (a child "
                 "without a parent is freed)\n"
                 "  hint: make one with tg_sequential_new(NULL, 0) or "
                 "TG_SEQUENTIAL(...), or register a child of another "
                 "module with tg_module_add_child",
                 type);
        return -1;
    }
    return append_child(seq, child);
}

/* -------------------------------------------------------------------- MLP */

/* The norm layer (not TG_NORM_NONE) of one hidden block of that width. */
static tg_module *mlp_norm(tg_norm_kind norm, int64_t width)
{
    if (norm == TG_NORM_BATCH)
        return tg_batch_norm1d_new(width, NULL);
    return tg_layer_norm_new(&width, 1, 1e-5, true);
}

static tg_module *mlp_activation(tg_activation activation)
{
    switch (activation) {
    case TG_ACT_RELU: return tg_relu_new();
    case TG_ACT_TANH: return tg_tanh_new();
    case TG_ACT_GELU: return tg_gelu_new(TG_GELU_EXACT);
    }
    return NULL;
}

/* As torchvision.ops.MLP(in_features, hidden + [out_features], norm_layer,
 * activation_layer, bias=True, dropout=0.0), without its Dropout layers
 * (p = 0 there, so they change nothing). Every argument is checked before
 * the first layer is made, so a refused call draws no random numbers. */
tg_module *tg_mlp_new(int64_t in_features, const int64_t *hidden, int nhidden,
                      int64_t out_features, tg_norm_kind norm,
                      tg_activation activation)
{
    const char *fn = "tg_mlp_new";
    if (nhidden < 0 || (nhidden > 0 && !hidden)) {
        tg_error(fn,
                 "got %d hidden widths at %p\n"
                 "  rule: hidden points to nhidden >= 0 widths (NULL only "
                 "when nhidden is 0)\n"
                 "  hint: tg_mlp_new(2, (int64_t[]){64, 64}, 2, 3, "
                 "TG_NORM_BATCH, TG_ACT_RELU) is 2 -> 64 -> 64 -> 3",
                 nhidden, (const void *)hidden);
        return NULL;
    }
    if (in_features < 1 || out_features < 1) {
        tg_error(fn,
                 "in_features is %lld and out_features %lld\n"
                 "  rule: both are >= 1\n"
                 "  hint: in_features is x.shape[-1] of the inputs, "
                 "out_features the number of outputs (classes)",
                 (long long)in_features, (long long)out_features);
        return NULL;
    }
    for (int i = 0; i < nhidden; i++)
        if (hidden[i] < 1) {
            tg_error(fn,
                     "hidden width %d is %lld\n"
                     "  rule: every hidden layer has at least one unit\n"
                     "  hint: pass nhidden = 0 for a single Linear layer",
                     i, (long long)hidden[i]);
            return NULL;
        }
    if (norm != TG_NORM_NONE && norm != TG_NORM_BATCH &&
        norm != TG_NORM_LAYER) {
        tg_error(fn,
                 "unknown norm %d\n"
                 "  rule: norm is TG_NORM_NONE, TG_NORM_BATCH or "
                 "TG_NORM_LAYER",
                 (int)norm);
        return NULL;
    }
    if (activation != TG_ACT_RELU && activation != TG_ACT_TANH &&
        activation != TG_ACT_GELU) {
        tg_error(fn,
                 "unknown activation %d\n"
                 "  rule: activation is TG_ACT_RELU, TG_ACT_TANH or "
                 "TG_ACT_GELU",
                 (int)activation);
        return NULL;
    }
    tg_module *seq = tg_sequential_new(NULL, 0);
    int64_t width = in_features;
    for (int i = 0; seq && i < nhidden; i++) {
        /* tg_sequential_append takes each layer, also a NULL from a failed
         * constructor, and then fails */
        if (tg_sequential_append(seq, tg_linear_new(width, hidden[i],
                                                    true)) < 0 ||
            (norm != TG_NORM_NONE &&
             tg_sequential_append(seq, mlp_norm(norm, hidden[i])) < 0) ||
            tg_sequential_append(seq, mlp_activation(activation)) < 0) {
            tg_module_free(seq);
            return NULL;
        }
        width = hidden[i];
    }
    if (seq && tg_sequential_append(seq, tg_linear_new(width, out_features,
                                                       true)) < 0) {
        tg_module_free(seq);
        return NULL;
    }
    return seq;
}
