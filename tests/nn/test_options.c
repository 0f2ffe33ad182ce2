/*
 * tests/nn/test_options.c - the option-struct convention (autograd.h,
 * "option structs"): for every option struct, a zero-initialised struct,
 * NULL and the tg_<thing>_defaults() getter give the same results, bit
 * for bit; a designated initialiser that sets one field changes what that
 * field governs and nothing else; TG_EXACT_ZERO asks for a literal 0.
 *
 * The comparisons are exact (same_bits): the three spellings must run the
 * same arithmetic. Each group also has a comparison that must come out
 * different (a changed field), so a checker that always says "same" fails.
 */
#include "../common.h"

#include <math.h>
#include <string.h>

/* True when a and b have the same shape and dtype and identical bytes. */
static bool same_bits(const tg_tensor *a, const tg_tensor *b)
{
    if (!a || !b || a->dtype != b->dtype || a->numel != b->numel ||
        a->ndim != b->ndim)
        return false;
    tg_tensor *ca = tg_contiguous(a), *cb = tg_contiguous(b);
    bool f32 = a->dtype == TG_FLOAT32;
    const void *pa = f32 ? (const void *)tg_data_f32(ca)
                         : (const void *)tg_data_f64(ca);
    const void *pb = f32 ? (const void *)tg_data_f32(cb)
                         : (const void *)tg_data_f64(cb);
    bool same = pa && pb &&
                memcmp(pa, pb, (size_t)a->numel * (f32 ? 4 : 8)) == 0;
    tg_release(ca);
    tg_release(cb);
    return same;
}

static tg_tensor *input(uint64_t seed, const int64_t *shape, int ndim)
{
    tg_manual_seed(seed);
    return tg_randn(shape, ndim, TG_FLOAT64);
}

TG_TEST(options, same_bits_tells_values_apart)
{
    tg_tensor *a = input(1, TG_SHAPE(3));
    tg_tensor *b = input(1, TG_SHAPE(3));
    tg_tensor *c = input(2, TG_SHAPE(3));
    cr_assert(same_bits(a, b));
    cr_assert_not(same_bits(a, c));
    tg_tensor *a32 = tg_to_dtype(a, TG_FLOAT32), *c32 = tg_to_dtype(c, TG_FLOAT32);
    cr_assert(same_bits(a32, a32));
    cr_assert_not(same_bits(a32, c32));
    cr_assert_not(same_bits(a32, a), "dtypes differ");
    tg_release(a32);
    tg_release(c32);
    tg_data_f64(b)[2] = nextafter(tg_data_f64(b)[2], INFINITY);
    cr_assert_not(same_bits(a, b), "one ulp apart");
    tg_release(a);
    tg_release(b);
    tg_release(c);
}

/* ----------------------------------------------------- BatchNorm, the op */

typedef struct bn_run {
    tg_tensor *y, *rm, *rv;
} bn_run;

static bn_run bn_op(const tg_batch_norm_options *o)
{
    tg_tensor *x = input(7, TG_SHAPE(6, 3));
    bn_run r = {NULL, tg_zeros(TG_SHAPE(3), TG_FLOAT64),
                tg_ones(TG_SHAPE(3), TG_FLOAT64)};
    r.y = tg_batch_norm_ex(x, r.rm, r.rv, NULL, NULL, o, NULL, NULL);
    cr_assert(r.y, "%s", tg_last_error());
    tg_release(x);
    return r;
}

static void bn_free(bn_run *r)
{
    tg_release(r->y);
    tg_release(r->rm);
    tg_release(r->rv);
}

static bool bn_same(const bn_run *a, const bn_run *b)
{
    return same_bits(a->y, b->y) && same_bits(a->rm, b->rm) &&
           same_bits(a->rv, b->rv);
}

