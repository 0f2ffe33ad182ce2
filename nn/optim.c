/*
 * nn/optim.c - the optimisers SGD, Adam and AdamW, as torch.optim 1.13,
 * and the closed forms of two learning-rate schedules (StepLR,
 * CosineAnnealingLR).
 *
 * An optimiser is a list of parameters (retained) with their state: SGD's
 * momentum buffer, Adam's two moments and each parameter's own step count
 * (PyTorch's state['step']: a parameter that had no .grad at some step has
 * taken fewer steps, and its bias corrections say so). A step runs
 * PyTorch's single-tensor update rule (torch/optim/sgd.py, adam.py,
 * adamw.py) on the raw data: one plain loop per parameter, operations in
 * PyTorch's order, each in the parameter's dtype with the hyper-parameters
 * rounded to it as PyTorch's kernels do. PyTorch's vectorised kernels fuse
 * `a + alpha * b` into one multiply-add and this code rounds the product
 * first, so the results differ from PyTorch's in the last bits (about
 * 1e-15 relative in float64 and 1e-6 in float32 after five steps; see
 * scripts/reference/gen_optim.py).
 *
 * Not here: amsgrad, maximize, parameter groups with their own settings,
 * sparse gradients, and schedulers as objects (the schedules are functions
 * of the step; call tg_optimizer_set_lr with their value).
 */
#include "nn.h"

#include "../autograd/internal.h"
#include "internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------ the object */

typedef enum optim_kind { OPTIM_SGD, OPTIM_ADAM, OPTIM_ADAMW } optim_kind;

/* One parameter and its state. The state tensors are contiguous, of the
 * parameter's shape and dtype, made at the parameter's first step. */
typedef struct param_slot {
    tg_tensor *param;       // retained
    char name[TG_NAME_MAX]; // its dotted name in the module, or ""
    tg_tensor *buf;         // SGD: momentum buffer; Adam: exp_avg (m)
    tg_tensor *sq;          // Adam: exp_avg_sq (v)
    int64_t step;           // steps this parameter has taken
    /* During a step only: the gradient as contiguous data of the
     * parameter's dtype (the .grad itself when it already is), and a
     * contiguous copy of a non-contiguous parameter (else NULL). */
    tg_tensor *grad_work;
    tg_tensor *param_work;
} param_slot;

struct tg_optimizer {
    optim_kind kind;
    const char *fn; // "tg_sgd_new", ...: names the kind in messages
    double lr;      // of the next step; the configs' lr is not used
    tg_sgd_config sgd;
    tg_adam_config adam;
    param_slot *slots; // (n,)
    int n, cap;
    int64_t steps;
};

tg_sgd_config tg_sgd_config_defaults(void)
{
    return (tg_sgd_config){.lr = 1e-3, .momentum = 0.0, .dampening = 0.0,
                           .weight_decay = 0.0, .nesterov = false};
}

tg_adam_config tg_adam_config_defaults(void)
{
    return (tg_adam_config){.lr = 1e-3, .beta1 = 0.9, .beta2 = 0.999,
                            .eps = 1e-8, .weight_decay = 0.0};
}

tg_adam_config tg_adamw_config_defaults(void)
{
    tg_adam_config c = tg_adam_config_defaults();
    c.weight_decay = 1e-2;
    return c;
}

/* config with every field left 0 replaced by d's (and TG_EXACT_ZERO by a
 * plain 0); NULL: d. */
static tg_sgd_config sgd_resolve(const tg_sgd_config *config)
{
    tg_sgd_config d = tg_sgd_config_defaults();
    if (!config)
        return d;
    tg_sgd_config c = *config;
    c.lr = tg_option_or(c.lr, d.lr);
    c.momentum = tg_option_or(c.momentum, d.momentum);
    c.dampening = tg_option_or(c.dampening, d.dampening);
    c.weight_decay = tg_option_or(c.weight_decay, d.weight_decay);
    return c;
}

static tg_adam_config adam_resolve(const tg_adam_config *config,
                                   tg_adam_config d)
{
    if (!config)
        return d;
    tg_adam_config c = *config;
    c.lr = tg_option_or(c.lr, d.lr);
    c.beta1 = tg_option_or(c.beta1, d.beta1);
    c.beta2 = tg_option_or(c.beta2, d.beta2);
    c.eps = tg_option_or(c.eps, d.eps);
    c.weight_decay = tg_option_or(c.weight_decay, d.weight_decay);
    return c;
}

/* ------------------------------------------------------ hyper-parameters */

/* False (with an error) unless lr >= 0. NaN fails too. */
static bool lr_ok(const char *fn, double lr)
{
    if (lr >= 0.0)
        return true;
    char v[32];
    tg_error(fn,
             "invalid learning rate %s\n"
             "  rule: lr >= 0 (PyTorch: \"Invalid learning rate\")\n"
             "  hint: common starting points are 0.1 to 0.01 for SGD and "
             "1e-3 for Adam",
             tg_py_float(lr, v));
    return false;
}

/* False (with an error) unless value >= 0. */
static bool non_negative(const char *fn, const char *what, double value,
                         const char *hint)
{
    if (value >= 0.0)
        return true;
    char v[32];
    tg_error(fn,
             "invalid %s value %s\n"
             "  rule: %s >= 0 (PyTorch: \"Invalid %s value\")\n"
             "  hint: %s",
             what, tg_py_float(value, v), what, what, hint);
    return false;
}

