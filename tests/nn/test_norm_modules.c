/*
 * tests/nn/test_norm_modules.c - the normalisation layers as modules
 * (nn/norm.c): LayerNorm, BatchNorm1d on (N, C) and (N, C, L), BatchNorm2d.
 *
 * Covered here: outputs, input and parameter gradients and the running
 * statistics over a sequence of training then eval batches against NumPy
 * references (scripts/reference/gen_nn_norm.py, which derives the backward
 * step by step rather than by the closed form), for momentum 0.1 and 0.3,
 * momentum None (cumulative), no affine part, no running statistics and
 * makemore's unbiased training variance; what the layers print (each text
 * checked by hand against PyTorch 1.13's repr); the errors and their
 * hints; eval mode, train/eval toggling; gradcheck of layers converted to
 * float64. The fused ops themselves are tested in tests/autograd/.
 *
 * Tolerances of the reference comparisons (float32 layers):
 *  RTOL 1e-5, ATOL 1e-5. The references are exact results rounded once to
 *  float32. The layers compute statistics and outputs in double from
 *  float32 data, so training outputs and gradients are within an ulp or
 *  two (~1e-7 relative). The running statistics are float32 buffers
 *  updated with a few float32 roundings per batch, so after S batches they
 *  are off by ~S ulp of values up to ~4, i.e. ~3e-6 absolute at most; an
 *  eval output multiplies an error in running_mean by w / sqrt(var + eps),
 *  up to ~35 in these cases (channel spread down to 0.05 with eps 1e-3,
 *  weights up to 2), hence an absolute 1e-5 and a relative 1e-5. (The
 *  largest deviation seen is 5e-7, an eval output after four cumulative
 *  batches; everything else is within 1.5e-7.) A wrong momentum, a biased
 *  running variance or a missed eps changes values by percents.
 */
#include "../common.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#define RTOL 1e-5
#define ATOL 1e-5

/* ------------------------------------------------------------- fixtures */

typedef enum layer_kind { LN, BN1D, BN2D } layer_kind;

/* One case of gen_nn_norm.py's CASES (same names, same settings). */
typedef struct norm_case {
    const char *name;
    layer_kind kind;
    int64_t norm_shape[2]; // LayerNorm's normalized_shape
    int norm_ndim;
    int train; // the first `train` batches in training mode, then eval
    double eps;
    double momentum;
    bool cumulative, affine, track;
    int64_t correction;
} norm_case;

/* The PyTorch defaults, for the fields a case does not set. */
#define BN_DEFAULTS .eps = 1e-5, .momentum = 0.1, .affine = true, .track = true

static const norm_case cases[] = {
    {"bn1d_nc_m01", BN1D, .train = 3, BN_DEFAULTS},
    {"bn1d_ncl_m01", BN1D, .train = 3, BN_DEFAULTS},
    {"bn2d_m01", BN2D, .train = 3, BN_DEFAULTS},
    {"bn1d_ncl_m03", BN1D, .train = 3, .eps = 1e-3, .momentum = 0.3,
     .affine = true, .track = true},
    {"bn1d_nc_cum", BN1D, .train = 4, BN_DEFAULTS, .cumulative = true},
    {"bn2d_cum", BN2D, .train = 3, BN_DEFAULTS, .cumulative = true},
    {"bn1d_nc_noaffine", BN1D, .train = 3, .eps = 1e-5, .momentum = 0.1,
     .affine = false, .track = true},
    {"bn2d_notrack", BN2D, .train = 2, .eps = 1e-5, .momentum = 0.1,
     .affine = true, .track = false},
    {"bn1d_nc_corr1", BN1D, .train = 3, BN_DEFAULTS, .correction = 1},
    {"ln_last", LN, {5}, 1, .train = 2, .eps = 1e-5, .affine = true},
    {"ln_2d", LN, {3, 5}, 2, .train = 2, .eps = 1e-3, .affine = true},
    {"ln_noaffine", LN, {4}, 1, .train = 1, .eps = 1e-5, .affine = false},
};

static const norm_case *find_case(const char *name)
{
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++)
        if (strcmp(cases[i].name, name) == 0)
            return &cases[i];
    cr_assert_fail("no case %s", name);
    return NULL;
}

static tg_batch_norm_config config_of(const norm_case *c)
{
    tg_batch_norm_config k = tg_batch_norm_config_defaults();
    k.eps = c->eps;
    k.momentum = c->momentum;
    k.cumulative = c->cumulative;
    k.no_affine = !c->affine;
    k.no_running_stats = !c->track;
    k.correction = c->correction;
    return k;
}

/* The layer of case c for C channels, float32, in training mode. */
static tg_module *make_layer(const norm_case *c, int64_t C)
{
    tg_batch_norm_config k = config_of(c);
    tg_module *m = c->kind == LN
                       ? tg_layer_norm_new(c->norm_shape, c->norm_ndim,
                                           c->eps, c->affine)
                   : c->kind == BN1D ? tg_batch_norm1d_new(C, &k)
                                     : tg_batch_norm2d_new(C, &k);
    cr_assert_not_null(m, "%s: %s", c->name, tg_last_error());
    return m;
}

/* "nn_norm_<case>_<what>" loaded (new reference). */
static tg_tensor *load(const char *cname, const char *what)
{
    char name[128];
    snprintf(name, sizeof name, "nn_norm_%s_%s", cname, what);
    return tg_test_load_ref(name);
}

/* Writes value into a parameter or buffer of m, outside the tape. */
static void set_tensor(tg_tensor *dst, const tg_tensor *value)
{
    tg_no_grad_begin();
    int rc = tg_copy_(dst, value);
    tg_no_grad_end();
    cr_assert_eq(rc, 0, "%s", tg_last_error());
}

/* all[step] (or all[step][part] when part >= 0): a new view. */
static tg_tensor *pick(const tg_tensor *all, int64_t step, int64_t part)
{
    tg_tensor *t = tg_select(all, 0, step);
    if (part >= 0) {
        tg_tensor *p = tg_select(t, 0, part);
        tg_release(t);
        t = p;
    }
    cr_assert_not_null(t, "%s", tg_last_error());
    return t;
}

/* Asserts actual matches all[step][part], naming the case, batch and
 * quantity on failure. */
static void expect(const tg_tensor *actual, const tg_tensor *all,
                   int64_t step, int64_t part, const char *what,
                   const norm_case *c)
{
    tg_tensor *e = pick(all, step, part);
    char report[1024];
    bool ok = tg_test_close(actual, e, RTOL, ATOL, true, report,
                            sizeof report);
    tg_release(e);
    cr_assert(ok, "%s, batch %lld (%s mode), %s: %s", c->name,
              (long long)step, step < c->train ? "training" : "eval", what,
              report);
}

/* The weight and bias of the case's fixture copied into m. */
static void load_affine(tg_module *m, const norm_case *c)
{
    if (!c->affine)
        return;
    tg_tensor *wb = load(c->name, "affine");
    for (int k = 0; k < 2; k++) {
        tg_tensor *row = pick(wb, k, -1);
        set_tensor(tg_module_parameter(m, k ? "bias" : "weight"), row);
        tg_release(row);
    }
    tg_release(wb);
}