TG_TEST(options, batch_norm_options_zero_is_the_defaults)
{
    tg_batch_norm_options zero = {0};
    tg_batch_norm_options d = tg_batch_norm_defaults();
    cr_assert(!d.eval && d.momentum == 0.1 && d.eps == 1e-5 &&
              d.correction == 0);
    bn_run a = bn_op(&zero), b = bn_op(&d), c = bn_op(NULL);
    cr_assert(bn_same(&a, &b));
    cr_assert(bn_same(&a, &c));

    /* one field: momentum moves the running statistics, not y */
    tg_batch_norm_options m = {.momentum = 0.5};
    d.momentum = 0.5;
    bn_run e = bn_op(&m), f = bn_op(&d);
    cr_assert(bn_same(&e, &f));
    cr_assert(same_bits(e.y, a.y));
    cr_assert_not(same_bits(e.rm, a.rm));
    cr_assert_not(same_bits(e.rv, a.rv));

    /* TG_EXACT_ZERO: momentum 0 keeps the buffers, eps 0 is no eps, as the
     * plain tg_batch_norm with literal arguments */
    tg_batch_norm_options z = {.momentum = TG_EXACT_ZERO,
                               .eps = TG_EXACT_ZERO};
    bn_run g = bn_op(&z);
    tg_tensor *x = input(7, TG_SHAPE(6, 3));
    tg_tensor *rm = tg_zeros(TG_SHAPE(3), TG_FLOAT64);
    tg_tensor *rv = tg_ones(TG_SHAPE(3), TG_FLOAT64);
    tg_tensor *y = tg_batch_norm(x, rm, rv, NULL, NULL, true, 0.0, 0.0);
    bn_run h = {y, rm, rv};
    cr_assert(bn_same(&g, &h));
    cr_assert_not(same_bits(g.y, a.y), "eps 0 differs from eps 1e-5");
    cr_assert_eq(tg_data_f64(g.rm)[0], 0.0);
    cr_assert_eq(tg_data_f64(g.rv)[0], 1.0);
    tg_release(x);
    bn_free(&a), bn_free(&b), bn_free(&c), bn_free(&e), bn_free(&f);
    bn_free(&g), bn_free(&h);
}

/* -------------------------------------------------- BatchNorm, the module */

typedef struct bn_module_run {
    char *text; // as printed
    tg_tensor *y, *rm; // the output of one training batch, running_mean
    int nparams;
} bn_module_run;

static bn_module_run bn_module(const tg_batch_norm_config *c)
{
    bn_module_run r = {0};
    tg_module *m = tg_batch_norm1d_new(3, c);
    cr_assert(m, "%s", tg_last_error());
    r.text = tg_module_format(m);
    r.nparams = tg_module_named_parameters(m, NULL, 0);
    tg_tensor *x64 = input(9, TG_SHAPE(5, 3));
    tg_tensor *x = tg_to_dtype(x64, TG_FLOAT32);
    tg_release(x64);
    for (int k = 0; k < 2; k++) {
        tg_release(r.y);
        r.y = tg_module_forward(m, x);
        cr_assert(r.y, "%s", tg_last_error());
    }
    tg_tensor *rm = tg_module_buffer(m, "running_mean");
    r.rm = rm ? tg_retain(rm) : NULL;
    if (!rm)
        tg_clear_error();
    tg_release(x);
    tg_module_free(m);
    return r;
}

static void bn_module_free(bn_module_run *r)
{
    free(r->text);
    tg_release(r->y);
    tg_release(r->rm);
}

static bool bn_module_same(const bn_module_run *a, const bn_module_run *b)
{
    return strcmp(a->text, b->text) == 0 && a->nparams == b->nparams &&
           same_bits(a->y, b->y) &&
           ((!a->rm && !b->rm) || same_bits(a->rm, b->rm));
}