static bool sgd_config_ok(const char *fn, const tg_sgd_config *c)
{
    if (!lr_ok(fn, c->lr) ||
        !non_negative(fn, "momentum", c->momentum,
                      "0 means plain SGD; 0.9 is the usual momentum") ||
        !non_negative(fn, "weight_decay", c->weight_decay,
                      "0 means none; it adds weight_decay * p to the "
                      "gradient"))
        return false;
    if (isnan(c->dampening)) {
        tg_error(fn,
                 "dampening is nan\n"
                 "  rule: dampening is a number: each new gradient enters "
                 "the momentum buffer scaled by 1 - dampening\n"
                 "  hint: PyTorch's default is 0");
        return false;
    }
    if (c->nesterov && (c->momentum <= 0.0 || c->dampening != 0.0)) {
        char m[32], d[32];
        tg_error(fn,
                 "nesterov with momentum %s and dampening %s\n"
                 "  rule: Nesterov momentum requires a momentum and zero "
                 "dampening (as PyTorch)\n"
                 "  hint: set momentum > 0 (0.9, say) and dampening 0, or "
                 "nesterov false",
                 tg_py_float(c->momentum, m), tg_py_float(c->dampening, d));
        return false;
    }
    return true;
}

/* False (with an error) unless beta is in [0, 1). */
static bool beta_ok(const char *fn, int index, double beta)
{
    if (beta >= 0.0 && beta < 1.0)
        return true;
    char v[32];
    tg_error(fn,
             "invalid beta%d %s\n"
             "  rule: 0 <= beta%d < 1 (PyTorch: \"Invalid beta parameter at "
             "index %d\")\n"
             "  hint: the defaults are beta1 0.9 and beta2 0.999; a beta "
             "of 1 would never let a gradient in",
             index + 1, tg_py_float(beta, v), index + 1, index);
    return false;
}

static bool adam_config_ok(const char *fn, const tg_adam_config *c)
{
    return lr_ok(fn, c->lr) &&
           non_negative(fn, "epsilon", c->eps,
                        "1e-8 is the default; eps keeps the step finite "
                        "where the second moment is 0") &&
           beta_ok(fn, 0, c->beta1) && beta_ok(fn, 1, c->beta2) &&
           non_negative(fn, "weight_decay", c->weight_decay,
                        "0 means none");
}

/* -------------------------------------------------------------- creation */

static tg_optimizer *optimizer_alloc(const char *fn, optim_kind kind,
                                     double lr)
{
    tg_optimizer *opt = tg_calloc(1, sizeof *opt);
    if (!opt) {
        tg_error(fn, "out of memory");
        return NULL;
    }
    opt->kind = kind;
    opt->fn = fn;
    opt->lr = lr;
    return opt;
}

static int add_parameter(const char *fn, tg_optimizer *opt, tg_tensor *p,
                         const char *name);

/* Adds every parameter of m (each tensor once, in named_parameters order);
 * frees opt and returns NULL on error. m NULL adds nothing. */
static tg_optimizer *add_module(tg_optimizer *opt, const tg_module *m)
{
    if (!opt || !m)
        return opt;
    int n = tg_module_named_parameters(m, NULL, 0);
    tg_named_tensor *list = n > 0 ? tg_malloc((size_t)n * sizeof *list) : NULL;
    if (n < 0 || (n > 0 && !list)) {
        if (n >= 0)
            tg_error(opt->fn, "out of memory listing the module's %d "
                              "parameters", n);
        free(list);
        tg_optimizer_free(opt);
        return NULL;
    }
    if (n > 0 && tg_module_named_parameters(m, list, n) != n)
        n = -1;
    for (int i = 0; i < n; i++)
        if (add_parameter(opt->fn, opt, list[i].tensor, list[i].name) < 0)
            n = -1;
    free(list);
    if (n < 0) {
        tg_optimizer_free(opt);
        return NULL;
    }
    return opt;
}

tg_optimizer *tg_sgd_new(const tg_module *m, const tg_sgd_config *config)
{
    const char *fn = "tg_sgd_new";
    tg_sgd_config c = sgd_resolve(config);
    if (!sgd_config_ok(fn, &c))
        return NULL;
    tg_optimizer *opt = optimizer_alloc(fn, OPTIM_SGD, c.lr);
    if (opt)
        opt->sgd = c;
    return add_module(opt, m);
}

static tg_optimizer *adam_new(const char *fn, optim_kind kind,
                              const tg_module *m, const tg_adam_config *c)
{
    if (!adam_config_ok(fn, c))
        return NULL;
    tg_optimizer *opt = optimizer_alloc(fn, kind, c->lr);
    if (opt)
        opt->adam = *c;
    return add_module(opt, m);
}

tg_optimizer *tg_adam_new(const tg_module *m, const tg_adam_config *config)
{
    tg_adam_config c = adam_resolve(config, tg_adam_config_defaults());
    return adam_new("tg_adam_new", OPTIM_ADAM, m, &c);
}