/* Runs every batch of case c through its layer, batch by batch (training
 * mode for the first c->train, eval after), and compares the output, the
 * gradients of x, weight and bias for the batch's upstream gradient, and
 * the buffers after the batch with the references. */
static void run_case(const char *name)
{
    const norm_case *c = find_case(name);
    tg_tensor *x = load(name, "x"), *g = load(name, "g");
    tg_tensor *y_ref = load(name, "y"), *dx_ref = load(name, "dx");
    tg_tensor *daffine = c->affine ? load(name, "daffine") : NULL;
    bool buffers = c->kind != LN && c->track;
    tg_tensor *running = buffers ? load(name, "running") : NULL;
    tg_tensor *nbt_ref = buffers ? load(name, "nbt") : NULL;
    int64_t steps = x->shape[0];
    cr_assert_gt(steps, c->train, "%s: no eval batch in the fixture", name);
    tg_module *m = make_layer(c, x->shape[2]); // x is (S, N, C, ...)
    load_affine(m, c);
    tg_tensor *w = c->affine ? tg_module_parameter(m, "weight") : NULL;
    tg_tensor *b = c->affine ? tg_module_parameter(m, "bias") : NULL;
    for (int64_t s = 0; s < steps; s++) {
        tg_module_train(m, s < c->train);
        tg_tensor *xs_view = pick(x, s, -1);
        tg_tensor *xs = tg_clone(xs_view); // a leaf of its own
        tg_release(xs_view);
        cr_assert_eq(tg_set_requires_grad(xs, true), 0);
        tg_tensor *y = tg_module_forward(m, xs);
        cr_assert_not_null(y, "%s, batch %lld: %s", name, (long long)s,
                           tg_last_error());
        cr_assert_str_eq(tg_grad_fn_name(y),
                         c->kind == LN ? "NativeLayerNormBackward0"
                                       : "NativeBatchNormBackward0");
        expect(y, y_ref, s, -1, "output", c);
        tg_tensor *gs = pick(g, s, -1);
        cr_assert_eq(tg_backward_ex(y, &(tg_backward_options){.grad = gs}),
                     0, "%s", tg_last_error());
        tg_release(gs);
        tg_release(y);
        expect(xs->grad, dx_ref, s, -1, "dL/dx", c);
        tg_release(xs);
        if (c->affine) {
            expect(w->grad, daffine, s, 0, "dL/dweight", c);
            expect(b->grad, daffine, s, 1, "dL/dbias", c);
            tg_module_zero_grad(m); // each batch's gradients on their own
        }
        if (buffers) {
            expect(tg_module_buffer(m, "running_mean"), running, s, 0,
                   "running_mean", c);
            expect(tg_module_buffer(m, "running_var"), running, s, 1,
                   "running_var", c);
            tg_tensor *nbt = pick(nbt_ref, s, -1);
            tg_tensor *actual = tg_module_buffer(m, "num_batches_tracked");
            cr_assert_eq(actual->dtype, TG_INT64);
            cr_assert_eq(tg_item(actual), tg_item(nbt),
                         "%s, batch %lld: num_batches_tracked %g, expected "
                         "%g",
                         name, (long long)s, tg_item(actual), tg_item(nbt));
            tg_release(nbt);
        }
    }
    cr_assert_eq(tg_module_named_buffers(m, NULL, 0), buffers ? 3 : 0);
    tg_module_free(m);
    tg_release(nbt_ref);
    tg_release(running);
    tg_release(daffine);
    tg_release(dx_ref);
    tg_release(y_ref);
    tg_release(g);
    tg_release(x);
}

/* ------------------------------------------------ references, case by case */

/* BatchNorm1d(3) on (8, 3), PyTorch's defaults (momentum 0.1). */
TG_TEST(nn_norm, batch_norm1d_nc_momentum_0_1) { run_case("bn1d_nc_m01"); }
/* BatchNorm1d(3) on (4, 3, 5): statistics over N and L. */
TG_TEST(nn_norm, batch_norm1d_ncl_momentum_0_1) { run_case("bn1d_ncl_m01"); }
/* BatchNorm2d(2) on (3, 2, 3, 4): statistics over N, H and W. */
TG_TEST(nn_norm, batch_norm2d_momentum_0_1) { run_case("bn2d_m01"); }
/* momentum 0.3, and eps 1e-3 of the order of the channel variances. */
TG_TEST(nn_norm, batch_norm1d_ncl_momentum_0_3_eps_1e_3)
{
    run_case("bn1d_ncl_m03");
}
/* momentum None: the running statistics are the plain average of the
 * batches seen, the first batch replacing the initial 0 and 1. */
TG_TEST(nn_norm, batch_norm1d_cumulative) { run_case("bn1d_nc_cum"); }
TG_TEST(nn_norm, batch_norm2d_cumulative) { run_case("bn2d_cum"); }
/* affine=False: no weight or bias, y = xhat. */
TG_TEST(nn_norm, batch_norm1d_without_affine) { run_case("bn1d_nc_noaffine"); }
/* track_running_stats=False: no buffers, batch statistics (and the full
 * training backward) in eval too. */
TG_TEST(nn_norm, batch_norm2d_without_running_stats)
{
    run_case("bn2d_notrack");
}
/* correction 1: normalised by the unbiased variance in training, as in
 * makemore part 4; the running variance is unbiased either way. */
TG_TEST(nn_norm, batch_norm1d_unbiased_training_variance)
{
    run_case("bn1d_nc_corr1");
}
/* LayerNorm: the same in both modes (the eval batches repeat the first). */
TG_TEST(nn_norm, layer_norm_last_dim) { run_case("ln_last"); }
TG_TEST(nn_norm, layer_norm_two_dims_eps_1e_3) { run_case("ln_2d"); }
TG_TEST(nn_norm, layer_norm_without_affine) { run_case("ln_noaffine"); }

/* The comparison must fail on a wrong answer: momentum 0.3 instead of the
 * fixture's 0.1 gives the same training output but other running
 * statistics, and training-mode output differs from the eval reference of
 * the same batch. */
TG_TEST(nn_norm, reference_check_rejects_a_wrong_momentum)
{
    const norm_case *c = find_case("bn1d_nc_m01");
    norm_case wrong = *c;
    wrong.momentum = 0.3;
    tg_tensor *x = load(c->name, "x"), *y_ref = load(c->name, "y");
    tg_tensor *running = load(c->name, "running");
    tg_module *m = make_layer(&wrong, x->shape[2]);
    load_affine(m, c);
    tg_tensor *x0 = pick(x, 0, -1);
    tg_tensor *y = tg_module_forward(m, x0);
    char report[1024];
    tg_tensor *e = pick(y_ref, 0, -1);
    cr_assert(tg_test_close(y, e, RTOL, ATOL, true, report, sizeof report),
              "%s", report);
    tg_release(e);
    e = pick(running, 0, 0);
    cr_assert_not(tg_test_close(tg_module_buffer(m, "running_mean"), e, RTOL,
                                ATOL, true, report, sizeof report),
                  "momentum 0.3 passed for 0.1");
    tg_release(e);
    /* batch c->train (eval) is batch 0 again: its reference is not the
     * training output */
    e = pick(y_ref, c->train, -1);
    cr_assert_not(
        tg_test_close(y, e, RTOL, ATOL, true, report, sizeof report),
        "the training output passed for the eval one");
    tg_release(e);
    tg_release(y);
    tg_release(x0);
    tg_module_free(m);
    tg_release(running);
    tg_release(y_ref);
    tg_release(x);
}