TG_TEST(options, batch_norm_config_zero_is_the_defaults)
{
    tg_batch_norm_config zero = {0};
    tg_batch_norm_config d = tg_batch_norm_config_defaults();
    cr_assert(d.eps == 1e-5 && d.momentum == 0.1 && !d.cumulative &&
              !d.no_affine && !d.no_running_stats && d.correction == 0);
    bn_module_run a = bn_module(&zero), b = bn_module(&d),
                  c = bn_module(NULL);
    cr_assert_str_eq(a.text, "BatchNorm1d(3, eps=1e-05, momentum=0.1, "
                             "affine=True, track_running_stats=True)");
    cr_assert_eq(a.nparams, 2);
    cr_assert(bn_module_same(&a, &b));
    cr_assert(bn_module_same(&a, &c));

    /* the example of the convention: momentum=None, the rest PyTorch's */
    tg_batch_norm_config one = {.cumulative = true};
    d.cumulative = true;
    bn_module_run e = bn_module(&one), f = bn_module(&d);
    cr_assert_str_eq(e.text, "BatchNorm1d(3, eps=1e-05, momentum=None, "
                             "affine=True, track_running_stats=True)");
    cr_assert(bn_module_same(&e, &f));
    cr_assert(same_bits(e.y, a.y), "the output does not depend on it");
    cr_assert_not(same_bits(e.rm, a.rm), "the running mean does");

    tg_batch_norm_config na = {.no_affine = true};
    tg_batch_norm_config nr = {.no_running_stats = true};
    bn_module_run g = bn_module(&na), h = bn_module(&nr);
    cr_assert_str_eq(g.text, "BatchNorm1d(3, eps=1e-05, momentum=0.1, "
                             "affine=False, track_running_stats=True)");
    cr_assert_eq(g.nparams, 0);
    cr_assert(same_bits(g.y, a.y), "weight 1 and bias 0 change nothing");
    cr_assert_str_eq(h.text, "BatchNorm1d(3, eps=1e-05, momentum=0.1, "
                             "affine=True, track_running_stats=False)");
    cr_assert_null(h.rm);

    tg_batch_norm_config eps0 = {.eps = TG_EXACT_ZERO};
    bn_module_run k = bn_module(&eps0);
    cr_assert_str_eq(k.text, "BatchNorm1d(3, eps=0.0, momentum=0.1, "
                             "affine=True, track_running_stats=True)");
    cr_assert_not(same_bits(k.y, a.y));
    bn_module_free(&a), bn_module_free(&b), bn_module_free(&c);
    bn_module_free(&e), bn_module_free(&f), bn_module_free(&g);
    bn_module_free(&h), bn_module_free(&k);
}

/* ------------------------------------------------------------- optimisers */

typedef tg_optimizer *(*make_fn)(const void *config);
static tg_optimizer *make_sgd(const void *c) { return tg_sgd_new(NULL, c); }
static tg_optimizer *make_adam(const void *c) { return tg_adam_new(NULL, c); }
static tg_optimizer *make_adamw(const void *c)
{
    return tg_adamw_new(NULL, c);
}

/* A parameter after three steps with fixed gradients. New reference. */
static tg_tensor *train(make_fn make, const void *config)
{
    tg_tensor *p = input(3, TG_SHAPE(4));
    tg_set_requires_grad(p, true);
    tg_optimizer *opt = make(config);
    cr_assert(opt, "%s", tg_last_error());
    cr_assert_eq(tg_optimizer_add_parameter(opt, p), 0);
    for (int k = 0; k < 3; k++) {
        tg_tensor *g = input(10 + (uint64_t)k, TG_SHAPE(4));
        tg_release(p->grad);
        p->grad = g;
        cr_assert_eq(tg_optimizer_step(opt), 0, "%s", tg_last_error());
    }
    tg_optimizer_free(opt);
    tg_tensor *out = tg_detach(p);
    tg_release(p);
    return out;
}