tg_optimizer *tg_adamw_new(const tg_module *m, const tg_adam_config *config)
{
    tg_adam_config c = adam_resolve(config, tg_adamw_config_defaults());
    return adam_new("tg_adamw_new", OPTIM_ADAMW, m, &c);
}

/* Checks p (a float leaf that requires grad) and appends it unless it is
 * there already; errors name fn. */
static int add_parameter(const char *fn, tg_optimizer *opt, tg_tensor *p,
                         const char *name)
{
    char s[TG_SHAPE_STR_MAX];
    if (!tg_dtype_is_float(p->dtype)) {
        tg_error(fn,
                 "cannot optimise an %s tensor of shape %s\n"
                 "  rule: parameters are float32 or float64\n"
                 "  hint: make it with a float dtype, or convert it with "
                 "tg_to_dtype(p, TG_FLOAT32) and optimise the result",
                 tg_dtype_name(p->dtype), tg_shape_str(p, s));
        return -1;
    }
    if (!tg_is_leaf(p)) {
        tg_error(fn,
                 "cannot optimise a tensor made by %s (shape %s)\n"
                 "  rule: parameters are leaves (PyTorch: \"can't optimize "
                 "a non-leaf Tensor\"): a step changes them in place, and "
                 "a tensor computed from others is recomputed, not "
                 "trained\n"
                 "  hint: optimise the leaf it was computed from, or make "
                 "a leaf with tg_detach(p) and tg_set_requires_grad",
                 tg_grad_fn_name(p), tg_shape_str(p, s));
        return -1;
    }
    if (!p->requires_grad) {
        tg_error(fn,
                 "the tensor of shape %s does not require grad\n"
                 "  rule: a parameter requires grad, so that backward "
                 "gives it the .grad a step uses\n"
                 "  hint: tg_set_requires_grad(p, true) first",
                 tg_shape_str(p, s));
        return -1;
    }
    int d = tg_expanded_dim(p);
    if (d >= 0) {
        tg_error(fn,
                 "cannot optimise an expanded view of shape %s (dim %d has "
                 "stride 0)\n"
                 "  rule: a step writes each element of a parameter, and "
                 "the elements of an expanded view share memory\n"
                 "  hint: optimise tg_contiguous(p) made a leaf, or the "
                 "tensor it was expanded from",
                 tg_shape_str(p, s), d);
        return -1;
    }
    for (int i = 0; i < opt->n; i++)
        if (opt->slots[i].param == p)
            return 0; // already there: stepped once
    if (opt->n == opt->cap) {
        int cap = opt->cap ? 2 * opt->cap : 8;
        param_slot *slots = tg_realloc(opt->slots, (size_t)cap * sizeof *slots);
        if (!slots) {
            tg_error(fn, "out of memory");
            return -1;
        }
        opt->slots = slots;
        opt->cap = cap;
    }
    param_slot *slot = &opt->slots[opt->n++];
    memset(slot, 0, sizeof *slot);
    slot->param = tg_retain(p);
    snprintf(slot->name, sizeof slot->name, "%s", name);
    return 0;
}

int tg_optimizer_add_parameter(tg_optimizer *opt, tg_tensor *p)
{
    if (!opt || !p)
        return -1;
    tg_check_alive("tg_optimizer_add_parameter", p);
    return add_parameter("tg_optimizer_add_parameter", opt, p, "");
}

void tg_optimizer_free(tg_optimizer *opt)
{
    if (!opt)
        return;
    for (int i = 0; i < opt->n; i++) {
        tg_release(opt->slots[i].param);
        tg_release(opt->slots[i].buf);
        tg_release(opt->slots[i].sq);
    }
    free(opt->slots);
    free(opt);
}

/* ----------------------------------------------------------- the kernels */
/*
 * Each kernel updates n contiguous elements of one parameter p with its
 * gradient g and state, in the parameter's type T: the hyper-parameters
 * are rounded to T first, as PyTorch's kernels round a Python float
 * scalar to the tensor's dtype. One element at a time, the loop is the
 * rule's tensor operations fused, each rounded as the tensor op would be.
 */

/* SGD's numbers for one step. */
typedef struct sgd_rule {
    double lr, momentum, dampening, weight_decay;
    bool nesterov;
    bool first; // the parameter's first step: the buffer starts as g
} sgd_rule;

/* torch/optim/sgd.py, _single_tensor_sgd, per element:
 *   d = g + weight_decay * p                      (if weight_decay != 0)
 *   buf = d at the first step,
 *   else buf = momentum * buf + (1 - dampening) * d (if momentum != 0)
 *   d = d + momentum * buf (nesterov) or d = buf   (if momentum != 0)
 *   p = p - lr * d                                                     */