/* --------------------------------------------------------------- printing */

static tg_batch_norm_config bn_config(double eps, double momentum,
                                      bool cumulative, bool affine,
                                      bool track)
{
    tg_batch_norm_config c = tg_batch_norm_config_defaults();
    c.eps = eps;
    c.momentum = momentum;
    c.cumulative = cumulative;
    c.no_affine = !affine;
    c.no_running_stats = !track;
    return c;
}

TG_TEST(nn_norm, layer_norm_prints_as_pytorch)
{
    /* nn.LayerNorm((14, 768)), nn.LayerNorm(768),
     * nn.LayerNorm([3, 4, 5], eps=1e-3, elementwise_affine=False) */
    tg_test_expect_print(tg_layer_norm_new(TG_SHAPE(14, 768), 1e-5, true),
                         "LayerNorm((14, 768), eps=1e-05, elementwise_affine=True)");
    tg_test_expect_print(tg_layer_norm_new(TG_SHAPE(768), 1e-5, true),
                         "LayerNorm((768,), eps=1e-05, elementwise_affine=True)");
    tg_test_expect_print(tg_layer_norm_new(TG_SHAPE(3, 4, 5), 1e-3, false),
                         "LayerNorm((3, 4, 5), eps=0.001, elementwise_affine=False)");
}

TG_TEST(nn_norm, batch_norm_prints_as_pytorch)
{
    /* nn.BatchNorm1d(64) */
    tg_test_expect_print(tg_batch_norm1d_new(64, NULL),
                         "BatchNorm1d(64, eps=1e-05, momentum=0.1, affine=True, "
                         "track_running_stats=True)");
    /* nn.BatchNorm1d(64, momentum=None) */
    tg_batch_norm_config c = bn_config(1e-5, 0.1, true, true, true);
    tg_test_expect_print(tg_batch_norm1d_new(64, &c),
                         "BatchNorm1d(64, eps=1e-05, momentum=None, affine=True, "
                         "track_running_stats=True)");
    /* nn.BatchNorm2d(3, eps=1e-3, momentum=0.3, affine=False,
     * track_running_stats=False) */
    c = bn_config(1e-3, 0.3, false, false, false);
    tg_test_expect_print(tg_batch_norm2d_new(3, &c),
                         "BatchNorm2d(3, eps=0.001, momentum=0.3, affine=False, "
                         "track_running_stats=False)");
    /* nn.BatchNorm1d(3, eps=1e-4, momentum=0.25) */
    c = bn_config(1e-4, 0.25, false, true, true);
    tg_test_expect_print(tg_batch_norm1d_new(3, &c),
                         "BatchNorm1d(3, eps=0.0001, momentum=0.25, affine=True, "
                         "track_running_stats=True)");
    /* nn.BatchNorm2d(16, eps=1e-6, momentum=0.01) */
    c = bn_config(1e-6, 0.01, false, true, true);
    tg_test_expect_print(tg_batch_norm2d_new(16, &c),
                         "BatchNorm2d(16, eps=1e-06, momentum=0.01, affine=True, "
                         "track_running_stats=True)");
}

/* Python prints a float that is a whole number with ".0": torch shows
 * nn.BatchNorm1d(3, momentum=1.0) as "momentum=1.0", eps=0.0 as
 * "eps=0.0" and nn.LayerNorm(4, eps=1.0) as "eps=1.0". */
TG_TEST(nn_norm, whole_number_settings_print_as_python_floats)
{
    tg_batch_norm_config c = bn_config(1e-5, 1.0, false, true, true);
    tg_test_expect_print(tg_batch_norm1d_new(3, &c),
                         "BatchNorm1d(3, eps=1e-05, momentum=1.0, affine=True, "
                         "track_running_stats=True)");
    c = bn_config(TG_EXACT_ZERO, TG_EXACT_ZERO, false, true, true);
    tg_test_expect_print(tg_batch_norm1d_new(3, &c),
                         "BatchNorm1d(3, eps=0.0, momentum=0.0, affine=True, "
                         "track_running_stats=True)");
    tg_test_expect_print(tg_layer_norm_new(TG_SHAPE(4), 1.0, true),
                         "LayerNorm((4,), eps=1.0, elementwise_affine=True)");
}

/* Other floats as Python's repr writes them (the shortest digits that
 * read back): nn.BatchNorm1d(2, eps=2.5e-5, momentum=1/3),
 * nn.LayerNorm(2, eps=1e-10), nn.BatchNorm2d(2, eps=0.123456789,
 * momentum=0.5). */
TG_TEST(nn_norm, settings_print_with_python_float_digits)
{
    tg_batch_norm_config c = bn_config(2.5e-5, 1.0 / 3, false, true, true);
    tg_test_expect_print(tg_batch_norm1d_new(2, &c),
                         "BatchNorm1d(2, eps=2.5e-05, momentum=0.3333333333333333, "
                         "affine=True, track_running_stats=True)");
    tg_test_expect_print(tg_layer_norm_new(TG_SHAPE(2), 1e-10, true),
                         "LayerNorm((2,), eps=1e-10, elementwise_affine=True)");
    c = bn_config(0.123456789, 0.5, false, true, true);
    tg_test_expect_print(tg_batch_norm2d_new(2, &c),
                         "BatchNorm2d(2, eps=0.123456789, momentum=0.5, affine=True, "
                         "track_running_stats=True)");
}

/* correction has no PyTorch counterpart; a layer that does not normalise
 * as PyTorch does says so, after PyTorch's own arguments. */
TG_TEST(nn_norm, unbiased_batch_norm_prints_its_correction)
{
    tg_batch_norm_config c = tg_batch_norm_config_defaults();
    char *s;
    tg_module *m = tg_batch_norm1d_new(8, &c);
    s = tg_module_format(m);
    cr_assert_null(strstr(s, "correction"), "%s", s);
    free(s);
    tg_module_free(m);
    c.correction = 1;
    m = tg_batch_norm1d_new(8, &c);
    s = tg_module_format(m);
    const char *torch_text = "BatchNorm1d(8, eps=1e-05, momentum=0.1, "
                             "affine=True, track_running_stats=True";
    cr_assert_eq(strncmp(s, torch_text, strlen(torch_text)), 0, "%s", s);
    cr_assert_not_null(strstr(s, "correction=1"), "%s", s);
    free(s);
    tg_module_free(m);
}

/* ----------------------------------------------------- construction, state */

