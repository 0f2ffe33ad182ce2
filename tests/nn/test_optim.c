/*
 * tests/nn/test_optim.c - the optimisers and schedules (nn/optim.c).
 *
 * Covered here: SGD (plain, momentum, dampening, Nesterov, weight decay),
 * Adam (plain, with L2 weight decay and other betas and eps, with the
 * learning rate changed between steps) and AdamW against NumPy references
 * (scripts/reference/gen_optim.py, which follows torch.optim 1.13's
 * single-tensor code step by step and was checked against it by hand):
 * five steps on float64 and float32 parameters of several shapes, one of
 * them skipped at one step (per-parameter step counts), each case run once
 * with contiguous tensors and once with a non-contiguous parameter and
 * non-contiguous gradients. Then: that the comparison catches a wrong
 * Adam; parameters without .grad; zero_grad; the step count; set_lr; the
 * schedules against values computed by hand and by torch's schedulers;
 * optimisers made from a module (tied weights, freeing the module first);
 * duplicates; the version bump that a pending backward detects; an Adam
 * run that minimises a quadratic through the tape; every error, and that
 * a failing step changes nothing.
 *
 * Tolerances of the reference comparisons:
 *  float64: RTOL64 1e-13, ATOL64 1e-15. The kernels round the same
 *  operations in the same order as the NumPy rule (the scalars PyTorch
 *  computes in Python, like 1 - beta^t, in double as there), so the
 *  results agree to the last bit on x86-64 (every case passes with zero
 *  tolerance there); the few dozen ulp of slack allow a libm whose pow()
 *  differs by an ulp, or a compiler that keeps intermediates in wider
 *  registers.
 *  float32: RTOL32 1e-6, ATOL32 1e-7: the same argument with float32
 *  roundings, about 8 ulp of values of order 1.
 *  A wrong rule is far outside these: a missing bias correction changes
 *  Adam's first update by a factor 3, eps inside the sqrt shrinks the
 *  update of the tiny-gradient parameter p3 a thousandfold, a momentum
 *  buffer started at 0 instead of g halves SGD's first steps (see
 *  checker_catches_wrong_rules).
 */
#include "../common.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#define RTOL64 1e-13
#define ATOL64 1e-15
#define RTOL32 1e-6
#define ATOL32 1e-7

#define STEPS 5
#define NPARAMS 4

/* ------------------------------------------------------------- fixtures */

typedef enum rule { SGD, ADAM, ADAMW } rule;

/* One case of gen_optim.py's CASES (same names, same settings). The
 * learning rate of each step comes from optim_<name>_lr. */
typedef struct optim_case {
    const char *name;
    rule rule;
    tg_sgd_config sgd;   // lr unused
    tg_adam_config adam; // lr unused
} optim_case;

#define SGD_CASE(n, ...) \
    {n, SGD, .sgd = {.lr = 0, __VA_ARGS__}, .adam = {0}}
#define ADAM_CASE(n, r, b1, b2, e, wd) \
    {n, r, .sgd = {0}, .adam = {0, b1, b2, e, wd}}

static const optim_case cases[] = {
    SGD_CASE("sgd_plain", .momentum = 0.0),
    SGD_CASE("sgd_momentum", .momentum = 0.9),
    SGD_CASE("sgd_dampening", .momentum = 0.9, .dampening = 0.3),
    SGD_CASE("sgd_nesterov", .momentum = 0.8, .nesterov = true),
    SGD_CASE("sgd_wd", .momentum = 0.5, .weight_decay = 0.05),
    ADAM_CASE("adam", ADAM, 0.9, 0.999, 1e-8, 0.0),
    ADAM_CASE("adam_wd", ADAM, 0.8, 0.99, 1e-6, 0.1),
    ADAM_CASE("adam_sched", ADAM, 0.9, 0.999, 1e-8, 0.0),
    ADAM_CASE("adamw", ADAMW, 0.9, 0.999, 1e-8, 0.1),
};

static const optim_case *find_case(const char *name)
{
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++)
        if (strcmp(cases[i].name, name) == 0)
            return &cases[i];
    cr_assert_fail("no case %s", name);
    return NULL;
}

/* "optim_<case>_p<i>" or "optim_p<i>_<what>" loaded (new reference). */
static tg_tensor *load_case(const char *cname, const char *what)
{
    char name[128];
    snprintf(name, sizeof name, "optim_%s_%s", cname, what);
    return tg_test_load_ref(name);
}

static tg_tensor *load_param(int i, const char *what)
{
    char name[128];
    snprintf(name, sizeof name, "optim_p%d_%s", i, what);
    return tg_test_load_ref(name);
}

/* Element block s of a contiguous (S, ...) fixture as a new tensor of the
 * remaining shape. */
static tg_tensor *row(const tg_tensor *all, int64_t s)
{
    int64_t n = all->numel / all->shape[0];
    const char *base = (const char *)all->storage->data +
                       (all->offset + s * n) *
                           (int64_t)tg_dtype_size(all->dtype);
    tg_tensor *t = tg_from_array(base, all->shape + 1, all->ndim - 1,
                                 all->dtype);
    cr_assert_not_null(t);
    return t;
}

/* Replaces p's .grad by g (taken). */
static void set_grad(tg_tensor *p, tg_tensor *g)
{
    tg_release(p->grad);
    p->grad = g;
}

/* A new leaf that requires grad holding the values of v. With strided,
 * a 2-D one is the transpose of a contiguous tensor: a non-contiguous
 * leaf whose storage is laid out the other way round. */
static tg_tensor *make_param(const tg_tensor *v, bool strided)
{
    tg_tensor *p;
    if (strided && v->ndim == 2) {
        tg_tensor *vt = tg_transpose(v, 0, 1);
        tg_tensor *base = tg_clone(vt); // contiguous (cols, rows)
        p = tg_transpose(base, 0, 1);
        tg_release(vt);
        tg_release(base);
        cr_assert(!tg_is_contiguous(p));
    } else {
        p = tg_clone(v);
    }
    cr_assert_eq(tg_set_requires_grad(p, true), 0);
    return p;
}