#define SGD_KERNEL(name, T)                                                 \
    static void name(T *p, const T *g, T *buf, int64_t n,                   \
                     const sgd_rule *r)                                     \
    {                                                                       \
        const T wd = (T)r->weight_decay, mom = (T)r->momentum;              \
        const T keep = (T)(1.0 - r->dampening), neg_lr = (T)(-r->lr);       \
        const bool decay = r->weight_decay != 0.0;                          \
        const bool momentum = r->momentum != 0.0;                           \
        const bool first = r->first, nesterov = r->nesterov;                \
        /* The two common rules as loops of their own, without the tests   \
         * that keep the general loop from vectorising: the same           \
         * operations per element, so the same results. */                 \
        if (!decay && !momentum) {                                          \
            for (int64_t i = 0; i < n; i++)                                 \
                p[i] = p[i] + neg_lr * g[i];                                \
            return;                                                         \
        }                                                                   \
        if (!decay && momentum && !first && !nesterov) {                    \
            for (int64_t i = 0; i < n; i++) {                               \
                buf[i] = buf[i] * mom + keep * g[i];                        \
                p[i] = p[i] + neg_lr * buf[i];                              \
            }                                                               \
            return;                                                         \
        }                                                                   \
        for (int64_t i = 0; i < n; i++) {                                   \
            T d = g[i];                                                     \
            if (decay)                                                      \
                d = d + wd * p[i];                                          \
            if (momentum) {                                                 \
                buf[i] = first ? d : buf[i] * mom + keep * d;               \
                d = nesterov ? d + mom * buf[i] : buf[i];                   \
            }                                                               \
            p[i] = p[i] + neg_lr * d;                                       \
        }                                                                   \
    }
SGD_KERNEL(sgd_f32, float)
SGD_KERNEL(sgd_f64, double)

/* Adam's numbers for one step of one parameter (its step count t). */
typedef struct adam_rule {
    double beta1, beta2, eps, weight_decay;
    bool decoupled;        // AdamW
    double decay;          // AdamW: 1 - lr * weight_decay
    double neg_step_size;  // -lr / (1 - beta1^t)
    double bias2_sqrt;     // sqrt(1 - beta2^t)
} adam_rule;

/* torch/optim/adam.py and adamw.py, _single_tensor_adam(w), per element,
 * with t the parameter's step count (1 at its first step):
 *   p = p * (1 - lr * weight_decay)              (AdamW)
 *   g = g + weight_decay * p                     (Adam, if weight_decay != 0)
 *   m = beta1 * m + (1 - beta1) * g
 *   v = beta2 * v + (1 - beta2) * g * g
 *   denom = sqrt(v) / sqrt(1 - beta2^t) + eps    (eps after the correction)
 *   p = p - lr / (1 - beta1^t) * m / denom
 * m / (1 - beta1^t) and v / (1 - beta2^t) are the bias-corrected moments:
 * both start at 0, so early averages are too small by exactly that
 * factor. */
#define ADAM_KERNEL(name, T, SQRT)                                          \
    static void name(T *p, const T *g, T *m, T *v, int64_t n,               \
                     const adam_rule *r)                                    \
    {                                                                       \
        const T beta1 = (T)r->beta1, beta2 = (T)r->beta2;                   \
        const T one_minus_beta1 = (T)(1.0 - r->beta1);                      \
        const T one_minus_beta2 = (T)(1.0 - r->beta2);                      \
        const T wd = (T)r->weight_decay, decay = (T)r->decay;               \
        const T eps = (T)r->eps, bias2_sqrt = (T)r->bias2_sqrt;             \
        const T neg_step_size = (T)r->neg_step_size;                        \
        const bool decoupled = r->decoupled;                                \
        const bool l2 = !decoupled && r->weight_decay != 0.0;               \
        for (int64_t i = 0; i < n; i++) {                                   \
            T pi = p[i], gi = g[i];                                         \
            if (decoupled)                                                  \
                pi = pi * decay;                                            \
            else if (l2)                                                    \
                gi = gi + wd * pi;                                          \
            m[i] = m[i] * beta1 + one_minus_beta1 * gi;                     \
            v[i] = v[i] * beta2 + (one_minus_beta2 * gi) * gi;              \
            T denom = SQRT(v[i]) / bias2_sqrt + eps;                        \
            p[i] = pi + (neg_step_size * m[i]) / denom;                     \
        }                                                                   \
    }
ADAM_KERNEL(adam_f32, float, sqrtf)
ADAM_KERNEL(adam_f64, double, sqrt)

/* ----------------------------------------------------------------- a step */

/* Zeros of p's shape and dtype for a state tensor; NULL (with an error
 * naming fn) when out of memory. */
static tg_tensor *state_new(const char *fn, const tg_tensor *p)
{
    tg_tensor *t = tg_zeros(p->shape, p->ndim, p->dtype);
    if (!t)
        tg_error(fn, "out of memory for the optimiser's state");
    return t;
}

/* "parameter 2 ("0.bias")" or "parameter 2" into buf. */
static const char *slot_label(const tg_optimizer *opt, int i, char *buf,
                              size_t size)
{
    if (opt->slots[i].name[0])
        snprintf(buf, size, "parameter %d (\"%s\")", i, opt->slots[i].name);
    else
        snprintf(buf, size, "parameter %d", i);
    return buf;
}

/* The .grad of every parameter that has one has its parameter's shape and
 * dtype. -1 with an error naming the first that does not. */