/* As torch: weight ones and bias zeros of shape (C,) / normalized_shape,
 * running_mean zeros, running_var ones, num_batches_tracked a 0-d int64
 * zero, listed in this order. */
TG_TEST(nn_norm, layers_start_as_pytorch)
{
    tg_module *bn = tg_batch_norm2d_new(4, NULL);
    tg_named_tensor p[4], b[4];
    cr_assert_eq(tg_module_named_parameters(bn, p, 4), 2);
    cr_assert_eq(tg_module_named_buffers(bn, b, 4), 3);
    const char *pnames[] = {"weight", "bias"};
    const char *bnames[] = {"running_mean", "running_var",
                            "num_batches_tracked"};
    const double pvalues[] = {1, 0}, bvalues[] = {0, 1, 0};
    for (int i = 0; i < 2; i++) {
        cr_assert_str_eq(p[i].name, pnames[i]);
        cr_assert(p[i].tensor->requires_grad);
        cr_assert_eq(p[i].tensor->dtype, TG_FLOAT32);
        tg_tensor *e = tg_full(TG_SHAPE(4), pvalues[i], TG_FLOAT32);
        tg_assert_close(p[i].tensor, e, 0, 0);
        tg_release(e);
    }
    for (int i = 0; i < 3; i++) {
        cr_assert_str_eq(b[i].name, bnames[i]);
        cr_assert_not(b[i].tensor->requires_grad);
        tg_tensor *e = i < 2 ? tg_full(TG_SHAPE(4), bvalues[i], TG_FLOAT32)
                             : tg_zeros(NULL, 0, TG_INT64);
        tg_assert_close(b[i].tensor, e, 0, 0);
        tg_release(e);
    }
    cr_assert_eq(tg_module_num_elements(bn), 8);
    tg_module_free(bn);

    tg_module *ln = tg_layer_norm_new(TG_SHAPE(2, 3), 1e-5, true);
    cr_assert_eq(tg_module_named_parameters(ln, p, 4), 2);
    cr_assert_eq(tg_module_named_buffers(ln, NULL, 0), 0);
    cr_assert_eq(p[0].tensor->ndim, 2);
    cr_assert_eq(p[0].tensor->shape[0], 2);
    cr_assert_eq(p[0].tensor->shape[1], 3);
    tg_tensor *ones = tg_ones(TG_SHAPE(2, 3), TG_FLOAT32);
    tg_tensor *zeros = tg_zeros(TG_SHAPE(2, 3), TG_FLOAT32);
    tg_assert_close(tg_module_parameter(ln, "weight"), ones, 0, 0);
    tg_assert_close(tg_module_parameter(ln, "bias"), zeros, 0, 0);
    tg_release(zeros);
    tg_release(ones);
    tg_module_free(ln);

    tg_batch_norm_config c = bn_config(1e-5, 0.1, false, false, false);
    bn = tg_batch_norm1d_new(4, &c);
    cr_assert_eq(tg_module_named_parameters(bn, NULL, 0), 0);
    cr_assert_eq(tg_module_named_buffers(bn, NULL, 0), 0);
    cr_assert_eq(tg_module_num_elements(bn), 0);
    tg_module_free(bn);
    ln = tg_layer_norm_new(TG_SHAPE(5), 1e-5, false);
    cr_assert_eq(tg_module_named_parameters(ln, NULL, 0), 0);
    tg_module_free(ln);
}

/* ------------------------------------------------------- modes and dtypes */

/* A batch of the given shape from N(1, 2^2), fixed by seed (new reference,
 * no gradient). */
static tg_tensor *batch(const int64_t *shape, int ndim, uint64_t seed,
                        tg_dtype dtype)
{
    tg_generator *gen = tg_generator_new(seed);
    tg_tensor *r = tg_randn_gen(gen, shape, ndim, dtype);
    tg_generator_free(gen);
    tg_tensor *s = tg_mul_scalar(r, 2.0);
    tg_tensor *x = tg_add_scalar(s, 1.0);
    tg_release(s);
    tg_release(r);
    cr_assert_not_null(x, "%s", tg_last_error());
    return x;
}

/* weight and bias of a (C,) or normalized_shape layer set to values away
 * from 1 and 0 (w = 0.5 + 0.25 k, b = 0.1 k - 0.3 for element k), so a
 * layer that ignores them is caught. */
static void set_affine(tg_module *m)
{
    tg_tensor *w = tg_module_parameter(m, "weight");
    tg_tensor *b = tg_module_parameter(m, "bias");
    cr_assert(w && b, "%s", tg_last_error());
    tg_tensor *k = tg_arange(0, (double)w->numel, 1, w->dtype);
    tg_tensor *kw = tg_reshape(k, w->shape, w->ndim);
    tg_tensor *w1 = tg_mul_scalar(kw, 0.25), *w2 = tg_add_scalar(w1, 0.5);
    tg_tensor *b1 = tg_mul_scalar(kw, 0.1), *b2 = tg_sub_scalar(b1, 0.3);
    set_tensor(w, w2);
    set_tensor(b, b2);
    tg_release(b2);
    tg_release(b1);
    tg_release(w2);
    tg_release(w1);
    tg_release(kw);
    tg_release(k);
}

static void to_doubles(const tg_tensor *t, double *out, int64_t max)
{
    cr_assert_leq(t->numel, max);
    cr_assert_eq(tg_to_f64_array(t, out), 0, "%s", tg_last_error());
}

/* In eval mode BatchNorm normalises with the running statistics:
 *   y = (x - running_mean) / sqrt(running_var + eps) * w + b
 * which after one training batch differs from the training output of the
 * same batch; eval leaves the buffers and num_batches_tracked alone.
 * Tolerance: y is computed in double and rounded once to float32, the
 * check below in double from the same float32 values: 1e-6 relative. */
TG_TEST(nn_norm, eval_mode_uses_the_running_statistics)
{
    const int64_t N = 6, C = 3;
    tg_module *m = tg_batch_norm1d_new(C, NULL);
    set_affine(m);
    tg_tensor *x = batch(TG_SHAPE(N, C), 7, TG_FLOAT32);
    tg_tensor *y_train = tg_module_forward(m, x);
    tg_tensor *rm = tg_module_buffer(m, "running_mean");
    tg_tensor *rv = tg_module_buffer(m, "running_var");
    tg_tensor *nbt = tg_module_buffer(m, "num_batches_tracked");
    cr_assert_eq(tg_item(nbt), 1);
    tg_tensor *rm_before = tg_clone(rm), *rv_before = tg_clone(rv);

    tg_module_train(m, false);
    cr_assert_not(tg_module_is_training(m));
    tg_tensor *y_eval = tg_module_forward(m, x);
    cr_assert_not_null(y_eval, "%s", tg_last_error());
    char report[1024];
    cr_assert_not(tg_test_close(y_eval, y_train, 1e-3, 1e-3, true, report,
                                sizeof report),
                  "eval mode gave the training output");
    double xv[18], yv[18], rmv[3], rvv[3], wv[3], bv[3];
    to_doubles(x, xv, 18);
    to_doubles(y_eval, yv, 18);
    to_doubles(rm, rmv, 3);
    to_doubles(rv, rvv, 3);
    to_doubles(tg_module_parameter(m, "weight"), wv, 3);
    to_doubles(tg_module_parameter(m, "bias"), bv, 3);
    for (int64_t i = 0; i < N; i++)
        for (int64_t c = 0; c < C; c++) {
            double e = (xv[i * C + c] - rmv[c]) / sqrt(rvv[c] + 1e-5) * wv[c] +
                       bv[c];
            cr_assert_float_eq(yv[i * C + c], e, 1e-6 * (1 + fabs(e)),
                               "y[%lld, %lld]", (long long)i, (long long)c);
        }
    /* the eval forward changed nothing */
    tg_assert_close(rm, rm_before, 0, 0);
    tg_assert_close(rv, rv_before, 0, 0);
    cr_assert_eq(tg_item(nbt), 1);
    tg_release(y_eval);
    tg_release(rv_before);
    tg_release(rm_before);
    tg_release(y_train);
    tg_release(x);
    tg_module_free(m);
}