/* A gradient with g's values: g itself, or with strided (for a 2-D one) a
 * non-contiguous transpose view with the same values. */
static tg_tensor *make_grad(tg_tensor *g, bool strided)
{
    if (!strided || g->ndim != 2)
        return g;
    tg_tensor *gt = tg_transpose(g, 0, 1);
    tg_tensor *c = tg_clone(gt);
    tg_tensor *out = tg_transpose(c, 0, 1);
    tg_release(gt);
    tg_release(c);
    tg_release(g);
    cr_assert(!tg_is_contiguous(out));
    return out;
}

static tg_optimizer *make_optimizer(const optim_case *c, double lr)
{
    tg_optimizer *opt;
    if (c->rule == SGD) {
        tg_sgd_config k = c->sgd;
        k.lr = lr;
        opt = tg_sgd_new(NULL, &k);
    } else {
        tg_adam_config k = c->adam;
        k.lr = lr;
        opt = c->rule == ADAM ? tg_adam_new(NULL, &k) : tg_adamw_new(NULL, &k);
    }
    cr_assert_not_null(opt, "%s: %s", c->name, tg_last_error());
    return opt;
}

/* Runs case `name` on the fixture parameters and compares each parameter
 * with the reference after every step. */
static void run_case(const char *name, bool strided)
{
    const optim_case *c = find_case(name);
    tg_tensor *lrs = load_case(name, "lr");
    tg_tensor *has_grad = tg_test_load_ref("optim_has_grad");
    const double *lr = tg_data_f64(lrs);
    const int64_t *has = tg_data_i64(has_grad);
    tg_tensor *params[NPARAMS], *grads[NPARAMS], *expect[NPARAMS];
    tg_optimizer *opt = make_optimizer(c, lr[0]);
    for (int i = 0; i < NPARAMS; i++) {
        tg_tensor *init = load_param(i, "init");
        params[i] = make_param(init, strided);
        tg_release(init);
        grads[i] = load_param(i, "grad");
        char pi[8];
        snprintf(pi, sizeof pi, "p%d", i);
        expect[i] = load_case(name, pi);
        cr_assert_eq(tg_optimizer_add_parameter(opt, params[i]), 0);
    }
    for (int s = 0; s < STEPS; s++) {
        tg_optimizer_set_lr(opt, lr[s]);
        for (int i = 0; i < NPARAMS; i++)
            set_grad(params[i], has[s * NPARAMS + i]
                                    ? make_grad(row(grads[i], s), strided)
                                    : NULL);
        cr_assert_eq(tg_optimizer_step(opt), 0, "%s", tg_last_error());
        for (int i = 0; i < NPARAMS; i++) {
            tg_tensor *e = row(expect[i], s);
            bool f64 = e->dtype == TG_FLOAT64;
            char report[1024];
            cr_assert(tg_test_close(params[i], e, f64 ? RTOL64 : RTOL32,
                                    f64 ? ATOL64 : ATOL32, true, report,
                                    sizeof report),
                      "%s%s, step %d, p%d: %s", name,
                      strided ? " (strided)" : "", s + 1, i, report);
            tg_release(e);
        }
    }
    cr_assert_eq(tg_optimizer_steps(opt), STEPS);
    tg_optimizer_free(opt);
    for (int i = 0; i < NPARAMS; i++) {
        tg_release(params[i]);
        tg_release(grads[i]);
        tg_release(expect[i]);
    }
    tg_release(lrs);
    tg_release(has_grad);
}