static int check_grads(const tg_optimizer *opt, const char *fn)
{
    for (int i = 0; i < opt->n; i++) {
        const tg_tensor *p = opt->slots[i].param, *g = p->grad;
        if (!g || (g->dtype == p->dtype && tg_same_shape(g, p)))
            continue;
        char label[TG_NAME_MAX + 32], ps[TG_SHAPE_STR_MAX],
            gs[TG_SHAPE_STR_MAX];
        tg_error(fn,
                 "the .grad of %s is %s %s but the parameter is %s %s\n"
                 "  rule: a gradient has its parameter's shape and dtype; "
                 "no parameter was changed\n"
                 "  hint: a .grad set by hand must match; tg_clear_grad(p) "
                 "and a backward make a right one",
                 slot_label(opt, i, label, sizeof label),
                 tg_dtype_name(g->dtype), tg_shape_str(g, gs),
                 tg_dtype_name(p->dtype), tg_shape_str(p, ps));
        return -1;
    }
    return 0;
}

/* Makes the state and the contiguous work tensors of every parameter that
 * has a .grad: everything that can fail, before any parameter changes. */
static int prepare(tg_optimizer *opt, const char *fn)
{
    bool sgd = opt->kind == OPTIM_SGD;
    bool needs_buf = !sgd || opt->sgd.momentum != 0.0;
    for (int i = 0; i < opt->n; i++) {
        param_slot *s = &opt->slots[i];
        tg_tensor *p = s->param;
        if (!p->grad)
            continue;
        if ((needs_buf && !s->buf && !(s->buf = state_new(fn, p))) ||
            (!sgd && !s->sq && !(s->sq = state_new(fn, p))))
            return -1;
        s->grad_work = tg_contiguous_as(p->grad, p->dtype);
        if (!tg_is_contiguous(p))
            s->param_work = tg_contiguous_as(p, p->dtype);
        if (!s->grad_work || (!tg_is_contiguous(p) && !s->param_work)) {
            tg_error(fn, "out of memory");
            return -1;
        }
    }
    return 0;
}

static void release_work(tg_optimizer *opt)
{
    for (int i = 0; i < opt->n; i++) {
        tg_release(opt->slots[i].grad_work);
        tg_release(opt->slots[i].param_work);
        opt->slots[i].grad_work = opt->slots[i].param_work = NULL;
    }
}

/* After a failed prepare: the state made for parameters that have not
 * stepped yet goes too (it is zeros, made again at their first step), so
 * a failed step leaves the optimiser as it was and gives the memory back. */
static void release_fresh_state(tg_optimizer *opt)
{
    for (int i = 0; i < opt->n; i++) {
        param_slot *s = &opt->slots[i];
        if (s->step > 0)
            continue;
        tg_release(s->buf);
        tg_release(s->sq);
        s->buf = s->sq = NULL;
    }
}

/* One parameter's update on contiguous data (the parameter's own, or the
 * copy of a non-contiguous one). */
static void update(const tg_optimizer *opt, param_slot *s, tg_tensor *target)
{
    bool f32 = target->dtype == TG_FLOAT32;
    void *p = tg_base_ptr(target);
    const void *g = tg_base_ptr(s->grad_work);
    void *buf = s->buf ? tg_base_ptr(s->buf) : NULL;
    int64_t n = target->numel;
    s->step++;
    if (opt->kind == OPTIM_SGD) {
        sgd_rule r = {opt->lr, opt->sgd.momentum, opt->sgd.dampening,
                      opt->sgd.weight_decay, opt->sgd.nesterov,
                      s->step == 1};
        if (f32)
            sgd_f32(p, g, buf, n, &r);
        else
            sgd_f64(p, g, buf, n, &r);
        return;
    }
    /* The scalars PyTorch computes in Python, in double. */
    const tg_adam_config *c = &opt->adam;
    double t = (double)s->step;
    adam_rule r = {c->beta1, c->beta2, c->eps, c->weight_decay,
                   opt->kind == OPTIM_ADAMW, 1.0 - opt->lr * c->weight_decay,
                   -(opt->lr / (1.0 - pow(c->beta1, t))),
                   sqrt(1.0 - pow(c->beta2, t))};
    void *sq = tg_base_ptr(s->sq);
    if (f32)
        adam_f32(p, g, buf, sq, n, &r);
    else
        adam_f64(p, g, buf, sq, n, &r);
}

int tg_optimizer_step(tg_optimizer *opt)
{
    const char *fn = "tg_optimizer_step";
    if (!opt)
        return -1;
    if (check_grads(opt, fn) < 0)
        return -1;
    if (prepare(opt, fn) < 0) {
        release_work(opt);
        release_fresh_state(opt);
        return -1;
    }
    /* Nothing can fail from here on. The writes bypass the tape, as
     * PyTorch's step runs under no_grad, and bump the storage version as
     * every in-place write does, so a backward that saved a parameter
     * before this step refuses to run with the new values. */
    for (int i = 0; i < opt->n; i++) {
        param_slot *s = &opt->slots[i];
        if (!s->grad_work)
            continue;
        if (!s->param_work) {
            update(opt, s, s->param);
            s->param->storage->version++;
            continue;
        }
        update(opt, s, s->param_work);
        /* A fresh contiguous copy into a parameter that is not expanded
         * (add_parameter refuses those): no memory, no failure. */
        tg_copy_unchecked(s->param, s->param_work);
        s->param->storage->version++;
    }
    release_work(opt);
    opt->steps++;
    return 0;
}

/* ------------------------------------------------------------ the rest */