/* train, eval, eval, train: the buffers move only in training mode, and
 * num_batches_tracked counts training batches only (1, 1, 1, 2). Eval
 * outputs of the same batch are identical; going back to training resumes
 * the updates from where they were. */
TG_TEST(nn_norm, train_eval_toggling)
{
    tg_module *m = tg_batch_norm2d_new(2, NULL);
    cr_assert(tg_module_is_training(m), "a new layer is in training mode");
    tg_tensor *x = batch(TG_SHAPE(3, 2, 2, 2), 11, TG_FLOAT32);
    tg_tensor *nbt = tg_module_buffer(m, "num_batches_tracked");
    tg_tensor *rm = tg_module_buffer(m, "running_mean");
    const bool modes[] = {true, false, false, true};
    const double counts[] = {1, 1, 1, 2};
    tg_tensor *prev_rm = tg_clone(rm), *prev_eval = NULL;
    for (int k = 0; k < 4; k++) {
        tg_module_train(m, modes[k]);
        cr_assert_eq(tg_module_is_training(m), modes[k]);
        tg_tensor *y = tg_module_forward(m, x);
        cr_assert_not_null(y, "%s", tg_last_error());
        cr_assert_eq(tg_item(nbt), counts[k], "step %d", k);
        char report[1024];
        bool same = tg_test_close(rm, prev_rm, 0, 0, true, report,
                                  sizeof report);
        cr_assert_eq(same, !modes[k], "step %d: running_mean %s", k,
                     modes[k] ? "did not move" : "moved in eval");
        if (!modes[k] && prev_eval)
            tg_assert_close(y, prev_eval, 0, 0);
        tg_release(prev_rm);
        prev_rm = tg_clone(rm);
        if (!modes[k]) {
            tg_release(prev_eval);
            prev_eval = tg_retain(y);
        }
        tg_release(y);
    }
    tg_release(prev_eval);
    tg_release(prev_rm);
    tg_release(x);
    tg_module_free(m);
}

/* Without running statistics eval mode uses the batch's statistics too
 * (the same output as training, to the bit), and there are no buffers:
 * asking for one names what there is. */
TG_TEST(nn_norm, without_running_stats_eval_uses_batch_statistics)
{
    tg_batch_norm_config c = bn_config(1e-5, 0.1, false, true, false);
    tg_module *m = tg_batch_norm1d_new(3, &c);
    set_affine(m);
    tg_tensor *x = batch(TG_SHAPE(5, 3, 2), 3, TG_FLOAT32);
    tg_tensor *y_train = tg_module_forward(m, x);
    tg_module_train(m, false);
    tg_tensor *y_eval = tg_module_forward(m, x);
    tg_assert_close(y_eval, y_train, 0, 0);
    cr_assert_null(tg_module_buffer(m, "running_mean"));
    tg_assert_error("no buffer \"running_mean\"", "has: none");
    /* one sample per channel has no batch statistics, even in eval */
    tg_tensor *one = batch(TG_SHAPE(1, 3), 4, TG_FLOAT32);
    cr_assert_null(tg_module_forward(m, one));
    tg_assert_error("expected more than 1 value per channel when training");
    tg_release(one);
    tg_release(y_eval);
    tg_release(y_train);
    tg_release(x);
    tg_module_free(m);
}

/* Backward adds into weight.grad and bias.grad (two identical backwards
 * give exactly twice the first: a + a is exact); tg_module_zero_grad sets
 * them to zero. */
TG_TEST(nn_norm, parameter_gradients_accumulate_until_zeroed)
{
    tg_module *m = tg_batch_norm1d_new(3, NULL);
    set_affine(m);
    tg_tensor *x = batch(TG_SHAPE(4, 3, 2), 5, TG_FLOAT32);
    tg_tensor *g = batch(TG_SHAPE(4, 3, 2), 6, TG_FLOAT32);
    tg_tensor *w = tg_module_parameter(m, "weight");
    tg_tensor *first = NULL;
    for (int k = 0; k < 2; k++) {
        tg_tensor *y = tg_module_forward(m, x);
        cr_assert_eq(
            tg_backward_ex(y, &(tg_backward_options){.grad = g}), 0, "%s",
            tg_last_error());
        tg_release(y);
        if (!k)
            first = tg_clone(w->grad);
    }
    tg_tensor *twice = tg_mul_scalar(first, 2.0);
    tg_assert_close(w->grad, twice, 0, 0);
    tg_module_zero_grad(m);
    tg_tensor *zero = tg_zeros(TG_SHAPE(3), TG_FLOAT32);
    tg_assert_close(w->grad, zero, 0, 0);
    tg_assert_close(tg_module_parameter(m, "bias")->grad, zero, 0, 0);
    tg_release(zero);
    tg_release(twice);
    tg_release(first);
    tg_release(g);
    tg_release(x);
    tg_module_free(m);
}

/* module.double(): parameters (still leaves that require grad) and running
 * statistics become float64 with their values, num_batches_tracked stays
 * int64 with its count; a float64 batch then gives the float32 layer's
 * output (to float32 precision: 1e-6 relative on values of size ~1, plus
 * 1e-6 absolute near 0), and a float32 batch is refused. */