#define REF_TEST(n)                                                        \
    TG_TEST(optim_reference, n)                                            \
    {                                                                      \
        run_case(#n, false);                                               \
        run_case(#n, true);                                                \
    }
REF_TEST(sgd_plain)
REF_TEST(sgd_momentum)
REF_TEST(sgd_dampening)
REF_TEST(sgd_nesterov)
REF_TEST(sgd_wd)
REF_TEST(adam)
REF_TEST(adam_wd)
REF_TEST(adam_sched)
REF_TEST(adamw)

/* The comparison above must reject plausible wrong rules: the first Adam
 * step computed here without the bias corrections (p1, float64), with eps
 * inside the square root (p3, float32, whose gradients are of eps's
 * size), and SGD momentum with the buffer started at 0 (p0). Each wrong
 * value is compared with the reference exactly as run_case does. */
TG_TEST(optim_reference, checker_catches_wrong_rules)
{
    char report[1024];
    const double lr = 0.01, b1 = 0.9, b2 = 0.999, eps = 1e-8;

    tg_tensor *init = tg_test_load_ref("optim_p1_init");
    tg_tensor *grads = tg_test_load_ref("optim_p1_grad");
    tg_tensor *all = tg_test_load_ref("optim_adam_p1");
    tg_tensor *expect = row(all, 0), *wrong = tg_clone(init);
    const double *g = tg_data_f64(grads);
    double *w = tg_data_f64(wrong);
    for (int64_t k = 0; k < wrong->numel; k++) {
        double m = (1 - b1) * g[k], v = (1 - b2) * g[k] * g[k];
        w[k] -= lr * m / (sqrt(v) + eps); // no bias correction
    }
    cr_assert(!tg_test_close(wrong, expect, RTOL64, ATOL64, true, report,
                             sizeof report));
    /* the right formula written the same way passes */
    tg_copy_(wrong, init);
    for (int64_t k = 0; k < wrong->numel; k++) {
        double m = (1 - b1) * g[k], v = (1 - b2) * g[k] * g[k];
        w[k] -= lr / (1 - b1) * m / (sqrt(v) / sqrt(1 - b2) + eps);
    }
    cr_assert(tg_test_close(wrong, expect, 1e-12, 1e-14, true, report,
                            sizeof report),
              "%s", report);
    tg_release(init);
    tg_release(grads);
    tg_release(all);
    tg_release(expect);
    tg_release(wrong);

    init = tg_test_load_ref("optim_p3_init");
    grads = tg_test_load_ref("optim_p3_grad");
    all = tg_test_load_ref("optim_adam_p3");
    expect = row(all, 0);
    wrong = tg_clone(init);
    double g0 = tg_data_f32(grads)[0];
    double mhat = (1 - b1) * g0 / (1 - b1);
    double vhat = (1 - b2) * g0 * g0 / (1 - b2);
    tg_data_f32(wrong)[0] -= (float)(lr * mhat / sqrt(vhat + eps));
    cr_assert(!tg_test_close(wrong, expect, RTOL32, ATOL32, true, report,
                             sizeof report));
    tg_release(init);
    tg_release(grads);
    tg_release(all);
    tg_release(expect);
    tg_release(wrong);

    /* SGD momentum 0.9, buffer started at 0: first step lr * 0.1 * g. */
    init = tg_test_load_ref("optim_p0_init");
    grads = tg_test_load_ref("optim_p0_grad");
    all = tg_test_load_ref("optim_sgd_momentum_p0");
    expect = row(all, 0);
    wrong = tg_clone(init);
    for (int64_t k = 0; k < wrong->numel; k++)
        tg_data_f64(wrong)[k] -= 0.1 * (0.1 * tg_data_f64(grads)[k]);
    cr_assert(!tg_test_close(wrong, expect, RTOL64, ATOL64, true, report,
                             sizeof report));
    tg_release(init);
    tg_release(grads);
    tg_release(all);
    tg_release(expect);
    tg_release(wrong);
}

/* ------------------------------------------------------------ behaviour */

/* A float64 leaf (n,) filled with value that requires grad. */
static tg_tensor *leaf(int64_t n, double value)
{
    tg_tensor *p = tg_full(TG_SHAPE(n), value, TG_FLOAT64);
    cr_assert_eq(tg_set_requires_grad(p, true), 0);
    return p;
}

TG_TEST(optim, defaults_as_pytorch)
{
    tg_sgd_config s = tg_sgd_config_defaults();
    cr_assert(s.lr == 1e-3 && s.momentum == 0 && s.dampening == 0 &&
              s.weight_decay == 0 && !s.nesterov);
    tg_adam_config a = tg_adam_config_defaults();
    cr_assert(a.lr == 1e-3 && a.beta1 == 0.9 && a.beta2 == 0.999 &&
              a.eps == 1e-8 && a.weight_decay == 0);
    tg_adam_config w = tg_adamw_config_defaults();
    cr_assert(w.lr == 1e-3 && w.beta1 == 0.9 && w.beta2 == 0.999 &&
              w.eps == 1e-8 && w.weight_decay == 1e-2);

    /* config NULL: the defaults with lr 1e-3 */
    tg_optimizer *o[3] = {tg_sgd_new(NULL, NULL), tg_adam_new(NULL, NULL),
                          tg_adamw_new(NULL, NULL)};
    for (int i = 0; i < 3; i++) {
        cr_assert_not_null(o[i]);
        cr_assert_eq(tg_optimizer_lr(o[i]), 1e-3);
        cr_assert_eq(tg_optimizer_steps(o[i]), 0);
    }
    /* AdamW's default decay with lr 1e-3 on p = 1, g = 0 (so m = v = 0 and
     * the Adam part adds 0 / eps = 0): p = 1 - 1e-3 * 1e-2 */
    tg_tensor *p = leaf(1, 1.0);
    p->grad = tg_zeros(TG_SHAPE(1), TG_FLOAT64);
    cr_assert_eq(tg_optimizer_add_parameter(o[2], p), 0);
    cr_assert_eq(tg_optimizer_step(o[2]), 0);
    cr_assert_eq(tg_data_f64(p)[0], 1.0 - 1e-3 * 1e-2);
    for (int i = 0; i < 3; i++)
        tg_optimizer_free(o[i]);
    tg_release(p);
}

/* A parameter without .grad is skipped: its values and storage version
 * stay, and it takes no step (so its first Adam step, later, is a first
 * step with the full bias correction). */
TG_TEST(optim, parameter_without_grad_is_skipped)
{
    tg_tensor *a = leaf(3, 1.0), *b = leaf(3, 2.0);
    tg_optimizer *opt = tg_adam_new(NULL, &(tg_adam_config){
        .lr = 0.01, .beta1 = 0.9, .beta2 = 0.999, .eps = 1e-8});
    cr_assert_eq(tg_optimizer_add_parameter(opt, a), 0);
    cr_assert_eq(tg_optimizer_add_parameter(opt, b), 0);
    a->grad = tg_full(TG_SHAPE(3), 0.5, TG_FLOAT64);
    uint64_t va = a->storage->version, vb = b->storage->version;
    for (int s = 0; s < 3; s++)
        cr_assert_eq(tg_optimizer_step(opt), 0);
    cr_assert_eq(b->storage->version, vb);
    cr_assert_eq(a->storage->version, va + 3);
    for (int k = 0; k < 3; k++)
        cr_assert_eq(tg_data_f64(b)[k], 2.0);
    cr_assert_null(b->grad);

    /* b's first step, at the optimiser's fourth: m = 0.1 g, v = 0.001 g^2,
     * so the update is lr * g / (|g| + eps) with t = 1 (with t = 4 it
     * would be about 0.29 lr instead) */
    b->grad = tg_full(TG_SHAPE(3), -0.25, TG_FLOAT64);
    cr_assert_eq(tg_optimizer_step(opt), 0);
    const double want = 2.0 + 0.01 * 0.25 / (0.25 + 1e-8);
    for (int k = 0; k < 3; k++)
        cr_assert_float_eq(tg_data_f64(b)[k], want, 1e-15);
    cr_assert_eq(tg_optimizer_steps(opt), 4);
    tg_optimizer_free(opt);
    tg_release(a);
    tg_release(b);
}

/* A parameter with no elements steps (nothing to do) next to others. */
TG_TEST(optim, empty_parameter)
{
    tg_tensor *e = tg_zeros(TG_SHAPE(0, 3), TG_FLOAT32), *p = leaf(1, 1.0);
    tg_set_requires_grad(e, true);
    e->grad = tg_zeros(TG_SHAPE(0, 3), TG_FLOAT32);
    p->grad = tg_ones(TG_SHAPE(1), TG_FLOAT64);
    tg_optimizer *opt = tg_adamw_new(NULL, NULL);
    cr_assert_eq(tg_optimizer_add_parameter(opt, e), 0);
    cr_assert_eq(tg_optimizer_add_parameter(opt, p), 0);
    cr_assert_eq(tg_optimizer_step(opt), 0, "%s", tg_last_error());
    cr_assert_lt(tg_data_f64(p)[0], 1.0);
    tg_optimizer_free(opt);
    tg_release(e);
    tg_release(p);
}

TG_TEST(optim, zero_grad_zeroes)
{
    tg_tensor *a = leaf(2, 1.0), *b = leaf(2, 1.0);
    tg_optimizer *opt = tg_sgd_new(NULL, &(tg_sgd_config){.lr = 0.1});
    tg_optimizer_add_parameter(opt, a);
    tg_optimizer_add_parameter(opt, b);
    a->grad = tg_full(TG_SHAPE(2), 3.0, TG_FLOAT64);
    tg_tensor *g = a->grad;
    tg_optimizer_zero_grad(opt);
    cr_assert_eq(a->grad, g, "zero_grad keeps the .grad tensor");
    cr_assert(tg_data_f64(g)[0] == 0.0 && tg_data_f64(g)[1] == 0.0);
    cr_assert_null(b->grad, "a missing .grad stays missing");
    tg_optimizer_zero_grad(NULL); // NULL-safe
    tg_optimizer_free(opt);
    tg_release(a);
    tg_release(b);
}

/* set_lr changes the next step; p = 1, g = 1, plain SGD. */
TG_TEST(optim, set_lr_takes_effect)
{
    tg_tensor *p = leaf(1, 1.0);
    p->grad = tg_ones(TG_SHAPE(1), TG_FLOAT64);
    tg_optimizer *opt = tg_sgd_new(NULL, &(tg_sgd_config){.lr = 0.1});
    tg_optimizer_add_parameter(opt, p);
    cr_assert_eq(tg_optimizer_step(opt), 0);
    cr_assert_eq(tg_data_f64(p)[0], 1.0 - 0.1);
    tg_optimizer_set_lr(opt, 0.01);
    cr_assert_eq(tg_optimizer_lr(opt), 0.01);
    cr_assert_eq(tg_optimizer_step(opt), 0);
    cr_assert_eq(tg_data_f64(p)[0], (1.0 - 0.1) - 0.01);
    cr_assert_eq(tg_optimizer_set_lr(opt, 0.0), 0);
    cr_assert_eq(tg_optimizer_step(opt), 0);
    cr_assert_eq(tg_data_f64(p)[0], (1.0 - 0.1) - 0.01);

    /* a negative rate is refused and the old one kept */
    cr_assert_eq(tg_optimizer_set_lr(opt, -0.5), -1);
    tg_assert_error("tg_optimizer_set_lr", "invalid learning rate -0.5",
                    "lr >= 0");
    cr_assert_eq(tg_optimizer_set_lr(opt, NAN), -1);
    tg_assert_error("invalid learning rate nan");
    cr_assert_eq(tg_optimizer_lr(opt), 0.0);
    cr_assert_eq(tg_optimizer_steps(opt), 3);
    tg_optimizer_free(opt);
    tg_release(p);
}

/* With momentum the state carries over between steps: p = 0, g = 1,
 * lr 1, momentum 0.5 gives buffers 1, 1.5, 1.75 and p = -1, -2.5, -4.25. */
TG_TEST(optim, sgd_momentum_by_hand)
{
    tg_tensor *p = tg_zeros(TG_SHAPE(2), TG_FLOAT32);
    tg_set_requires_grad(p, true);
    tg_optimizer *opt =
        tg_sgd_new(NULL, &(tg_sgd_config){.lr = 1.0, .momentum = 0.5});
    tg_optimizer_add_parameter(opt, p);
    const float want[3] = {-1.0f, -2.5f, -4.25f};
    for (int s = 0; s < 3; s++) {
        set_grad(p, tg_ones(TG_SHAPE(2), TG_FLOAT32));
        cr_assert_eq(tg_optimizer_step(opt), 0);
        cr_assert_eq(tg_data_f32(p)[1], want[s], "step %d: %g", s,
                     (double)tg_data_f32(p)[1]);
    }
    tg_optimizer_free(opt);
    tg_release(p);
}

TG_TEST(optim, steps_count_successful_steps)
{
    tg_tensor *p = leaf(2, 1.0);
    tg_optimizer *opt = tg_adam_new(NULL, NULL);
    tg_optimizer_add_parameter(opt, p);
    cr_assert_eq(tg_optimizer_steps(opt), 0);
    cr_assert_eq(tg_optimizer_step(opt), 0); // no grad anywhere: still a step
    p->grad = tg_ones(TG_SHAPE(2), TG_FLOAT64);
    cr_assert_eq(tg_optimizer_step(opt), 0);
    cr_assert_eq(tg_optimizer_steps(opt), 2);
    set_grad(p, tg_ones(TG_SHAPE(3), TG_FLOAT64));
    cr_assert_eq(tg_optimizer_step(opt), -1);
    cr_assert_eq(tg_optimizer_steps(opt), 2);
    cr_assert_eq(tg_optimizer_steps(NULL), -1);
    cr_assert(isnan(tg_optimizer_lr(NULL)));
    tg_optimizer_free(opt);
    tg_release(p);
}

/* ------------------------------------------------------------ schedules */

/* Values checked by hand against torch.optim.lr_scheduler.StepLR and
 * CosineAnnealingLR 1.13 (reading optimizer.param_groups[0]['lr'] before
 * each scheduler.step()): StepLR(lr 1, step_size 2, gamma 0.1) gives
 * 1.0, 1.0, 0.1, 0.1, 0.010000000000000002, 0.010000000000000002,
 * 0.0010000000000000002, the same doubles as the closed form.
 * CosineAnnealingLR(lr 1, T_max 4) gives 1.0, 0.8535533905932737, 0.5,
 * 0.14644660940672627, 0.0, then 0.1464466094067262, 0.5000000000000001,
 * ... (the cosine goes back up; tapegrad stays at eta_min beyond t_max).
 * With lr 0.5, T_max 10, eta_min 0.1, torch's recursive update gives
 * 0.3618033988749896 at t = 4 where the closed form gives
 * 0.36180339887498947 (one ulp). */
TG_TEST(optim_schedule, step_lr)
{
    const double want[7] = {1.0, 1.0, 0.1, 0.1, 0.010000000000000002,
                            0.010000000000000002, 0.0010000000000000002};
    for (int t = 0; t < 7; t++)
        cr_assert_eq(tg_lr_step(1.0, t, 2, 0.1), want[t], "t %d: %.17g", t,
                     tg_lr_step(1.0, t, 2, 0.1));
    /* halving every 3: exact */
    cr_assert_eq(tg_lr_step(0.1, 2, 3, 0.5), 0.1);
    cr_assert_eq(tg_lr_step(0.1, 3, 3, 0.5), 0.05);
    cr_assert_eq(tg_lr_step(0.1, 8, 3, 0.5), 0.025);
    cr_assert_eq(tg_lr_step(0.1, 9, 3, 0.5), 0.0125);
}

TG_TEST(optim_schedule, cosine_lr)
{
    const double want[7] = {1.0, 0.8535533905932737, 0.5,
                            0.14644660940672627, 0.0, 0.0, 0.0};
    for (int t = 0; t < 7; t++)
        cr_assert_eq(tg_lr_cosine(1.0, t, 4, 0.0), want[t], "t %d: %.17g",
                     t, tg_lr_cosine(1.0, t, 4, 0.0));
    /* (1 + cos(pi / 2)) / 2 = 1/2 of the way from 0.1 to 0.5 */
    cr_assert_float_eq(tg_lr_cosine(0.5, 5, 10, 0.1), 0.3, 1e-15);
    cr_assert_eq(tg_lr_cosine(0.5, 4, 10, 0.1), 0.36180339887498947);
    cr_assert_eq(tg_lr_cosine(0.5, 10, 10, 0.1), 0.1);
    cr_assert_eq(tg_lr_cosine(0.5, 1000, 10, 0.1), 0.1);
}

TG_TEST(optim_schedule, errors)
{
    cr_assert(isnan(tg_lr_step(0.1, -1, 3, 0.5)));
    tg_assert_error("tg_lr_step", "t is -1", "t >= 0");
    cr_assert(isnan(tg_lr_step(0.1, 0, 0, 0.5)));
    tg_assert_error("tg_lr_step", "step_size 0", "step_size >= 1");
    cr_assert(isnan(tg_lr_cosine(0.1, -2, 3, 0.0)));
    tg_assert_error("tg_lr_cosine", "t is -2");
    cr_assert(isnan(tg_lr_cosine(0.1, 0, 0, 0.0)));
    tg_assert_error("tg_lr_cosine", "t_max 0", "t_max >= 1");
    cr_assert(isnan(tg_lr_step(NAN, 3, 2, 0.5)));
    tg_assert_error("tg_lr_step: base_lr is nan", "finite and >= 0");
    cr_assert(isnan(tg_lr_step(0.1, 3, 2, -INFINITY)));
    tg_assert_error("tg_lr_step: base_lr is 0.1 and gamma -inf");
    cr_assert(isnan(tg_lr_cosine(-0.1, 0, 3, 0.0)));
    tg_assert_error("tg_lr_cosine: base_lr is -0.1");
    cr_assert(isnan(tg_lr_cosine(0.1, 0, 3, INFINITY)));
    tg_assert_error("tg_lr_cosine: base_lr is 0.1 and eta_min inf");
}

/* ------------------------------------------------------------- modules */

static tg_tensor *identity_forward(tg_module *m, const tg_tensor *x)
{
    (void)m;
    return tg_retain((tg_tensor *)x);
}
static const tg_module_type tied_type = {"Tied", identity_forward, NULL, 0};

/* The optimiser finds a module's parameters, children's included. */
TG_TEST(optim_module, steps_every_parameter)
{
    tg_module *ln = tg_layer_norm_new(TG_SHAPE(3), 1e-5, true);
    tg_module *outer = tg_module_new(&tied_type);
    tg_tensor *extra = leaf(2, 0.0);
    cr_assert_eq(tg_module_add_parameter(outer, "extra", extra), 0);
    cr_assert_eq(tg_module_add_child(outer, "ln", ln), 0);
    tg_optimizer *opt = tg_sgd_new(outer, &(tg_sgd_config){.lr = 0.5});
    cr_assert_not_null(opt, "%s", tg_last_error());
    tg_tensor *w = tg_module_parameter(outer, "ln.weight");
    tg_tensor *b = tg_module_parameter(outer, "ln.bias");
    w->grad = tg_full(TG_SHAPE(3), 1.0, TG_FLOAT32);
    b->grad = tg_full(TG_SHAPE(3), -1.0, TG_FLOAT32);
    extra->grad = tg_full(TG_SHAPE(2), 2.0, TG_FLOAT64);
    cr_assert_eq(tg_optimizer_step(opt), 0);
    cr_assert_eq(tg_data_f32(w)[2], 0.5f);  // 1 - 0.5 * 1
    cr_assert_eq(tg_data_f32(b)[0], 0.5f);  // 0 + 0.5 * 1
    cr_assert_eq(tg_data_f64(extra)[1], -1.0); // 0 - 0.5 * 2
    tg_optimizer_free(opt);
    tg_module_free(outer);
    tg_release(extra);
}

/* A tensor registered twice (tied weights) is stepped once. */
TG_TEST(optim_module, tied_weight_stepped_once)
{
    tg_module *m = tg_module_new(&tied_type);
    tg_tensor *t = leaf(2, 1.0);
    cr_assert_eq(tg_module_add_parameter(m, "a", t), 0);
    cr_assert_eq(tg_module_add_parameter(m, "b", t), 0);
    tg_optimizer *opt = tg_sgd_new(m, &(tg_sgd_config){.lr = 1.0});
    t->grad = tg_ones(TG_SHAPE(2), TG_FLOAT64);
    cr_assert_eq(tg_optimizer_step(opt), 0);
    cr_assert_eq(tg_data_f64(t)[0], 0.0, "stepped %g times",
                 1.0 - tg_data_f64(t)[0]);
    /* adding it again by hand does not add a second copy either */
    cr_assert_eq(tg_optimizer_add_parameter(opt, t), 0);
    cr_assert_eq(tg_optimizer_step(opt), 0);
    cr_assert_eq(tg_data_f64(t)[0], -1.0);
    tg_optimizer_free(opt);
    tg_module_free(m);
    tg_release(t);
}

/* The optimiser holds its own references: the module can go first (under
 * ASan a use after free or a leak fails this test). */
TG_TEST(optim_module, module_freed_before_optimizer)
{
    tg_module *ln = tg_layer_norm_new(TG_SHAPE(4), 1e-5, true);
    tg_optimizer *opt = tg_adam_new(ln, NULL);
    tg_tensor *x = tg_arange(0, 8, 1, TG_FLOAT32);
    tg_tensor *x2 = tg_reshape(x, TG_SHAPE(2, 4));
    tg_tensor *y = tg_module_forward(ln, x2);
    tg_tensor *yy = tg_mul(y, x2); // a loss whose gradient reaches w and b
    tg_tensor *loss = tg_sum(yy, NULL, 0, false);
    cr_assert_eq(tg_backward(loss), 0);
    tg_tensor *w = tg_module_parameter(ln, "weight"); // borrowed
    int64_t live = tg_live_tensors();
    tg_module_free(ln);
    cr_assert_eq(tg_live_tensors(), live, "the optimiser keeps w and b");
    cr_assert_eq(tg_optimizer_step(opt), 0);
    /* Adam's first step moves every element with a nonzero gradient by
     * about lr = 1e-3 against the gradient's sign */
    cr_assert_float_eq(fabs(tg_data_f32(w)[0] - 1.0), 1e-3, 1e-6);
    tg_optimizer_zero_grad(opt);
    tg_optimizer_free(opt);
    tg_release(x);
    tg_release(x2);
    tg_release(y);
    tg_release(yy);
    tg_release(loss);
}

/* -------------------------------------------------- the tape, versions */

/* The step writes outside the tape: nothing is recorded, the parameter
 * stays a leaf; and the write bumps the version, so a backward through a
 * graph that saved the old values refuses to run, as in PyTorch. */
TG_TEST(optim_tape, step_bumps_version_and_records_nothing)
{
    tg_tensor *p = leaf(3, 2.0);
    tg_tensor *x = tg_full(TG_SHAPE(3), 3.0, TG_FLOAT64);
    tg_tensor *y = tg_mul(p, x); // gives p its .grad (3, 3, 3)
    tg_tensor *loss = tg_sum(y, NULL, 0, false);
    tg_tensor *p2 = tg_mul(p, p); // saves p for its own gradient
    tg_tensor *loss2 = tg_sum(p2, NULL, 0, false);
    cr_assert_eq(tg_backward(loss), 0);
    int64_t tape = tg_tape_size();
    uint64_t v = p->storage->version;

    tg_optimizer *opt = tg_sgd_new(NULL, &(tg_sgd_config){.lr = 0.1});
    tg_optimizer_add_parameter(opt, p);
    cr_assert_eq(tg_optimizer_step(opt), 0); // with gradients enabled
    cr_assert_eq(tg_tape_size(), tape);
    cr_assert(tg_is_leaf(p) && p->requires_grad);
    cr_assert_eq(p->storage->version, v + 1);
    cr_assert_float_eq(tg_data_f64(p)[0], 2.0 - 0.1 * 3.0, 1e-15);

    cr_assert_eq(tg_backward(loss2), -1);
    tg_assert_error("tg_backward", "modified in place");

    tg_no_grad_begin(); // inside a user's no_grad scope too
    cr_assert_eq(tg_optimizer_step(opt), 0);
    tg_no_grad_end();
    cr_assert_float_eq(tg_data_f64(p)[0], 2.0 - 0.6, 1e-15);
    tg_optimizer_free(opt);
    tg_release(p);
    tg_release(x);
    tg_release(y);
    tg_release(loss);
    tg_release(p2);
    tg_release(loss2);
}

/* A non-contiguous parameter is updated through its own layout: the
 * storage it views changes, its strides do not. */
TG_TEST(optim_tape, non_contiguous_parameter_keeps_its_view)
{
    tg_tensor *base = tg_arange(0, 6, 1, TG_FLOAT64);
    tg_tensor *b2 = tg_reshape(base, TG_SHAPE(2, 3));
    tg_tensor *p = tg_transpose(b2, 0, 1); // (3, 2) view of base
    tg_set_requires_grad(p, true);
    int64_t strides[2] = {p->strides[0], p->strides[1]};
    p->grad = tg_ones(TG_SHAPE(3, 2), TG_FLOAT64);
    tg_set(p->grad, TG_SHAPE(2, 0), 10.0); // p[2][0] = base[2]
    tg_optimizer *opt = tg_sgd_new(NULL, &(tg_sgd_config){.lr = 0.5});
    tg_optimizer_add_parameter(opt, p);
    cr_assert_eq(tg_optimizer_step(opt), 0);
    cr_assert(p->strides[0] == strides[0] && p->strides[1] == strides[1]);
    const double *d = tg_data_f64(base);
    cr_assert_eq(d[2], 2.0 - 5.0);
    cr_assert_eq(d[3], 3.0 - 0.5);
    tg_optimizer_free(opt);
    tg_release(base);
    tg_release(b2);
    tg_release(p);
}

/* Adam with a cosine schedule minimises sum((p - target)^2), the
 * gradient coming from the tape each step. */
TG_TEST(optim_tape, adam_minimises_a_quadratic)
{
    const double tv[4] = {1.5, -2.0, 0.25, 3.0};
    tg_tensor *target = tg_from_array(tv, TG_SHAPE(4), TG_FLOAT64);
    tg_tensor *p = leaf(4, 0.0);
    tg_optimizer *opt = tg_adam_new(NULL, &(tg_adam_config){
        .lr = 0.1, .beta1 = 0.9, .beta2 = 0.999, .eps = 1e-8});
    tg_optimizer_add_parameter(opt, p);
    const int steps = 400;
    for (int s = 0; s < steps; s++) {
        tg_optimizer_set_lr(opt, tg_lr_cosine(0.1, s, steps, 0.0));
        tg_optimizer_zero_grad(opt);
        tg_tensor *d = tg_sub(p, target);
        tg_tensor *d2 = tg_mul(d, d);
        tg_tensor *loss = tg_sum(d2, NULL, 0, false);
        cr_assert_eq(tg_backward(loss), 0);
        cr_assert_eq(tg_optimizer_step(opt), 0);
        tg_release(d);
        tg_release(d2);
        tg_release(loss);
    }
    for (int k = 0; k < 4; k++)
        cr_assert_float_eq(tg_data_f64(p)[k], tv[k], 1e-3, "p[%d] = %g", k,
                           tg_data_f64(p)[k]);
    tg_optimizer_free(opt);
    tg_release(target);
    tg_release(p);
}

/* --------------------------------------------------------------- errors */

TG_TEST(optim_errors, sgd_hyper_parameters)
{
    tg_sgd_config c = {.lr = -0.1};
    cr_assert_null(tg_sgd_new(NULL, &c));
    tg_assert_error("tg_sgd_new", "invalid learning rate -0.1", "lr >= 0");
    c = (tg_sgd_config){.lr = 0.1};
    c.momentum = -0.9;
    cr_assert_null(tg_sgd_new(NULL, &c));
    tg_assert_error("tg_sgd_new", "invalid momentum value -0.9",
                    "momentum >= 0");
    c = (tg_sgd_config){.lr = 0.1};
    c.weight_decay = -1e-4;
    cr_assert_null(tg_sgd_new(NULL, &c));
    tg_assert_error("invalid weight_decay value -0.0001", "weight_decay >= 0");
    c = (tg_sgd_config){.lr = 0.1};
    c.dampening = NAN;
    cr_assert_null(tg_sgd_new(NULL, &c));
    tg_assert_error("dampening is nan");
    c = (tg_sgd_config){.lr = 0.1};
    c.nesterov = true;
    cr_assert_null(tg_sgd_new(NULL, &c));
    tg_assert_error("nesterov with momentum 0.0 and dampening 0.0",
                    "requires a momentum and zero dampening");
    c.momentum = 0.9;
    c.dampening = 0.1;
    cr_assert_null(tg_sgd_new(NULL, &c));
    tg_assert_error("nesterov with momentum 0.9 and dampening 0.1");
    c.dampening = 0.0;
    tg_optimizer *ok = tg_sgd_new(NULL, &c);
    cr_assert_not_null(ok, "momentum 0.9, dampening 0 is fine");
    tg_optimizer_free(ok);
    /* lr 0 is allowed, as in PyTorch */
    c = (tg_sgd_config){.lr = TG_EXACT_ZERO};
    ok = tg_sgd_new(NULL, &c);
    cr_assert_not_null(ok);
    tg_optimizer_free(ok);
}

TG_TEST(optim_errors, adam_hyper_parameters)
{
    tg_adam_config c = {.lr = -1e-3};
    cr_assert_null(tg_adam_new(NULL, &c));
    tg_assert_error("tg_adam_new", "invalid learning rate -0.001");
    c = (tg_adam_config){.lr = 1e-3};
    c.eps = -1e-8;
    cr_assert_null(tg_adam_new(NULL, &c));
    tg_assert_error("invalid epsilon value -1e-08", "epsilon >= 0");
    c = (tg_adam_config){.lr = 1e-3};
    c.beta1 = 1.0;
    cr_assert_null(tg_adam_new(NULL, &c));
    tg_assert_error("invalid beta1 1.0", "0 <= beta1 < 1", "index 0");
    c.beta1 = -0.1;
    cr_assert_null(tg_adam_new(NULL, &c));
    tg_assert_error("invalid beta1 -0.1");
    c = (tg_adam_config){.lr = 1e-3};
    c.beta2 = 1.5;
    cr_assert_null(tg_adam_new(NULL, &c));
    tg_assert_error("invalid beta2 1.5", "0 <= beta2 < 1", "index 1");
    c.beta2 = NAN;
    cr_assert_null(tg_adam_new(NULL, &c));
    tg_assert_error("invalid beta2 nan");
    c = (tg_adam_config){.lr = 1e-3};
    c.weight_decay = -0.01;
    cr_assert_null(tg_adamw_new(NULL, &c));
    tg_assert_error("tg_adamw_new", "invalid weight_decay value -0.01");
    /* beta 0 and eps 0 are allowed, as in PyTorch */
    c = (tg_adam_config){.lr = 1e-3};
    c.beta1 = TG_EXACT_ZERO;
    c.eps = TG_EXACT_ZERO;
    tg_optimizer *ok = tg_adam_new(NULL, &c);
    cr_assert_not_null(ok);
    tg_optimizer_free(ok);
}

TG_TEST(optim_errors, bad_parameters)
{
    tg_optimizer *opt = tg_sgd_new(NULL, NULL);
    tg_tensor *i = tg_zeros(TG_SHAPE(2), TG_INT64);
    cr_assert_eq(tg_optimizer_add_parameter(opt, i), -1);
    tg_assert_error("tg_optimizer_add_parameter", "int64 tensor of shape (2,)",
                    "float32 or float64");
    tg_tensor *p = leaf(2, 1.0);
    tg_tensor *q = tg_mul(p, p);
    cr_assert_eq(tg_optimizer_add_parameter(opt, q), -1);
    tg_assert_error("made by MulBackward0", "non-leaf", "tg_detach");
    tg_tensor *f = tg_zeros(TG_SHAPE(2), TG_FLOAT32);
    cr_assert_eq(tg_optimizer_add_parameter(opt, f), -1);
    tg_assert_error("does not require grad", "tg_set_requires_grad");

    /* a module whose parameter no longer requires grad: the constructor
     * names itself */
    tg_module *m = tg_module_new(&tied_type);
    cr_assert_eq(tg_module_add_parameter(m, "w", f), 0);
    tg_set_requires_grad(f, false);
    cr_assert_null(tg_adam_new(m, NULL));
    tg_assert_error("tg_adam_new", "does not require grad");
    tg_module_free(m);

    /* NULL arguments fail without a new message */
    tg_clear_error();
    cr_assert_eq(tg_optimizer_add_parameter(NULL, p), -1);
    cr_assert_eq(tg_optimizer_add_parameter(opt, NULL), -1);
    cr_assert_eq(tg_optimizer_step(NULL), -1);
    cr_assert_eq(tg_optimizer_set_lr(NULL, 0.1), -1);
    tg_optimizer_free(NULL);
    cr_assert_str_empty(tg_last_error());

    tg_optimizer_free(opt);
    tg_release(i);
    tg_release(p);
    tg_release(q);
    tg_release(f);
}

/* A wrong .grad anywhere fails the whole step before anything changes:
 * the parameters before it in the list keep their values, versions and
 * state (the next good step is still their first). */
TG_TEST(optim_errors, wrong_grad_changes_nothing)
{
    tg_tensor *a = leaf(3, 1.0), *b = leaf(3, 1.0);
    tg_tensor *c = tg_ones(TG_SHAPE(2, 2), TG_FLOAT32);
    tg_set_requires_grad(c, true);
    tg_optimizer *opt = tg_adam_new(NULL, &(tg_adam_config){
        .lr = 0.01, .beta1 = 0.9, .beta2 = 0.999, .eps = 1e-8});
    tg_optimizer_add_parameter(opt, a);
    tg_optimizer_add_parameter(opt, b);
    tg_optimizer_add_parameter(opt, c);
    a->grad = tg_full(TG_SHAPE(3), 0.5, TG_FLOAT64);
    b->grad = tg_full(TG_SHAPE(3), 0.5, TG_FLOAT64);
    c->grad = tg_ones(TG_SHAPE(4), TG_FLOAT32);
    uint64_t va = a->storage->version;
    cr_assert_eq(tg_optimizer_step(opt), -1);
    tg_assert_error("tg_optimizer_step", "parameter 2",
                    "float32 (4,) but the parameter is float32 (2, 2)",
                    "no parameter was changed");
    set_grad(c, tg_ones(TG_SHAPE(2, 2), TG_FLOAT64));
    cr_assert_eq(tg_optimizer_step(opt), -1);
    tg_assert_error("float64 (2, 2) but the parameter is float32 (2, 2)");
    cr_assert_eq(a->storage->version, va);
    for (int k = 0; k < 3; k++)
        cr_assert(tg_data_f64(a)[k] == 1.0 && tg_data_f64(b)[k] == 1.0);
    cr_assert_eq(tg_optimizer_steps(opt), 0);

    /* fixed: the step is every parameter's first (update lr * g/(g+eps)) */
    set_grad(c, tg_ones(TG_SHAPE(2, 2), TG_FLOAT32));
    cr_assert_eq(tg_optimizer_step(opt), 0);
    cr_assert_float_eq(tg_data_f64(a)[0], 1.0 - 0.01 * 0.5 / (0.5 + 1e-8),
                       1e-15);
    cr_assert_float_eq(tg_data_f32(c)[3], 0.99f, 1e-7);

    /* names from a module appear in the message */
    tg_module *m = tg_module_new(&tied_type);
    tg_module_add_parameter(m, "scale", a);
    tg_optimizer *named = tg_sgd_new(m, NULL);
    set_grad(a, tg_ones(TG_SHAPE(1), TG_FLOAT64));
    cr_assert_eq(tg_optimizer_step(named), -1);
    tg_assert_error("parameter 0 (\"scale\")");
    tg_optimizer_free(named);
    tg_module_free(m);

    tg_optimizer_free(opt);
    tg_release(a);
    tg_release(b);
    tg_release(c);
}

/* An expanded leaf used to be accepted, and its step then failed in the
 * write-back with the error dropped: the step returned 0 and left the
 * parameter unchanged. It is refused when added. */
TG_TEST(optim, expanded_leaf_is_refused_when_added)
{
    tg_tensor *one = tg_ones(TG_SHAPE(1), TG_FLOAT32);
    tg_tensor *p = tg_expand(one, TG_SHAPE(3));
    cr_assert_eq(tg_set_requires_grad(p, true), 0);
    tg_optimizer *opt = tg_sgd_new(NULL, NULL);
    cr_assert_eq(tg_optimizer_add_parameter(opt, p), -1);
    tg_assert_error("tg_optimizer_add_parameter: cannot optimise an expanded "
                    "view");
    tg_optimizer_free(opt);
    tg_release(p);
    tg_release(one);
}