void tg_optimizer_zero_grad(tg_optimizer *opt)
{
    if (!opt)
        return;
    for (int i = 0; i < opt->n; i++)
        tg_zero_grad(opt->slots[i].param);
}

double tg_optimizer_lr(const tg_optimizer *opt)
{
    return opt ? opt->lr : NAN;
}

int tg_optimizer_set_lr(tg_optimizer *opt, double lr)
{
    if (!opt || !lr_ok("tg_optimizer_set_lr", lr))
        return -1;
    opt->lr = lr;
    return 0;
}

int64_t tg_optimizer_steps(const tg_optimizer *opt)
{
    return opt ? opt->steps : -1;
}

/* ------------------------------------------------------------- schedules */

/* StepLR's closed form (its _get_closed_form_lr). torch's scheduler.step()
 * multiplies the current rate by gamma at each multiple of step_size
 * instead, so after k decays PyTorch's rate can differ from this one in
 * the last bit or two (0.1 * 0.1 * 0.1 is not 0.1 * 0.1^2 in double). */
double tg_lr_step(double base_lr, int64_t t, int64_t step_size, double gamma)
{
    const char *fn = "tg_lr_step";
    if (t < 0 || step_size < 1) {
        tg_error(fn,
                 "t is %lld and step_size %lld\n"
                 "  rule: t >= 0 (steps or epochs done) and step_size >= 1\n"
                 "  hint: tg_lr_step(0.1, epoch, 30, 0.1) divides the rate "
                 "by 10 every 30 epochs",
                 (long long)t, (long long)step_size);
        return NAN;
    }
    if (!(base_lr >= 0 && gamma >= 0) || isinf(base_lr) || isinf(gamma)) {
        tg_error(fn,
                 "base_lr is %g and gamma %g\n"
                 "  rule: both are finite and >= 0\n"
                 "  hint: gamma 0.1 divides the rate by 10 at each step of "
                 "the schedule",
                 base_lr, gamma);
        return NAN;
    }
    return base_lr * pow(gamma, (double)(t / step_size));
}

/* CosineAnnealingLR's closed form, the formula of its documentation
 * (eta_min + (base - eta_min) (1 + cos(pi t / T_max)) / 2), evaluated in
 * the same order as torch's _get_closed_form_lr. Two differences from
 * torch's scheduler.step(): it updates the rate recursively from the
 * previous one, which equals this formula only up to rounding (about 1e-16
 * relative); and beyond t_max it follows the cosine back up (period
 * 2 t_max) where this stays at eta_min. */
double tg_lr_cosine(double base_lr, int64_t t, int64_t t_max, double eta_min)
{
    const char *fn = "tg_lr_cosine";
    if (t < 0 || t_max < 1) {
        tg_error(fn,
                 "t is %lld and t_max %lld\n"
                 "  rule: t >= 0 (steps or epochs done) and t_max >= 1 "
                 "(the steps of the half cosine)\n"
                 "  hint: tg_lr_cosine(1e-3, step, total_steps, 0) anneals "
                 "to 0 over a whole run",
                 (long long)t, (long long)t_max);
        return NAN;
    }
    if (!(base_lr >= 0 && eta_min >= 0) || isinf(base_lr) || isinf(eta_min)) {
        tg_error(fn,
                 "base_lr is %g and eta_min %g\n"
                 "  rule: both are finite and >= 0\n"
                 "  hint: eta_min is the rate at the end, often 0",
                 base_lr, eta_min);
        return NAN;
    }
    if (t >= t_max)
        return eta_min;
    const double pi = 3.14159265358979323846; // Python's math.pi
    return eta_min +
           (base_lr - eta_min) * (1.0 + cos(pi * (double)t / (double)t_max)) /
               2.0;
}

/* ------------------------------------------------------------ checkpoints */
/*
 * An optimiser's state as a folder of .npy files, written atomically by
 * the writer of tg_module_save (nn/checkpoint.c):
 *   header.npy   int64 (4,): format 1, kind (0 SGD, 1 Adam, 2 AdamW),
 *                number of parameters, steps taken
 *   lr.npy       float64 0-d: the learning rate of the next step
 *   params.npy   int64 (n, 2 + TG_MAX_DIMS): each parameter's dtype
 *                (0 float32, 1 float64), ndim and shape, to refuse a state
 *                of other parameters
 *   <i>.step.npy int64 0-d: the steps parameter i has taken
 *   <i>.momentum_buffer.npy (SGD), <i>.exp_avg.npy and <i>.exp_avg_sq.npy
 *                (Adam, AdamW): the state, when parameter i has stepped
 * The hyper-parameters other than lr are the optimiser's own: make it
 * with the same config. Parameters are matched by position, in the order
 * they were added (a module's named_parameters order).
 */

#define STATE_FORMAT 1

static const char *const KIND_NAMES[] = {"SGD", "Adam", "AdamW"};

static int add_item(tg_named_tensor *items, int *n, tg_tensor *t,
                    const char *fmt, int i)
{
    if (!t)
        return -1;
    snprintf(items[*n].name, sizeof items[*n].name, fmt, i);
    items[(*n)++].tensor = t;
    return 0;
}