TG_TEST(nn_norm, to_dtype_converts_parameters_and_float_buffers)
{
    tg_module *m = tg_batch_norm1d_new(3, NULL);
    set_affine(m);
    tg_tensor *x = batch(TG_SHAPE(6, 3), 8, TG_FLOAT32);
    tg_tensor *y1 = tg_module_forward(m, x);
    tg_release(y1);
    tg_module_train(m, false);
    tg_tensor *y32 = tg_module_forward(m, x);
    tg_tensor *rm32 = tg_clone(tg_module_buffer(m, "running_mean"));
    cr_assert_eq(tg_module_to_dtype(m, TG_FLOAT64), 0, "%s",
                 tg_last_error());
    tg_named_tensor p[2], b[3];
    cr_assert_eq(tg_module_named_parameters(m, p, 2), 2);
    for (int i = 0; i < 2; i++) {
        cr_assert_eq(p[i].tensor->dtype, TG_FLOAT64, "%s", p[i].name);
        cr_assert(p[i].tensor->requires_grad, "%s", p[i].name);
        cr_assert(tg_is_leaf(p[i].tensor), "%s", p[i].name);
    }
    cr_assert_eq(tg_module_named_buffers(m, b, 3), 3);
    cr_assert_eq(b[0].tensor->dtype, TG_FLOAT64);
    cr_assert_eq(b[1].tensor->dtype, TG_FLOAT64);
    cr_assert_eq(b[2].tensor->dtype, TG_INT64);
    cr_assert_eq(tg_item(b[2].tensor), 1);
    tg_tensor *rm32_as64 = tg_to_dtype(rm32, TG_FLOAT64);
    tg_assert_close(b[0].tensor, rm32_as64, 0, 0); // widening is exact
    tg_release(rm32_as64);

    tg_tensor *x64 = tg_to_dtype(x, TG_FLOAT64);
    tg_tensor *y64 = tg_module_forward(m, x64);
    cr_assert_not_null(y64, "%s", tg_last_error());
    cr_assert_eq(y64->dtype, TG_FLOAT64);
    char report[1024];
    cr_assert(tg_test_close(y64, y32, 1e-6, 1e-6, false, report,
                            sizeof report),
              "%s", report);
    cr_assert_null(tg_module_forward(m, x));
    tg_assert_error("is float64 but the input is float32");
    /* and back */
    cr_assert_eq(tg_module_to_dtype(m, TG_FLOAT32), 0);
    tg_tensor *y_back = tg_module_forward(m, x);
    cr_assert_not_null(y_back, "%s", tg_last_error());
    tg_release(y_back);
    tg_release(y64);
    tg_release(x64);
    tg_release(rm32);
    tg_release(y32);
    tg_release(x);
    tg_module_free(m);
}

/* ------------------------------------------------------------------ errors */

TG_TEST(nn_norm, batch_norm1d_rejects_4d_and_1d_input)
{
    tg_module *m = tg_batch_norm1d_new(3, NULL);
    tg_tensor *x = tg_zeros(TG_SHAPE(2, 3, 4, 5), TG_FLOAT32);
    cr_assert_null(tg_module_forward(m, x));
    tg_assert_error("tg_module_forward: BatchNorm1d expected 2D or 3D input, "
                    "got shape (2, 3, 4, 5)",
                    "rule: BatchNorm1d takes (N, C) or (N, C, L)",
                    "hint: images (N, C, H, W) go to BatchNorm2d");
    tg_release(x);
    x = tg_zeros(TG_SHAPE(3), TG_FLOAT32);
    cr_assert_null(tg_module_forward(m, x));
    tg_assert_error("tg_module_forward: BatchNorm1d expected 2D or 3D input, "
                    "got shape (3,)",
                    "hint:", "tg_unsqueeze(x, 0)");
    tg_release(x);
    cr_assert_eq(tg_item(tg_module_buffer(m, "num_batches_tracked")), 0);
    tg_module_free(m);
}

TG_TEST(nn_norm, batch_norm2d_rejects_2d_and_3d_input)
{
    tg_module *m = tg_batch_norm2d_new(3, NULL);
    tg_tensor *x = tg_zeros(TG_SHAPE(2, 3), TG_FLOAT32);
    cr_assert_null(tg_module_forward(m, x));
    tg_assert_error("tg_module_forward: BatchNorm2d expected 4D input, "
                    "got shape (2, 3)",
                    "rule: BatchNorm2d takes (N, C, H, W)",
                    "hint: features (N, C) or sequences (N, C, L) go to "
                    "BatchNorm1d");
    tg_release(x);
    x = tg_zeros(TG_SHAPE(2, 3, 4), TG_FLOAT32);
    cr_assert_null(tg_module_forward(m, x));
    tg_assert_error("tg_module_forward: BatchNorm2d expected 4D input, "
                    "got shape (2, 3, 4)");
    tg_release(x);
    cr_assert_eq(tg_item(tg_module_buffer(m, "num_batches_tracked")), 0);
    tg_module_free(m);
}

/* The channel count of x (dim 1) must be num_features; a failed forward
 * changes no state (PyTorch 1.13 counts the batch before it raises).
 * Without weight and running statistics nothing has num_features values,
 * and PyTorch normalises any C; so does tapegrad. */
TG_TEST(nn_norm, channel_mismatch)
{
    tg_module *m = tg_batch_norm1d_new(3, NULL);
    tg_tensor *x = batch(TG_SHAPE(4, 5), 1, TG_FLOAT32);
    cr_assert_null(tg_module_forward(m, x));
    tg_assert_error("tg_batch_norm: running_mean of shape (3,) does not "
                    "match the 5 channels of the input of shape (4, 5)",
                    "rule: dim 1 of x is the channel dim",
                    "hint: make the layer with num_features = x.shape[1] = "
                    "5");
    cr_assert_eq(tg_item(tg_module_buffer(m, "num_batches_tracked")), 0);
    tg_module_free(m);

    tg_batch_norm_config c = bn_config(1e-5, 0.1, false, true, false);
    m = tg_batch_norm2d_new(3, &c);
    tg_tensor *x3 = batch(TG_SHAPE(2, 4, 2, 2), 1, TG_FLOAT32);
    cr_assert_null(tg_module_forward(m, x3));
    tg_assert_error("weight of shape (3,) does not match the 4 channels");
    tg_release(x3);
    tg_module_free(m);

    c = bn_config(1e-5, 0.1, false, false, false);
    m = tg_batch_norm2d_new(3, &c);
    tg_tensor *x4 = batch(TG_SHAPE(2, 5, 2, 2), 2, TG_FLOAT32);
    tg_tensor *y = tg_module_forward(m, x4);
    cr_assert_not_null(y, "%s", tg_last_error());
    tg_release(y);
    tg_release(x4);
    tg_module_free(m);
    tg_release(x);
}

/* Training needs more than one value per channel. The failed forward
 * leaves running_mean, running_var and num_batches_tracked as they were
 * (PyTorch 1.13 has already counted the batch when it raises; here a
 * failed call changes nothing). Eval mode takes a single sample. */