TG_TEST(options, sgd_config_zero_is_the_defaults)
{
    tg_sgd_config zero = {0}, d = tg_sgd_config_defaults();
    tg_tensor *a = train(make_sgd, &zero), *b = train(make_sgd, &d),
              *c = train(make_sgd, NULL);
    cr_assert(same_bits(a, b) && same_bits(a, c));
    tg_sgd_config m = {.momentum = 0.9};
    d.momentum = 0.9;
    tg_tensor *e = train(make_sgd, &m), *f = train(make_sgd, &d);
    cr_assert(same_bits(e, f));
    cr_assert_not(same_bits(e, a));
    tg_sgd_config frozen = {.lr = TG_EXACT_ZERO};
    tg_tensor *g = train(make_sgd, &frozen), *p0 = input(3, TG_SHAPE(4));
    cr_assert(same_bits(g, p0), "lr 0 moves nothing");
    tg_release(a), tg_release(b), tg_release(c), tg_release(e);
    tg_release(f), tg_release(g), tg_release(p0);
}

TG_TEST(options, adam_configs_zero_are_the_defaults)
{
    tg_adam_config zero = {0}, d = tg_adam_config_defaults(),
                   dw = tg_adamw_config_defaults();
    tg_tensor *a = train(make_adam, &zero), *b = train(make_adam, &d),
              *c = train(make_adam, NULL);
    cr_assert(same_bits(a, b) && same_bits(a, c));
    tg_tensor *aw = train(make_adamw, &zero), *bw = train(make_adamw, &dw),
              *cw = train(make_adamw, NULL);
    cr_assert(same_bits(aw, bw) && same_bits(aw, cw));
    cr_assert_not(same_bits(a, aw), "AdamW's default decay is 1e-2");

    /* one field */
    tg_adam_config b2 = {.beta2 = 0.9};
    d.beta2 = 0.9;
    tg_tensor *e = train(make_adam, &b2), *f = train(make_adam, &d);
    cr_assert(same_bits(e, f));
    cr_assert_not(same_bits(e, a));
    /* AdamW without decay is Adam without decay */
    tg_adam_config nodecay = {.weight_decay = TG_EXACT_ZERO};
    tg_tensor *g = train(make_adamw, &nodecay);
    cr_assert(same_bits(g, a));
    tg_release(a), tg_release(b), tg_release(c), tg_release(aw);
    tg_release(bw), tg_release(cw), tg_release(e), tg_release(f);
    tg_release(g);
}

/* -------------------------------------------------------------- gradcheck */

static tg_tensor *f_exp(const tg_tensor *const *in, int n, void *user)
{
    (void)n, (void)user;
    return tg_exp(in[0]);
}

static tg_gradcheck_result check(const tg_gradcheck_options *o, int expect)
{
    tg_tensor *x = input(5, TG_SHAPE(3));
    tg_set_requires_grad(x, true);
    tg_gradcheck_result r;
    cr_assert_eq(tg_gradcheck(f_exp, NULL, &x, 1, o, &r), expect, "%s",
                 r.message);
    tg_release(x);
    return r;
}

TG_TEST(options, gradcheck_options_zero_are_the_defaults)
{
    tg_gradcheck_options zero = {0}, d = tg_gradcheck_defaults();
    cr_assert(d.eps == 1e-6 && d.atol == 1e-5 && d.rtol == 1e-3 &&
              !d.fast_mode && !d.quiet);
    tg_gradcheck_result a = check(&zero, 1), b = check(&d, 1),
                        c = check(NULL, 1);
    cr_assert(a.max_error == b.max_error && a.max_error == c.max_error);
    cr_assert(a.max_error_ratio == b.max_error_ratio &&
              a.max_error_ratio == c.max_error_ratio);
    cr_assert(a.max_error > 0, "finite differences are not exact");

    /* one field: eps moves the numerical Jacobian */
    tg_gradcheck_options e = {.eps = 1e-4};
    tg_gradcheck_result r = check(&e, 1);
    cr_assert(r.max_error != a.max_error);
    /* no tolerance at all: finite differences cannot pass */
    tg_gradcheck_options exact = {.atol = TG_EXACT_ZERO,
                                  .rtol = TG_EXACT_ZERO, .quiet = true};
    check(&exact, 0);
}