int tg_optimizer_save(const tg_optimizer *opt, const char *dir)
{
    const char *fn = "tg_optimizer_save";
    if (!opt)
        return -1;
    int cap = 3 + 3 * opt->n, n = 0;
    tg_named_tensor *items = tg_calloc((size_t)cap, sizeof *items);
    int64_t *table = tg_calloc((size_t)(opt->n > 0 ? opt->n : 1),
                               (2 + TG_MAX_DIMS) * sizeof *table);
    int rc = items && table ? 0 : -1;
    if (rc < 0)
        tg_error(fn, "out of memory for the state of %d parameters",
                 opt->n);
    int64_t header[4] = {STATE_FORMAT, opt->kind, opt->n, opt->steps};
    for (int i = 0; rc == 0 && i < opt->n; i++) {
        const tg_tensor *p = opt->slots[i].param;
        int64_t *row = table + i * (2 + TG_MAX_DIMS);
        row[0] = p->dtype;
        row[1] = p->ndim;
        memcpy(row + 2, p->shape, (size_t)p->ndim * sizeof *row);
    }
    if (rc == 0)
        rc = add_item(items, &n,
                      tg_from_array(header, TG_SHAPE(4), TG_INT64),
                      "header", 0) |
             add_item(items, &n, tg_scalar(opt->lr, TG_FLOAT64), "lr", 0) |
             add_item(items, &n,
                      tg_from_array(table,
                                    TG_SHAPE(opt->n, 2 + TG_MAX_DIMS),
                                    TG_INT64),
                      "params", 0);
    const char *buf_name = opt->kind == OPTIM_SGD ? "%d.momentum_buffer"
                                                  : "%d.exp_avg";
    for (int i = 0; rc == 0 && i < opt->n; i++) {
        const param_slot *s = &opt->slots[i];
        rc |= add_item(items, &n, tg_scalar((double)s->step, TG_INT64),
                       "%d.step", i);
        if (s->step > 0 && s->buf)
            rc |= add_item(items, &n, tg_retain(s->buf), buf_name, i);
        if (s->step > 0 && s->sq)
            rc |= add_item(items, &n, tg_retain(s->sq), "%d.exp_avg_sq", i);
    }
    if (rc == 0)
        rc = tg_checkpoint_write(fn, dir, items, n);
    for (int i = 0; i < n; i++)
        tg_release(items[i].tensor);
    free(items);
    free(table);
    return rc;
}

/* <dir>/<name>.npy read (new reference), or NULL with an error naming
 * what is missing or wrong. */
static tg_tensor *read_state(const char *fn, const char *dir,
                             const char *name)
{
    size_t size = strlen(dir) + strlen(name) + 6;
    char *path = tg_malloc(size);
    if (!path) {
        tg_error(fn, "out of memory for a file name");
        return NULL;
    }
    snprintf(path, size, "%s/%s.npy", dir, name);
    tg_error_handler h = tg_set_error_handler(tg_error_handler_quiet);
    tg_tensor *t = tg_load_npy(path);
    tg_set_error_handler(h);
    if (!t) {
        char why[1536];
        const char *msg = tg_last_error();
        if (strncmp(msg, "tg_load_npy: ", 13) == 0)
            msg += 13; // said once, as ours
        snprintf(why, sizeof why, "%s", msg);
        tg_error(fn,
                 "cannot read %s of the optimiser state in '%s': %s\n"
                 "  rule: the folder holds what tg_optimizer_save wrote\n"
                 "  hint: check the path; a model checkpoint "
                 "(tg_module_save) is another folder",
                 name, dir, why);
    }
    free(path);
    return t;
}

/* Whether t is an int64 tensor of n elements (NULL: no, quietly). */
static bool int64_of(const tg_tensor *t, int64_t n)
{
    return t && t->dtype == TG_INT64 && t->numel == n;
}

static int state_mismatch(const char *fn, const char *dir, const char *what,
                          const char *hint)
{
    tg_error(fn,
             "the optimiser state in '%s' does not fit: %s\n"
             "  rule: a state is loaded into an optimiser of the same kind, "
             "over parameters of the same count, shapes and dtypes, in the "
             "same order\n"
             "  hint: %s",
             dir, what, hint);
    return -1;
}