TG_TEST(nn_norm, one_value_per_channel_in_training)
{
    tg_module *m = tg_batch_norm1d_new(3, NULL);
    tg_tensor *x = batch(TG_SHAPE(1, 3), 9, TG_FLOAT32);
    cr_assert_null(tg_module_forward(m, x));
    tg_assert_error("tg_batch_norm: ", "expected more than 1 value per channel "
                                 "when training, got input of shape (1, 3)",
                    "rule:", "hint: use a batch of at least 2 samples, or "
                             "eval mode");
    cr_assert_eq(tg_item(tg_module_buffer(m, "num_batches_tracked")), 0);
    tg_tensor *zeros = tg_zeros(TG_SHAPE(3), TG_FLOAT32);
    tg_tensor *ones = tg_ones(TG_SHAPE(3), TG_FLOAT32);
    tg_assert_close(tg_module_buffer(m, "running_mean"), zeros, 0, 0);
    tg_assert_close(tg_module_buffer(m, "running_var"), ones, 0, 0);
    tg_module_train(m, false);
    tg_tensor *y = tg_module_forward(m, x);
    cr_assert_not_null(y, "eval takes one sample: %s", tg_last_error());
    tg_release(y);
    tg_module_free(m);
    /* (1, C, 1, 1) images: one value per channel too; the cumulative
     * counter is not advanced either */
    tg_batch_norm_config c = bn_config(1e-5, 0.1, true, true, true);
    m = tg_batch_norm2d_new(3, &c);
    tg_tensor *x4 = batch(TG_SHAPE(1, 3, 1, 1), 10, TG_FLOAT32);
    cr_assert_null(tg_module_forward(m, x4));
    tg_assert_error("got input of shape (1, 3, 1, 1)");
    cr_assert_eq(tg_item(tg_module_buffer(m, "num_batches_tracked")), 0);
    tg_release(x4);
    tg_module_free(m);
    tg_release(ones);
    tg_release(zeros);
    tg_release(x);
}

TG_TEST(nn_norm, bad_num_features)
{
    const int64_t bad[] = {0, -3};
    for (int i = 0; i < 2; i++) {
        cr_assert_null(tg_batch_norm1d_new(bad[i], NULL));
        tg_assert_error("tg_batch_norm1d_new: num_features is",
                        "rule: num_features is the channel count C >= 1",
                        "hint: pass x.shape[1]");
        cr_assert_null(tg_batch_norm2d_new(bad[i], NULL));
        tg_assert_error("tg_batch_norm2d_new: num_features is");
    }
}

TG_TEST(nn_norm, bad_config)
{
    const struct {
        double eps, momentum;
        int64_t correction;
        const char *message;
    } bad[] = {
        {-1.0, 0.1, 0, "eps is -1"},
        {NAN, 0.1, 0, "eps is nan"},
        {INFINITY, 0.1, 0, "eps is inf"},
        {1e-5, 1.5, 0, "momentum is 1.5"},
        {1e-5, -0.1, 0, "momentum is -0.1"},
        {1e-5, NAN, 0, "momentum is nan"},
        {1e-5, 0.1, 2, "correction is 2"},
        {1e-5, 0.1, -1, "correction is -1"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        tg_batch_norm_config c = tg_batch_norm_config_defaults();
        c.eps = bad[i].eps;
        c.momentum = bad[i].momentum;
        c.correction = bad[i].correction;
        tg_clear_error();
        cr_assert_null(tg_batch_norm1d_new(3, &c), "case %zu", i);
        tg_assert_error("tg_batch_norm1d_new: ", bad[i].message, "rule:");
        cr_assert_null(tg_batch_norm2d_new(3, &c), "case %zu", i);
        tg_assert_error("tg_batch_norm2d_new: ", bad[i].message);
    }
    tg_assert_error("rule: the training variance divides by n - "
                    "correction");
    tg_batch_norm_config c = tg_batch_norm_config_defaults();
    c.momentum = 2.0;
    cr_assert_null(tg_batch_norm1d_new(3, &c));
    tg_assert_error("rule: momentum is in [0, 1]",
                    "hint: PyTorch's default is 0.1");
    c.eps = -1.0;
    c.momentum = 0.1;
    cr_assert_null(tg_batch_norm1d_new(3, &c));
    tg_assert_error("rule: eps is a finite number >= 0",
                    "hint: PyTorch's default is 1e-5");
    /* momentum is not used when cumulative (momentum=None) */
    c = tg_batch_norm_config_defaults();
    c.cumulative = true;
    c.momentum = NAN;
    tg_module *m = tg_batch_norm1d_new(3, &c);
    cr_assert_not_null(m, "%s", tg_last_error());
    tg_module_free(m);
}

TG_TEST(nn_norm, layer_norm_bad_normalized_shape)
{
    cr_assert_null(tg_layer_norm_new(TG_SHAPE(4), -1.0, true));
    tg_assert_error("tg_layer_norm_new: eps is -1");
    const int64_t nine[9] = {1, 1, 1, 1, 1, 1, 1, 1, 1};
    cr_assert_null(tg_layer_norm_new(nine, 0, 1e-5, true));
    tg_assert_error("tg_layer_norm_new: normalized_shape has 0 dims",
                    "rule: LayerNorm normalises over 1..8 trailing dims",
                    "hint: tg_layer_norm_new(TG_SHAPE(768), 1e-5, true)");
    cr_assert_null(tg_layer_norm_new(nine, 9, 1e-5, true));
    tg_assert_error("normalized_shape has 9 dims");
    cr_assert_null(tg_layer_norm_new(NULL, 1, 1e-5, true));
    tg_assert_error("tg_layer_norm_new: normalized_shape");
    cr_assert_null(tg_layer_norm_new(TG_SHAPE(3, -1), 1e-5, true));
    tg_assert_error("tg_layer_norm_new: invalid shape (3, -1)");
}

TG_TEST(nn_norm, layer_norm_rejects_other_trailing_dims)
{
    tg_module *m = tg_layer_norm_new(TG_SHAPE(3, 5), 1e-5, true);
    tg_tensor *x = tg_zeros(TG_SHAPE(2, 5, 3), TG_FLOAT32);
    cr_assert_null(tg_module_forward(m, x));
    tg_assert_error("the input of shape (2, 5, 3) does not end with "
                    "normalized_shape (3, 5)",
                    "rule: the last 2 dims of x must equal normalized_shape",
                    "hint:");
    tg_release(x);
    x = tg_zeros(TG_SHAPE(5), TG_FLOAT32);
    cr_assert_null(tg_module_forward(m, x));
    tg_assert_error("normalized_shape has 2 dims but the input of shape "
                    "(5,) has 1");
    tg_release(x);
    tg_module_free(m);
}

/* -------------------------------------------------------------- gradcheck */

/* The layer (user) applied to inputs[0]. The other inputs are the layer's
 * own weight and bias, which gradcheck perturbs in place. */
static tg_tensor *f_layer(const tg_tensor *const *in, int n, void *user)
{
    (void)in, (void)n;
    return tg_module_forward(user, in[0]);
}

/* gradcheck w.r.t. x and, when the layer has them, weight and bias. The
 * layer must be float64 already. */
static void gradcheck_layer(tg_module *m, const tg_tensor *x32,
                            const char *what)
{
    tg_tensor *x = tg_to_dtype(x32, TG_FLOAT64);
    cr_assert_eq(tg_set_requires_grad(x, true), 0);
    tg_tensor *in[3] = {x, NULL, NULL};
    int n = 1;
    if (tg_module_named_parameters(m, NULL, 0) == 2) {
        in[n++] = tg_module_parameter(m, "weight");
        in[n++] = tg_module_parameter(m, "bias");
    }
    tg_gradcheck_result r;
    int rc = tg_gradcheck(f_layer, m, in, n, NULL, &r);
    cr_assert_eq(rc, 1, "%s: %s %s", what, r.message, tg_last_error());
    tg_release(x);
}

/* Trains a float32 layer on three batches (so the running statistics are
 * not the initial 0 and 1), converts it to float64 and puts it in eval
 * mode: the running statistics are then constants, y is affine in x. */
static tg_module *trained_eval_layer(tg_module *m, const int64_t *shape,
                                     int ndim)
{
    set_affine(m);
    for (uint64_t s = 0; s < 3; s++) {
        tg_tensor *x = batch(shape, ndim, 100 + s, TG_FLOAT32);
        tg_tensor *y = tg_module_forward(m, x);
        cr_assert_not_null(y, "%s", tg_last_error());
        tg_release(y);
        tg_release(x);
    }
    cr_assert_eq(tg_module_to_dtype(m, TG_FLOAT64), 0, "%s",
                 tg_last_error());
    tg_module_train(m, false);
    return m;
}

/* Default settings (float64: eps 1e-6, atol 1e-5, rtol 1e-3). */
TG_TEST(nn_norm, gradcheck_in_eval_mode)
{
    const int64_t s1[] = {4, 3, 2}, s2[] = {2, 2, 3, 2}, s0[] = {5, 3};
    tg_module *m = trained_eval_layer(tg_batch_norm1d_new(3, NULL), s1, 3);
    tg_tensor *x = batch(s1, 3, 200, TG_FLOAT32);
    gradcheck_layer(m, x, "BatchNorm1d (N, C, L), eval");
    tg_release(x);
    tg_module_free(m);
    m = trained_eval_layer(tg_batch_norm1d_new(3, NULL), s0, 2);
    x = batch(s0, 2, 201, TG_FLOAT32);
    gradcheck_layer(m, x, "BatchNorm1d (N, C), eval");
    tg_release(x);
    tg_module_free(m);
    m = trained_eval_layer(tg_batch_norm2d_new(2, NULL), s2, 4);
    x = batch(s2, 4, 202, TG_FLOAT32);
    gradcheck_layer(m, x, "BatchNorm2d, eval");
    tg_release(x);
    tg_module_free(m);
    m = trained_eval_layer(tg_layer_norm_new(TG_SHAPE(3, 2), 1e-5, true), s1,
                           3);
    x = batch(s1, 3, 203, TG_FLOAT32);
    gradcheck_layer(m, x, "LayerNorm, eval");
    tg_release(x);
    tg_module_free(m);
}

/* In training mode every call of the layer with running statistics moves
 * them and counts a batch, so the many evaluations gradcheck makes would
 * each see a different layer state (the training output does not read the
 * running statistics, but the layer is not left as it was). The training
 * checks therefore use layers without them: the full batch-statistics
 * backward, including the unbiased variant, and LayerNorm. */
TG_TEST(nn_norm, gradcheck_in_training_mode)
{
    const int64_t s1[] = {4, 3, 2}, s2[] = {2, 2, 3, 2}, s0[] = {5, 3};
    tg_batch_norm_config c = bn_config(1e-5, 0.1, false, true, false);
    struct {
        tg_module *m;
        const int64_t *shape;
        int ndim;
        const char *what;
    } layers[5] = {
        {tg_batch_norm1d_new(3, &c), s1, 3, "BatchNorm1d (N, C, L)"},
        {tg_batch_norm1d_new(3, &c), s0, 2, "BatchNorm1d (N, C)"},
        {tg_batch_norm2d_new(2, &c), s2, 4, "BatchNorm2d"},
        {NULL, s0, 2, "BatchNorm1d (N, C), correction 1"},
        {tg_layer_norm_new(TG_SHAPE(3, 2), 1e-5, true), s1, 3, "LayerNorm"},
    };
    c.correction = 1;
    layers[3].m = tg_batch_norm1d_new(3, &c);
    for (int i = 0; i < 5; i++) {
        tg_module *m = layers[i].m;
        cr_assert_not_null(m, "%s", tg_last_error());
        set_affine(m);
        cr_assert_eq(tg_module_to_dtype(m, TG_FLOAT64), 0);
        cr_assert(tg_module_is_training(m));
        tg_tensor *x = batch(layers[i].shape, layers[i].ndim, 300 + (uint64_t)i,
                             TG_FLOAT32);
        gradcheck_layer(m, x, layers[i].what);
        tg_release(x);
        tg_module_free(m);
    }
}

/* The check must catch a wrong gradient: BatchNorm in training with the
 * batch statistics taken as constants (computed without the tape and fed
 * as if they were running statistics). The output is the true training
 * output, but the gradient misses the paths through mean and variance. */
static tg_tensor *f_stats_as_constants(const tg_tensor *const *in, int n,
                                       void *user)
{
    (void)n;
    tg_module *m = user;
    tg_no_grad_begin();
    tg_tensor *mean = tg_mean(in[0], TG_DIMS(0, 2), false);
    tg_tensor *var = tg_var(in[0], TG_DIMS(0, 2), 0, false);
    tg_no_grad_end();
    tg_batch_norm_options o = tg_batch_norm_defaults();
    o.eval = true;
    tg_tensor *y = tg_batch_norm_ex(in[0], mean, var,
                                    tg_module_parameter(m, "weight"),
                                    tg_module_parameter(m, "bias"), &o, NULL,
                                    NULL);
    tg_release(var);
    tg_release(mean);
    return y;
}

TG_TEST(nn_norm, gradcheck_catches_statistics_taken_as_constants)
{
    tg_batch_norm_config c = bn_config(1e-5, 0.1, false, true, false);
    tg_module *m = tg_batch_norm1d_new(3, &c);
    set_affine(m);
    cr_assert_eq(tg_module_to_dtype(m, TG_FLOAT64), 0);
    tg_tensor *x32 = batch(TG_SHAPE(4, 3, 2), 400, TG_FLOAT32);
    tg_tensor *x = tg_to_dtype(x32, TG_FLOAT64);
    cr_assert_eq(tg_set_requires_grad(x, true), 0);
    /* the forward is right: the layer's own training output */
    tg_tensor *y_wrong = f_stats_as_constants(tg_test_inputs(&x), 1, m);
    tg_tensor *y_right = tg_module_forward(m, x);
    tg_assert_close(y_wrong, y_right, 1e-12, 1e-12);
    tg_release(y_right);
    tg_release(y_wrong);
    tg_tensor *in[3] = {x, tg_module_parameter(m, "weight"),
                        tg_module_parameter(m, "bias")};
    tg_gradcheck_options o = tg_gradcheck_defaults();
    o.quiet = true;
    tg_gradcheck_result r;
    cr_assert_eq(tg_gradcheck(f_stats_as_constants, m, in, 3, &o, &r), 0,
                 "a gradient without the statistics' paths passed");
    cr_assert_not(r.passed);
    cr_assert_eq(r.input, 0, "x's gradient is the wrong one, not %d's",
                 r.input);
    /* and the real layer passes the same check */
    cr_assert_eq(tg_gradcheck(f_layer, m, in, 3, &o, &r), 1, "%s",
                 r.message);
    tg_release(x);
    tg_release(x32);
    tg_module_free(m);
}