/* Reads and checks every file of the state before anything changes. */
static int state_read(const char *fn, const tg_optimizer *opt,
                      const char *dir, tg_tensor **loaded, double *lr,
                      int64_t *steps)
{
    char what[512];
    tg_tensor *header = read_state(fn, dir, "header");
    tg_tensor *lrt = header ? read_state(fn, dir, "lr") : NULL;
    tg_tensor *table = lrt ? read_state(fn, dir, "params") : NULL;
    int rc = table ? 0 : -1;
    const int64_t *h = rc == 0 && int64_of(header, 4)
                           ? (const int64_t *)tg_base_ptr(header)
                           : NULL;
    if (rc == 0 && (!h || h[0] != STATE_FORMAT || h[1] < 0 || h[1] > 2 ||
                    lrt->dtype != TG_FLOAT64 || lrt->numel != 1)) {
        rc = state_mismatch(fn, dir, "its header is not one tg_optimizer_save "
                                     "writes",
                            "was it written by tg_optimizer_save?");
    } else if (rc == 0 && h[1] != opt->kind) {
        snprintf(what, sizeof what, "it is the state of %s, this optimiser "
                                    "is %s",
                 KIND_NAMES[h[1]], KIND_NAMES[opt->kind]);
        rc = state_mismatch(fn, dir, what,
                            "make the optimiser of the kind saved "
                            "(tg_sgd_new, tg_adam_new, tg_adamw_new)");
    } else if (rc == 0 && (h[2] != opt->n ||
                           !int64_of(table, opt->n * (2 + TG_MAX_DIMS)))) {
        snprintf(what, sizeof what, "it has %lld parameters, this "
                                    "optimiser has %d",
                 (long long)h[2], opt->n);
        rc = state_mismatch(fn, dir, what,
                            "make the optimiser over the same model, after "
                            "tg_module_to_dtype if the saved one was");
    }
    for (int i = 0; rc == 0 && i < opt->n; i++) {
        const tg_tensor *p = opt->slots[i].param;
        const int64_t *row =
            (const int64_t *)tg_base_ptr(table) + i * (2 + TG_MAX_DIMS);
        bool same = row[0] == p->dtype && row[1] == p->ndim;
        for (int d = 0; same && d < p->ndim; d++)
            same = row[2 + d] == p->shape[d];
        if (!same) {
            char label[TG_NAME_MAX + 32], ps[TG_SHAPE_STR_MAX];
            snprintf(what, sizeof what, "%s is %s %s, the saved one is not "
                                        "(dtype %lld, %lld dims)",
                     slot_label(opt, i, label, sizeof label),
                     tg_dtype_name(p->dtype), tg_shape_str(p, ps),
                     (long long)row[0], (long long)row[1]);
            rc = state_mismatch(fn, dir, what,
                                "build the model with the same layers, "
                                "sizes and dtype as the one saved");
        }
    }
    const char *buf_name = opt->kind == OPTIM_SGD ? "%d.momentum_buffer"
                                                  : "%d.exp_avg";
    for (int i = 0; rc == 0 && i < opt->n; i++) {
        const tg_tensor *p = opt->slots[i].param;
        char name[64];
        snprintf(name, sizeof name, "%d.step", i);
        tg_tensor *st = read_state(fn, dir, name);
        int64_t step = int64_of(st, 1) ? *(const int64_t *)tg_base_ptr(st)
                                       : -1;
        tg_release(st);
        if (!st || step < 0) {
            if (st)
                rc = state_mismatch(fn, dir, "a step count is not a "
                                             "count", "was it written by "
                                             "tg_optimizer_save?");
            rc = -1;
            break;
        }
        loaded[3 * i] = tg_scalar((double)step, TG_INT64);
        bool want_buf = step > 0 && (opt->kind != OPTIM_SGD ||
                                     opt->sgd.momentum != 0.0);
        for (int k = 1; rc == 0 && k <= 2; k++) {
            if (!want_buf || (k == 2 && opt->kind == OPTIM_SGD))
                continue;
            snprintf(name, sizeof name, k == 1 ? buf_name : "%d.exp_avg_sq",
                     i);
            tg_tensor *t = read_state(fn, dir, name);
            if (!t) {
                rc = -1;
            } else if (t->dtype != p->dtype || !tg_same_shape(t, p)) {
                tg_release(t);
                snprintf(what, sizeof what, "%s does not have its "
                                            "parameter's shape and dtype",
                         name);
                rc = state_mismatch(fn, dir, what, "was it written by "
                                                   "tg_optimizer_save?");
            } else {
                loaded[3 * i + k] = t;
            }
        }
    }
    if (rc == 0) {
        *lr = tg_item(lrt);
        *steps = h[3];
    }
    tg_release(header);
    tg_release(lrt);
    tg_release(table);
    return rc;
}

int tg_optimizer_load(tg_optimizer *opt, const char *dir)
{
    const char *fn = "tg_optimizer_load";
    if (!opt)
        return -1;
    if (!dir || !*dir) {
        tg_error(fn, "the folder name is %s\n"
                     "  rule: the state is a folder of .npy files\n"
                     "  hint: tg_optimizer_load(opt, \"ckpt/optim\")",
                 dir ? "empty" : "NULL");
        return -1;
    }
    tg_tensor **loaded =
        tg_calloc((size_t)(3 * opt->n + 1), sizeof *loaded);
    if (!loaded) {
        tg_error(fn, "out of memory for the state of %d parameters",
                 opt->n);
        return -1;
    }
    double lr = 0.0;
    int64_t steps = 0;
    int rc = state_read(fn, opt, dir, loaded, &lr, &steps);
    for (int i = 0; rc == 0 && i < opt->n; i++) {
        param_slot *s = &opt->slots[i];
        s->step = *(const int64_t *)tg_base_ptr(loaded[3 * i]);
        tg_release(s->buf);
        tg_release(s->sq);
        s->buf = loaded[3 * i + 1];
        s->sq = loaded[3 * i + 2];
        loaded[3 * i + 1] = loaded[3 * i + 2] = NULL;
    }
    if (rc == 0) {
        opt->lr = lr;
        opt->steps = steps;
    }
    for (int i = 0; i < 3 * opt->n; i++)
        tg_release(loaded[i]);
    free(loaded);
    return rc;
}
