/*
 * tests/nn/test_layers.c - the layers of nn/layers.c: Linear, ReLU, Tanh,
 * GELU, Dropout, Sequential and tg_mlp_new.
 *
 * Covered here: Linear's initial weights bit for bit against vectors
 * PyTorch printed and against NumPy's MT19937 (scripts/reference/
 * gen_nn_layers.py); Linear's forward and backward against NumPy; one SGD
 * step (and two with momentum and weight decay) of a tiny model against the
 * NumPy generator's hand-written forward, backward and update; gradcheck
 * of small Sequentials in float64; the activations as their ops; Dropout's
 * statistics, scaling, gradient and modes; Sequential's names, order,
 * ownership (also when a constructor inside TG_SEQUENTIAL fails) and
 * errors; a Sequential with BatchNorm1d in eval mode; the MLP builder; what
 * every layer prints (each text pasted from PyTorch 1.13's repr).
 */
#include "../common.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

/* ---------------------------------------------------------------- helpers */

/* tests/reference/nn_layers_<what>.npy (new reference). */
static tg_tensor *load(const char *what)
{
    char name[128];
    snprintf(name, sizeof name, "nn_layers_%s", what);
    return tg_test_load_ref(name);
}

static tg_module *check_module(tg_module *m)
{
    cr_assert_not_null(m, "%s", tg_last_error());
    return m;
}

static tg_tensor *check(tg_tensor *t)
{
    cr_assert_not_null(t, "%s", tg_last_error());
    return t;
}

/* Asserts that the float32 tensor t holds exactly the given bit patterns
 * (C order). */
static void expect_bits(const tg_tensor *t, const uint32_t *bits, int64_t n,
                        const char *what)
{
    cr_assert_eq(t->dtype, TG_FLOAT32, "%s", what);
    cr_assert_eq(t->numel, n, "%s: %lld elements, expected %lld", what,
                 (long long)t->numel, (long long)n);
    cr_assert(tg_is_contiguous(t), "%s", what);
    const float *v = tg_data_f32(t);
    for (int64_t i = 0; i < n; i++) {
        uint32_t b;
        memcpy(&b, &v[i], sizeof b);
        cr_assert_eq(b, bits[i], "%s[%lld] is %.9g (0x%08x), PyTorch has 0x%08x",
                     what, (long long)i, (double)v[i], b, bits[i]);
    }
}

/* Writes value into a parameter, outside the tape. */
static void set_tensor(tg_tensor *dst, const tg_tensor *value)
{
    tg_no_grad_begin();
    int rc = tg_copy_(dst, value);
    tg_no_grad_end();
    cr_assert_eq(rc, 0, "%s", tg_last_error());
}

/* The type name of child i of m. */
static const char *child_type(const tg_module *m, int i)
{
    tg_module *c = tg_module_child_at(m, i);
    cr_assert_not_null(c, "%s", tg_last_error());
    return tg_module_get_type(c)->name;
}

/* A (shape) batch from N(0, 1) of its own generator (new reference). */
static tg_tensor *batch(const int64_t *shape, int ndim, uint64_t seed,
                        tg_dtype dtype)
{
    tg_generator *g = tg_generator_new(seed);
    tg_tensor *x = tg_randn_gen(g, shape, ndim, dtype);
    tg_generator_free(g);
    return check(x);
}

/* ----------------------------------------------- initial weights: PyTorch */

/* The vectors below were printed by PyTorch 1.13.1 itself and are copied
 * from shared/reference/torch-rng-vectors.txt (also in tests/reference/):
 * torch.manual_seed(42); nn.Linear(3, 2), and torch.manual_seed(1);
 * lin = nn.Linear(4, 3); x = torch.rand(2, 4); lin(x). Bit for bit, as
 * SEMANTICS.md section 5 promises. */
TG_TEST(layers, linear_init_matches_pytorch_vectors)
{
    static const uint32_t w42[] = {0x3ee20009, 0x3ef55a65, 0xbe0a80e2,
                                   0x3f07c5b4, 0xbe018916, 0x3dee999a};
    static const uint32_t b42[] = {0xbe8fea7d, 0x3ead9a4b};
    tg_manual_seed(42);
    tg_module *lin = check_module(tg_linear_new(3, 2, true));
    tg_tensor *w = tg_module_parameter(lin, "weight");
    cr_assert_eq(w->ndim, 2);
    cr_assert_eq(w->shape[0], 2, "weight is (out, in)");
    cr_assert_eq(w->shape[1], 3);
    expect_bits(w, w42, 6, "Linear(3, 2).weight, seed 42");
    expect_bits(tg_module_parameter(lin, "bias"), b42, 2,
                "Linear(3, 2).bias, seed 42");
    tg_module_free(lin);

    static const uint32_t w1[] = {0x3e83e84a, 0xbe61fc54, 0xbdc683a0,
                                  0x3e705120, 0xbef10202, 0x3e998712,
                                  0xbdd2a9a8, 0x3e823d0a, 0x3d8e5a78,
                                  0xbd7ac400, 0x3e0e0240, 0x3cca1020};
    static const uint32_t b1[] = {0x3e3aff30, 0xbe4786e4, 0xbd155130};
    static const uint32_t x1[] = {0x3ee8f3f8, 0x3f128d86, 0x3efefa32,
                                  0x3f6fe4b2, 0x3f27d514, 0x3ea0a9fc,
                                  0x3e4ac594, 0x3ed51724};
    static const float y1[] = {0.34514176845550537f, -0.05021844804286957f,
                               0.052300333976745605f, 0.3607442080974579f,
                               -0.3238576650619507f, 0.027630910277366638f};
    tg_manual_seed(1);
    lin = check_module(tg_linear_new(4, 3, true));
    expect_bits(tg_module_parameter(lin, "weight"), w1, 12,
                "Linear(4, 3).weight, seed 1");
    expect_bits(tg_module_parameter(lin, "bias"), b1, 3,
                "Linear(4, 3).bias, seed 1");
    /* the generator is left where PyTorch leaves it */
    tg_tensor *x = check(tg_rand(TG_SHAPE(2, 4), TG_FLOAT32));
    expect_bits(x, x1, 8, "rand(2, 4) drawn after the layer");
    tg_tensor *y = check(tg_module_forward(lin, x));
    tg_tensor *e = check(tg_from_array(y1, TG_SHAPE(2, 3), TG_FLOAT32));
    /* PyTorch sums the four products in float32 (sgemm), tapegrad in
     * double with one rounding, then each adds the bias: a few float32
     * ulps of values below 0.4 (3e-8 each) apart at most. A wrong layout
     * (x W instead of x W^T) or bias is off by more than 0.01. */
    tg_assert_close(y, e, 0, 1e-6);
    tg_release(e);
    tg_release(y);
    tg_release(x);
    tg_module_free(lin);
}

/* ------------------------------------------------ initial weights: NumPy */

/* The cases of gen_nn_layers.py's INIT: name, seed, in, out. */
static const struct {
    const char *name;
    uint64_t seed;
    int64_t in, out;
} init_cases[] = {
    {"l5x7", 123, 5, 7},
    {"l1x4", 7, 1, 4},
    {"l64x3", 2024, 64, 3},
    {"l10x6", 99, 10, 6},
};

/* Compares parameter `param` of m with the reference exactly (tolerance
 * 0: the NumPy generator reproduces the draws and the single rounding
 * bit for bit). */
static void expect_exact(tg_module *m, const char *param, const char *ref)
{
    tg_tensor *e = load(ref);
    tg_tensor *p = tg_module_parameter(m, param);
    cr_assert_not_null(p, "%s", tg_last_error());
    char report[1024];
    cr_assert(tg_test_close(p, e, 0, 0, true, report, sizeof report),
              "%s vs %s: %s", param, ref, report);
    tg_release(e);
}

TG_TEST(layers, linear_init_matches_numpy_mt19937)
{
    char ref[96];
    for (size_t i = 0; i < sizeof init_cases / sizeof *init_cases; i++) {
        tg_manual_seed(init_cases[i].seed);
        tg_module *m = check_module(
            tg_linear_new(init_cases[i].in, init_cases[i].out, true));
        snprintf(ref, sizeof ref, "init_%s_weight", init_cases[i].name);
        expect_exact(m, "weight", ref);
        snprintf(ref, sizeof ref, "init_%s_bias", init_cases[i].name);
        expect_exact(m, "bias", ref);
        tg_module_free(m);
    }
    /* A layer without bias draws only its weight: the next layer starts
     * right after it (seed 5: Linear(4, 3, bias=False), Linear(3, 2)). */
    tg_manual_seed(5);
    tg_module *a = check_module(tg_linear_new(4, 3, false));
    tg_module *b = check_module(tg_linear_new(3, 2, true));
    cr_assert_eq(tg_module_named_parameters(a, NULL, 0), 1);
    expect_exact(a, "weight", "init_chain0_weight");
    expect_exact(b, "weight", "init_chain1_weight");
    expect_exact(b, "bias", "init_chain1_bias");
    tg_module_free(b);
    tg_module_free(a);
}

/* The exact comparison must catch a one-ulp error. The draws of
 * tg_linear_new are the float32 uniforms u of tg_rand after the same seed
 * (the low 24 bits of each 32-bit draw), turned into fmaf(u, 2k, -k).
 * Computing u * 2k and then adding -k rounds twice, which PyTorch's build
 * does not: in about half of the elements that is one ulp off, and the
 * check must reject it. (Not with in_features 64: 2k = 1/4 is a power of
 * two, u * 2k is exact and both forms agree.) The fused form must equal the reference exactly,
 * and a neighbouring seed must not. */
TG_TEST(layers, init_check_rejects_unfused_rounding_and_other_seeds)
{
    tg_tensor *ref = load("init_l5x7_weight"); // Linear(5, 7), seed 123
    tg_manual_seed(123);
    tg_tensor *u = check(tg_rand(TG_SHAPE(7, 5), TG_FLOAT32));
    tg_tensor *fused = check(tg_empty_like(u));
    tg_tensor *unfused = check(tg_empty_like(u));
    const float k = (float)(1.0 / sqrt(5.0)), two_k = k - -k;
    const float *uv = tg_data_f32(u);
    float *fv = tg_data_f32(fused), *nv = tg_data_f32(unfused);
    int64_t differ = 0;
    for (int64_t i = 0; i < u->numel; i++) {
        fv[i] = fmaf(uv[i], two_k, -k);
        volatile float product = uv[i] * two_k; // rounded on its own
        nv[i] = product + -k;
        differ += fv[i] != nv[i];
    }
    cr_assert_gt(differ, 0, "no element tells fused from unfused apart");
    char report[1024];
    cr_assert(tg_test_close(fused, ref, 0, 0, true, report, sizeof report),
              "fmaf(u, 2k, -k) is not PyTorch's init: %s", report);
    cr_assert_not(
        tg_test_close(unfused, ref, 0, 0, true, report, sizeof report),
        "the unfused init (%lld elements off by an ulp) passed",
        (long long)differ);
    tg_manual_seed(124);
    tg_module *m = check_module(tg_linear_new(5, 7, true));
    cr_assert_not(tg_test_close(tg_module_parameter(m, "weight"), ref, 0, 0,
                                true, report, sizeof report),
                  "seed 124 passed for seed 123");
    tg_module_free(m);
    tg_release(unfused);
    tg_release(fused);
    tg_release(u);
    tg_release(ref);
}

/* --------------------------------------------------- forward and backward */

/* Linear(5, 7) (INIT case l5x7, seed 123) on x (2, 3, 5): y = x W^T + b
 * and, for L = sum(g * y), dx = g W, dW = g^T x and db = sum of g over the
 * 6 rows, against NumPy's float64 results rounded once.
 * Tolerance: tapegrad sums the products in double and rounds, then adds
 * the bias in float32 (1.5 ulp in all); values are below 8 in magnitude,
 * so 1e-6 absolute plus 1e-6 relative is a few ulp. A missing bias or a
 * transposed weight is off by 0.1 or more. */
TG_TEST(layers, linear_forward_and_backward_match_numpy)
{
    tg_manual_seed(123);
    tg_module *m = check_module(tg_linear_new(5, 7, true));
    expect_exact(m, "weight", "init_l5x7_weight");
    tg_tensor *x = load("fwd_x"), *g = load("fwd_g");
    cr_assert_eq(tg_set_requires_grad(x, true), 0);
    tg_tensor *y = check(tg_module_forward(m, x));
    cr_assert_eq(y->ndim, 3);
    cr_assert_eq(y->shape[2], 7);
    tg_tensor *y_ref = load("fwd_y");
    tg_assert_close(y, y_ref, 1e-6, 1e-6);
    cr_assert_eq(tg_backward_ex(y, &(tg_backward_options){.grad = g}), 0,
                 "%s", tg_last_error());
    tg_test_check_ref(tg_retain(x->grad), "nn_layers_fwd_dx", 1e-6, 1e-6);
    tg_test_check_ref(tg_retain(tg_module_parameter(m, "weight")->grad),
                      "nn_layers_fwd_dweight", 1e-6, 1e-6);
    tg_test_check_ref(tg_retain(tg_module_parameter(m, "bias")->grad),
                      "nn_layers_fwd_dbias", 1e-6, 1e-6);

    /* one sample (5,) gives (7,): row [0, 0] of the batch result */
    tg_tensor *x0 = check(tg_select(x, 0, 0)), *x00 = check(tg_select(x0, 0, 0));
    tg_tensor *y00 = check(tg_module_forward(m, x00));
    cr_assert_eq(y00->ndim, 1);
    tg_tensor *r0 = check(tg_select(y_ref, 0, 0)), *r00 = check(tg_select(r0, 0, 0));
    tg_assert_close(y00, r00, 1e-6, 1e-6);

    /* The check must fail on a wrong answer: the same weight without the
     * bias. */
    tg_module *nobias = check_module(tg_linear_new(5, 7, false));
    set_tensor(tg_module_parameter(nobias, "weight"),
               tg_module_parameter(m, "weight"));
    tg_tensor *y_nb = check(tg_module_forward(nobias, x));
    char report[1024];
    cr_assert_not(tg_test_close(y_nb, y_ref, 1e-6, 1e-6, true, report,
                                sizeof report),
                  "a Linear without its bias passed");
    /* ... which is y - b */
    tg_tensor *yb = check(tg_sub(y_ref, tg_module_parameter(m, "bias")));
    tg_assert_close(y_nb, yb, 1e-6, 1e-6);
    tg_release(yb);
    tg_release(y_nb);
    tg_module_free(nobias);
    tg_release(r00);
    tg_release(r0);
    tg_release(y00);
    tg_release(x00);
    tg_release(x0);
    tg_release(y_ref);
    tg_release(y);
    tg_release(g);
    tg_release(x);
    tg_module_free(m);
}

/* ------------------------------------------------ one training step (SGD) */

static const char *const sgd_params[] = {"0.weight", "0.bias", "2.weight",
                                         "2.bias"};
static const char *const sgd_refs[] = {"0w", "0b", "2w", "2b"};

/* The tiny model of gen_nn_layers.py: nn.Sequential(nn.Linear(3, 4),
 * nn.Tanh(), nn.Linear(4, 2)) after torch.manual_seed(0). */
static tg_module *tiny_model(void)
{
    /* One statement per layer: the arguments of TG_SEQUENTIAL(...) (an
     * array initialiser) may be evaluated in any order in C, and the
     * layers must draw their weights in PyTorch's order. */
    tg_manual_seed(0);
    tg_module *layers[3];
    layers[0] = tg_linear_new(3, 4, true);
    layers[1] = tg_tanh_new();
    layers[2] = tg_linear_new(4, 2, true);
    return check_module(tg_sequential_new(layers, 3));
}

/* Forward, cross-entropy (mean) and backward on the fixture's batch;
 * returns the loss (new reference). */
static tg_tensor *tiny_loss(tg_module *m)
{
    tg_tensor *x = load("sgd_x"), *labels = load("sgd_labels");
    tg_tensor *logits = check(tg_module_forward(m, x));
    tg_tensor *loss = check(tg_cross_entropy(logits, labels,
                                             TG_REDUCTION_MEAN));
    cr_assert_eq(tg_backward(loss), 0, "%s", tg_last_error());
    tg_release(logits);
    tg_release(labels);
    tg_release(x);
    return loss;
}

/* Every parameter of m against nn_layers_sgd_<p>_<stage>. */
static void expect_params(tg_module *m, const char *stage, double tol)
{
    char ref[64];
    for (int i = 0; i < 4; i++) {
        snprintf(ref, sizeof ref, "nn_layers_sgd_%s_%s", sgd_refs[i], stage);
        tg_tensor *p = tg_module_parameter(m, sgd_params[i]);
        cr_assert_not_null(p, "%s", tg_last_error());
        tg_test_check_ref(tg_retain(p), ref, tol, tol);
    }
}

/* One step of plain SGD (lr 0.1) from PyTorch's initial weights. The
 * initial weights are exact; the loss, the gradients and the updated
 * weights are NumPy's float64 results rounded once.
 * Tolerance 1e-6 (absolute and relative): every value is below 1 in
 * magnitude and goes through a handful of float32 roundings (matmul,
 * bias, tanh, log-softmax, the update), a few 1e-8 each. A step with lr
 * 0.11 moves weights by up to 3e-4 more. (PyTorch itself agrees with the
 * NumPy values within 1.5e-8.) */
TG_TEST(layers, one_sgd_step_matches_pytorch_rules)
{
    tg_module *m = tiny_model();
    expect_params(m, "init", 0);
    tg_tensor *loss = tiny_loss(m);
    tg_test_check_ref(loss, "nn_layers_sgd_loss", 1e-6, 1e-6);
    char ref[64];
    for (int i = 0; i < 4; i++) {
        snprintf(ref, sizeof ref, "nn_layers_sgd_%s_grad", sgd_refs[i]);
        tg_tensor *p = tg_module_parameter(m, sgd_params[i]);
        cr_assert_not_null(p->grad, "%s has no gradient", sgd_params[i]);
        tg_test_check_ref(tg_retain(p->grad), ref, 1e-6, 1e-6);
    }
    tg_sgd_config c = {.lr = 0.1};
    tg_optimizer *opt = tg_sgd_new(m, &c);
    cr_assert_not_null(opt, "%s", tg_last_error());
    cr_assert_eq(tg_optimizer_step(opt), 0, "%s", tg_last_error());
    expect_params(m, "sgd1", 1e-6);
    tg_optimizer_free(opt);
    tg_module_free(m);
}

/* The comparison must reject a wrong step: lr 0.11 instead of 0.1. */
TG_TEST(layers, sgd_check_rejects_a_wrong_learning_rate)
{
    tg_module *m = tiny_model();
    tg_release(tiny_loss(m));
    tg_sgd_config c = {.lr = 0.11};
    tg_optimizer *opt = tg_sgd_new(m, &c);
    cr_assert_not_null(opt, "%s", tg_last_error());
    cr_assert_eq(tg_optimizer_step(opt), 0, "%s", tg_last_error());
    tg_tensor *e = load("sgd_0w_sgd1");
    char report[1024];
    cr_assert_not(tg_test_close(tg_module_parameter(m, "0.weight"), e, 1e-6,
                                1e-6, true, report, sizeof report),
                  "a step with lr 0.11 passed for 0.1");
    tg_release(e);
    tg_optimizer_free(opt);
    tg_module_free(m);
}

/* Two steps of SGD with lr 0.1, momentum 0.9 and weight_decay 1e-2, with a
 * fresh forward and backward (gradients zeroed) before the second: the
 * second step uses the momentum buffer of the first. Same tolerance as
 * above (the second step's gradient is taken at weights that went
 * through one more float32 update). */
TG_TEST(layers, two_sgd_momentum_steps_match_pytorch_rules)
{
    tg_module *m = tiny_model();
    tg_sgd_config c = {.lr = 0.1};
    c.momentum = 0.9;
    c.weight_decay = 1e-2;
    tg_optimizer *opt = tg_sgd_new(m, &c);
    cr_assert_not_null(opt, "%s", tg_last_error());
    tg_release(tiny_loss(m));
    cr_assert_eq(tg_optimizer_step(opt), 0, "%s", tg_last_error());
    expect_params(m, "mom1", 1e-6);
    tg_optimizer_zero_grad(opt);
    tg_tensor *loss = tiny_loss(m);
    tg_test_check_ref(loss, "nn_layers_sgd_loss2", 1e-6, 1e-6);
    cr_assert_eq(tg_optimizer_step(opt), 0, "%s", tg_last_error());
    expect_params(m, "mom2", 1e-6);
    tg_optimizer_free(opt);
    tg_module_free(m);
}

/* -------------------------------------------------------------- gradcheck */

/* The model (user) applied to inputs[0]; the other inputs are the model's
 * own parameters, which gradcheck perturbs in place. */
static tg_tensor *f_model(const tg_tensor *const *in, int n, void *user)
{
    (void)n;
    return tg_module_forward(user, in[0]);
}

/* gradcheck of m (converted to float64) w.r.t. a float64 x and every
 * parameter, with the float64 defaults (eps 1e-6, atol 1e-5, rtol
 * 1e-3). Returns tg_gradcheck's result. */
static int gradcheck_model(tg_module *m, const tg_tensor *x,
                           tg_gradcheck_result *r)
{
    cr_assert_eq(tg_module_to_dtype(m, TG_FLOAT64), 0, "%s", tg_last_error());
    tg_named_tensor p[16];
    int np = tg_module_named_parameters(m, p, 16);
    cr_assert(np >= 0 && np < 16);
    tg_tensor *in[17] = {(tg_tensor *)x};
    for (int i = 0; i < np; i++)
        in[i + 1] = p[i].tensor;
    return tg_gradcheck(f_model, m, in, np + 1, NULL, r);
}

/* Smallest |pre-activation| of x through the first Linear of m: a ReLU
 * gradcheck needs all of them far from the kink at 0 compared with
 * eps = 1e-6. */
static double min_abs_preactivation(tg_module *m, const tg_tensor *x)
{
    tg_no_grad_begin();
    tg_tensor *a = check(tg_module_forward(tg_module_child_at(m, 0), x));
    tg_no_grad_end();
    double v[64], lo = INFINITY;
    cr_assert_leq(a->numel, 64);
    cr_assert_eq(tg_to_f64_array(a, v), 0);
    for (int64_t i = 0; i < a->numel; i++)
        lo = fmin(lo, fabs(v[i]));
    tg_release(a);
    return lo;
}

TG_TEST(layers, gradcheck_of_small_sequentials)
{
    tg_manual_seed(11);
    struct {
        tg_module *m;
        int64_t shape[3];
        int ndim;
        const char *what;
    } cases[] = {
        {TG_SEQUENTIAL(tg_linear_new(3, 4, true), tg_tanh_new(),
                       tg_linear_new(4, 2, true)),
         {5, 3}, 2, "Linear -> Tanh -> Linear"},
        {TG_SEQUENTIAL(tg_linear_new(3, 5, true), tg_gelu_new(TG_GELU_EXACT),
                       tg_linear_new(5, 4, false),
                       tg_gelu_new(TG_GELU_TANH), tg_linear_new(4, 2, true)),
         {2, 2, 3}, 3, "Linear -> GELU -> Linear (no bias) -> GELU(tanh) "
                       "-> Linear, on (2, 2, 3)"},
        {TG_SEQUENTIAL(tg_linear_new(3, 4, true), tg_relu_new(),
                       tg_linear_new(4, 3, true)),
         {4, 3}, 2, "Linear -> ReLU -> Linear"},
        {TG_SEQUENTIAL(tg_linear_new(2, 3, true)), {2}, 1,
         "Linear on one sample (2,)"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        tg_module *m = check_module(cases[i].m);
        tg_tensor *x = batch(cases[i].shape, cases[i].ndim, 40 + i,
                             TG_FLOAT64);
        cr_assert_eq(tg_set_requires_grad(x, true), 0);
        if (i == 2) {
            cr_assert_eq(tg_module_to_dtype(m, TG_FLOAT64), 0);
            cr_assert_gt(min_abs_preactivation(m, x), 1e-3,
                         "a ReLU input is at the kink");
        }
        tg_gradcheck_result r;
        int rc = gradcheck_model(m, x, &r);
        cr_assert_eq(rc, 1, "%s: %s %s", cases[i].what, r.message,
                     tg_last_error());
        tg_release(x);
        tg_module_free(m);
    }
}

/* gradcheck must reject a wrong gradient: a Linear whose forward uses a
 * detached weight gives the right output but no gradient to the weight. */
static tg_tensor *f_detached_weight(const tg_tensor *const *in, int n, void *user)
{
    (void)n, (void)user;
    tg_tensor *w = tg_detach(in[1]);
    tg_tensor *wt = tg_transpose(w, 0, 1);
    tg_tensor *xw = tg_matmul(in[0], wt);
    tg_tensor *y = tg_add(xw, in[2]);
    tg_release(xw);
    tg_release(wt);
    tg_release(w);
    return y;
}

TG_TEST(layers, gradcheck_rejects_a_missing_weight_gradient)
{
    tg_manual_seed(3);
    tg_module *m = check_module(tg_linear_new(3, 2, true));
    cr_assert_eq(tg_module_to_dtype(m, TG_FLOAT64), 0);
    tg_tensor *x = batch(TG_SHAPE(4, 3), 50, TG_FLOAT64);
    cr_assert_eq(tg_set_requires_grad(x, true), 0);
    tg_tensor *in[3] = {x, tg_module_parameter(m, "weight"),
                        tg_module_parameter(m, "bias")};
    /* the forward is the layer's */
    tg_tensor *y_wrong = check(f_detached_weight(tg_test_inputs(in), 3, NULL));
    tg_tensor *y = check(tg_module_forward(m, x));
    tg_assert_close(y_wrong, y, 0, 0);
    tg_release(y);
    tg_release(y_wrong);
    tg_gradcheck_options o = tg_gradcheck_defaults();
    o.quiet = true;
    tg_gradcheck_result r;
    cr_assert_eq(tg_gradcheck(f_detached_weight, NULL, in, 3, &o, &r), 0,
                 "the missing weight gradient passed");
    cr_assert_eq(r.input, 1, "the failure is reported on input %d", r.input);
    tg_release(x);
    tg_module_free(m);
}

/* ------------------------------------------------------------ activations */

/* The activation modules are their ops: the same numbers, the same node. */
TG_TEST(layers, activations_apply_their_ops)
{
    tg_tensor *x = batch(TG_SHAPE(3, 4), 60, TG_FLOAT32);
    cr_assert_eq(tg_set_requires_grad(x, true), 0);
    struct {
        tg_module *m;
        tg_tensor *expected;
    } cases[] = {
        {tg_relu_new(), tg_relu(x)},
        {tg_tanh_new(), tg_tanh(x)},
        {tg_gelu_new(TG_GELU_EXACT), tg_gelu(x, TG_GELU_EXACT)},
        {tg_gelu_new(TG_GELU_TANH), tg_gelu(x, TG_GELU_TANH)},
    };
    tg_tensor *outs[4];
    for (int i = 0; i < 4; i++) {
        check_module(cases[i].m);
        outs[i] = check(tg_module_forward(cases[i].m, x));
        tg_assert_close(outs[i], cases[i].expected, 0, 0);
        cr_assert_str_eq(tg_grad_fn_name(outs[i]),
                         tg_grad_fn_name(cases[i].expected));
    }
    /* the approximation is passed on: the two GELUs differ */
    char report[1024];
    cr_assert_not(tg_test_close(outs[2], outs[3], 0, 0, true, report,
                                sizeof report));
    for (int i = 0; i < 4; i++) {
        tg_release(outs[i]);
        tg_release(cases[i].expected);
        tg_module_free(cases[i].m);
    }
    tg_release(x);
}

/* ---------------------------------------------------------------- Dropout */

/* The share of zeros is near p. With n elements the number of zeros is
 * Binomial(n, p): mean n p, standard deviation sqrt(n p (1 - p)); the
 * check allows 6 standard deviations (a chance of 2e-9 of failing for a
 * right dropout; the seed is fixed, so the test is deterministic anyway).
 * For n = 20000 that is 0.6 percentage points at p = 0.5, and a dropout
 * that keeps with probability p instead (or uses p / 2) is far outside.
 * The kept elements are x * (1 / (1 - p)) exactly, with the scale rounded
 * to float32 first as PyTorch's noise.div_(1 - p). */
TG_TEST(layers, dropout_zeroes_a_share_near_p_and_scales_the_rest)
{
    const int64_t n = 20000;
    const double ps[] = {0.1, 0.5, 0.9, 1.0 / 3};
    tg_tensor *x = batch(TG_SHAPE(n), 70, TG_FLOAT32);
    const float *xv = tg_data_f32(x);
    for (int64_t i = 0; i < n; i++)
        cr_assert_neq(xv[i], 0.0f); // so a zero in y means dropped
    for (size_t k = 0; k < sizeof ps / sizeof *ps; k++) {
        double p = ps[k];
        tg_module *d = check_module(tg_dropout_new(p));
        tg_manual_seed(100 + k);
        tg_tensor *y = check(tg_module_forward(d, x));
        cr_assert_neq(y, x);
        const float *yv = tg_data_f32(y);
        const float scale = 1.0f / (float)(1.0 - p);
        int64_t zeros = 0;
        for (int64_t i = 0; i < n; i++) {
            if (yv[i] == 0.0f) {
                zeros++;
                continue;
            }
            float e = xv[i] * scale;
            cr_assert_eq(yv[i], e, "p = %g: y[%lld] = %.9g, expected %.9g",
                         p, (long long)i, (double)yv[i], (double)e);
        }
        double sd = sqrt((double)n * p * (1 - p));
        cr_assert_leq(fabs((double)zeros - (double)n * p), 6 * sd,
                      "p = %g: %lld zeros of %lld, expected %g +- %g", p,
                      (long long)zeros, (long long)n, n * p, 6 * sd);
        tg_release(y);
        tg_module_free(d);
    }
    tg_release(x);
}

/* The mask comes from the default generator: element i is dropped iff the
 * i-th float32 uniform drawn after the seed is below p (the same draws as
 * tg_rand of x's shape), for float32 and float64 inputs. */
TG_TEST(layers, dropout_draws_its_mask_from_the_default_generator)
{
    const tg_dtype dtypes[] = {TG_FLOAT32, TG_FLOAT64};
    for (int k = 0; k < 2; k++) {
        tg_module *d = check_module(tg_dropout_new(0.25));
        tg_tensor *x = tg_full(TG_SHAPE(10, 20), 2.0, dtypes[k]);
        tg_manual_seed(8);
        tg_tensor *y = check(tg_module_forward(d, x));
        tg_manual_seed(8);
        tg_tensor *u = check(tg_rand(TG_SHAPE(10, 20), dtypes[k]));
        double yv[200], uv[200];
        cr_assert_eq(tg_to_f64_array(y, yv), 0);
        cr_assert_eq(tg_to_f64_array(u, uv), 0);
        int64_t dropped = 0;
        for (int i = 0; i < 200; i++) {
            double e = uv[i] < 0.25 ? 0.0 : 2.0 / 0.75;
            cr_assert_float_eq(yv[i], e, 1e-6, "%s: y[%d] = %g, u = %g",
                               tg_dtype_name(dtypes[k]), i, yv[i], uv[i]);
            dropped += uv[i] < 0.25;
        }
        cr_assert(dropped > 0 && dropped < 200);
        cr_assert_eq(y->dtype, dtypes[k]);
        tg_release(u);
        tg_release(y);
        tg_release(x);
        tg_module_free(d);
    }
}

/* The gradient goes through the same mask: dL/dx = g * mask, zero where
 * the element was dropped and 1 / (1 - p) times g where it was kept. */
TG_TEST(layers, dropout_gradient_is_zero_where_masked)
{
    tg_module *d = check_module(tg_dropout_new(0.4));
    tg_tensor *x = batch(TG_SHAPE(8, 16), 71, TG_FLOAT32);
    cr_assert_eq(tg_set_requires_grad(x, true), 0);
    tg_manual_seed(9);
    tg_tensor *y = check(tg_module_forward(d, x));
    tg_tensor *g = batch(TG_SHAPE(8, 16), 72, TG_FLOAT32);
    cr_assert_eq(tg_backward_ex(y, &(tg_backward_options){.grad = g}), 0,
                 "%s", tg_last_error());
    const float *xv = tg_data_f32(x), *yv = tg_data_f32(y);
    const float *gv = tg_data_f32(g), *dx = tg_data_f32(x->grad);
    const float scale = 1.0f / (float)(1.0 - 0.4);
    int kept = 0;
    for (int i = 0; i < 128; i++) {
        bool dropped = yv[i] == 0.0f;
        kept += !dropped;
        cr_assert_eq(dx[i], dropped ? 0.0f : gv[i] * scale,
                     "dx[%d] = %g (x %g, y %g, g %g)", i, (double)dx[i],
                     (double)xv[i], (double)yv[i], (double)gv[i]);
    }
    cr_assert(kept > 0 && kept < 128);
    tg_release(g);
    tg_release(y);
    tg_release(x);
    tg_module_free(d);
}

/* Whether the default generator is where tg_manual_seed(seed) put it:
 * the next draw equals the first draw after the seed. */
static bool generator_untouched_since(uint64_t seed)
{
    tg_tensor *a = check(tg_rand(TG_SHAPE(4), TG_FLOAT32));
    tg_manual_seed(seed);
    tg_tensor *b = check(tg_rand(TG_SHAPE(4), TG_FLOAT32));
    char report[256];
    bool same = tg_test_close(a, b, 0, 0, true, report, sizeof report);
    tg_release(b);
    tg_release(a);
    return same;
}

/* As PyTorch's CPU dropout: eval mode, p = 0 and an empty input return
 * the input itself (no copy, no draws); p = 1 gives x * 0 (zeros, negative
 * zeros for negative x, as torch prints "-0.") without draws, and a zero
 * gradient. */
TG_TEST(layers, dropout_modes_and_edge_probabilities)
{
    tg_tensor *x = batch(TG_SHAPE(4, 5), 73, TG_FLOAT32);
    cr_assert_eq(tg_set_requires_grad(x, true), 0);
    tg_module *d = check_module(tg_dropout_new(0.5));
    tg_module_train(d, false);
    tg_manual_seed(1);
    tg_tensor *y = check(tg_module_forward(d, x));
    cr_assert_eq(y, x, "eval mode must return the input itself");
    cr_assert_eq(x->refcount, 2, "the input is returned as a new reference");
    tg_release(y);
    cr_assert(generator_untouched_since(1), "eval mode drew numbers");
    tg_module_free(d);

    d = check_module(tg_dropout_new(0.0));
    tg_manual_seed(2);
    y = check(tg_module_forward(d, x));
    cr_assert_eq(y, x, "p = 0 must return the input itself");
    tg_release(y);
    cr_assert(generator_untouched_since(2), "p = 0 drew numbers");
    tg_tensor *empty = tg_zeros(TG_SHAPE(0, 5), TG_FLOAT32);
    y = check(tg_module_forward(d, empty));
    cr_assert_eq(y, empty);
    tg_release(y);
    tg_module_free(d);
    d = check_module(tg_dropout_new(0.5));
    y = check(tg_module_forward(d, empty));
    cr_assert_eq(y, empty, "an empty input must be returned as it is");
    tg_release(y);
    tg_release(empty);
    tg_module_free(d);

    d = check_module(tg_dropout_new(1.0));
    tg_manual_seed(3);
    y = check(tg_module_forward(d, x));
    cr_assert(generator_untouched_since(3), "p = 1 drew numbers");
    cr_assert_eq(y->dtype, TG_FLOAT32);
    const float *xv = tg_data_f32(x), *yv = tg_data_f32(y);
    for (int i = 0; i < 20; i++) {
        cr_assert_eq(yv[i], 0.0f, "y[%d] = %g", i, (double)yv[i]);
        cr_assert_eq(!!signbit(yv[i]), !!signbit(xv[i]),
                     "y[%d] is x * 0: its sign is x's", i);
    }
    tg_tensor *s = check(tg_sum(y, NULL, 0, false));
    cr_assert_eq(tg_backward(s), 0, "%s", tg_last_error());
    tg_tensor *zeros = tg_zeros(TG_SHAPE(4, 5), TG_FLOAT32);
    tg_assert_close(x->grad, zeros, 0, 0);
    tg_release(zeros);
    tg_release(s);
    tg_release(y);
    tg_module_free(d);
    tg_release(x);
}

TG_TEST(layers, dropout_rejects_bad_arguments)
{
    cr_assert_null(tg_dropout_new(1.5));
    tg_assert_error("tg_dropout_new: dropout probability has to be between "
                    "0 and 1, but got 1.5",
                    "rule: p is the probability of zeroing an element, in "
                    "[0, 1]",
                    "hint:");
    cr_assert_null(tg_dropout_new(-0.1));
    tg_assert_error("but got -0.1");
    cr_assert_null(tg_dropout_new(NAN));
    tg_assert_error("but got nan");
    tg_module *d = check_module(tg_dropout_new(0.5));
    tg_tensor *xi = tg_zeros(TG_SHAPE(2, 3), TG_INT64);
    cr_assert_null(tg_module_forward(d, xi));
    tg_assert_error("tg_module_forward: Dropout got an int64 input of shape "
                    "(2, 3)",
                    "rule:", "hint: tg_to_dtype(x, TG_FLOAT32)");
    tg_release(xi);
    tg_clear_error();
    cr_assert_null(tg_module_forward(d, NULL));
    cr_assert_str_eq(tg_last_error(), "", "a NULL input adds no message");
    tg_module_free(d);
}

/* ------------------------------------------------------------- Sequential */

/* Children named "0", "1", ... in order; parameters listed under those
 * names; the forward is the children applied in order; append names the
 * next index. */
TG_TEST(layers, sequential_names_and_applies_its_children_in_order)
{
    tg_manual_seed(6);
    tg_module *m = check_module(TG_SEQUENTIAL(
        tg_linear_new(2, 3, true), tg_relu_new(), tg_linear_new(3, 1, true)));
    cr_assert_str_eq(tg_module_get_type(m)->name, "Sequential");
    cr_assert_eq(tg_module_num_children(m), 3);
    cr_assert_str_eq(tg_module_get_type(tg_module_child(m, "1"))->name,
                     "ReLU");
    tg_named_tensor p[4];
    cr_assert_eq(tg_module_named_parameters(m, p, 4), 4);
    const char *names[] = {"0.weight", "0.bias", "2.weight", "2.bias"};
    for (int i = 0; i < 4; i++)
        cr_assert_str_eq(p[i].name, names[i]);

    /* a zero first bias: h0 = x W0^T is symmetric around 0 for x from
     * N(0, 1), so the ReLU has negatives to cut whatever W0 is */
    tg_no_grad_begin();
    cr_assert_eq(tg_fill_(tg_module_parameter(m, "0.bias"), 0.0), 0);
    tg_no_grad_end();
    tg_tensor *x = batch(TG_SHAPE(8, 2), 80, TG_FLOAT32);
    tg_tensor *y = check(tg_module_forward(m, x));
    tg_tensor *h0 = check(tg_module_forward(tg_module_child(m, "0"), x));
    tg_tensor *h1 = check(tg_relu(h0));
    tg_tensor *e = check(tg_module_forward(tg_module_child(m, "2"), h1));
    tg_assert_close(y, e, 0, 0); // the same ops on the same numbers
    /* the ReLU in the middle matters: some of h0 is negative, and
     * skipping it gives other numbers */
    tg_tensor *h2 = check(tg_module_forward(tg_module_child(m, "2"), h0));
    tg_tensor *neg = check(tg_lt_scalar(h0, 0.0));
    tg_tensor *nneg = check(tg_sum(neg, NULL, 0, false));
    cr_assert_gt(tg_item(nneg), 0, "no negative input to the ReLU");
    tg_release(nneg);
    char report[1024];
    cr_assert_not(
        tg_test_close(y, h2, 0, 0, true, report, sizeof report),
        "the ReLU was skipped");
    tg_release(neg);
    tg_release(h2);
    tg_release(e);
    tg_release(h1);
    tg_release(h0);
    tg_release(y);

    cr_assert_eq(tg_sequential_append(m, tg_tanh_new()), 0, "%s",
                 tg_last_error());
    cr_assert_eq(tg_module_num_children(m), 4);
    cr_assert_str_eq(tg_module_get_type(tg_module_child(m, "3"))->name,
                     "Tanh");
    y = check(tg_module_forward(m, x));
    double v[8];
    cr_assert_eq(tg_to_f64_array(y, v), 0);
    for (int i = 0; i < 8; i++)
        cr_assert(fabs(v[i]) < 1, "a Tanh output is %g", v[i]);
    tg_release(y);
    tg_release(x);
    tg_module_free(m);
}

/* nn.Sequential() returns its input; modules appended later are applied. */
TG_TEST(layers, empty_sequential_returns_its_input)
{
    tg_module *m = check_module(tg_sequential_new(NULL, 0));
    cr_assert_eq(tg_module_num_children(m), 0);
    tg_tensor *x = batch(TG_SHAPE(2, 3), 81, TG_FLOAT32);
    tg_tensor *y = check(tg_module_forward(m, x));
    cr_assert_eq(y, x);
    tg_release(y);
    cr_assert_eq(tg_sequential_append(m, tg_relu_new()), 0);
    cr_assert_str_eq(tg_module_get_type(tg_module_child(m, "0"))->name,
                     "ReLU");
    y = check(tg_module_forward(m, x));
    cr_assert_neq(y, x);
    tg_tensor *e = check(tg_relu(x));
    tg_assert_close(y, e, 0, 0);
    tg_release(e);
    tg_release(y);
    tg_release(x);
    tg_module_free(m);
}

/* A failing constructor inside TG_SEQUENTIAL: the Sequential fails, the
 * other modules (made before and after it) are freed, and the error is
 * the constructor's own. TG_TEST's check of live tensors catches leaked
 * Linear weights, AddressSanitizer any leaked module. */
TG_TEST(layers, sequential_frees_everything_when_a_constructor_fails)
{
    tg_clear_error();
    tg_module *m = TG_SEQUENTIAL(tg_linear_new(2, 3, true),
                                 tg_linear_new(0, 3, true), tg_relu_new(),
                                 tg_linear_new(3, 1, true));
    cr_assert_null(m);
    tg_assert_error("tg_linear_new: cannot make a Linear layer with "
                    "in_features 0");
    cr_assert_eq(tg_live_tensors(), 0);
    /* the failing one last, or the only one */
    cr_assert_null(TG_SEQUENTIAL(tg_relu_new(), tg_dropout_new(2.0)));
    tg_assert_error("tg_dropout_new:");
    cr_assert_null(TG_SEQUENTIAL(tg_gelu_new((tg_gelu_approx)5)));
    tg_assert_error("tg_gelu_new:");
    /* tg_mlp_new relies on tg_sequential_append taking a NULL the same
     * way */
    m = check_module(tg_sequential_new(NULL, 0));
    cr_assert_eq(tg_sequential_append(m, tg_linear_new(-1, 2, true)), -1);
    cr_assert_eq(tg_module_num_children(m), 0);
    tg_module_free(m);
}

/* A module given twice, or one that already belongs to another model, is
 * refused without being freed twice; the other model keeps its layer. */
TG_TEST(layers, sequential_refuses_a_module_it_cannot_own)
{
    tg_module *lin = check_module(tg_linear_new(2, 2, true));
    cr_assert_null(TG_SEQUENTIAL(lin, tg_relu_new(), lin));
    tg_assert_error("tg_module_add_child:",
                    "is already a child of another module");
    cr_assert_eq(tg_live_tensors(), 0, "the Linear was not freed");

    tg_module *owner = check_module(TG_SEQUENTIAL(tg_linear_new(2, 2, true)));
    tg_module *inner = tg_module_child(owner, "0");
    cr_assert_null(TG_SEQUENTIAL(tg_tanh_new(), inner));
    tg_assert_error("is already a child of another module");
    tg_module *seq = check_module(tg_sequential_new(NULL, 0));
    cr_assert_eq(tg_sequential_append(seq, inner), -1);
    tg_module_free(seq);
    cr_assert_eq(tg_live_tensors(), 2, "the owner lost its layer");
    tg_tensor *x = batch(TG_SHAPE(3, 2), 82, TG_FLOAT32);
    tg_tensor *y = check(tg_module_forward(owner, x));
    tg_release(y);
    tg_release(x);
    tg_module_free(owner);
}

TG_TEST(layers, sequential_rejects_bad_arguments)
{
    cr_assert_null(tg_sequential_new(NULL, -1));
    tg_assert_error("tg_sequential_new: got -1 modules",
                    "rule: mods points to n >= 0 modules",
                    "hint: TG_SEQUENTIAL(a, b, c)");
    cr_assert_null(tg_sequential_new(NULL, 2));
    tg_assert_error("tg_sequential_new: got 2 modules");
    /* appending to a module that is not a Sequential: refused, and the
     * child is freed (it was taken) */
    tg_module *lin = check_module(tg_linear_new(2, 2, true));
    cr_assert_eq(tg_sequential_append(lin, tg_linear_new(2, 2, true)), -1);
    tg_assert_error("tg_sequential_append: cannot append to a Linear",
                    "rule: layers are appended to a Sequential",
                    "hint: make one with tg_sequential_new(NULL, 0)");
    cr_assert_eq(tg_live_tensors(), 2, "the child was not freed");
    tg_module_free(lin);
    /* no Sequential: the child is freed */
    cr_assert_eq(tg_sequential_append(NULL, tg_linear_new(2, 2, true)), -1);
    cr_assert_eq(tg_live_tensors(), 0);
    tg_module *seq = check_module(tg_sequential_new(NULL, 0));
    cr_assert_eq(tg_sequential_append(seq, NULL), -1);
    tg_module_free(seq);
}

/* ------------------------------------------------------- BatchNorm in eval */

/* Writes weight = 0.5 + 0.25 k and bias = 0.1 k - 0.3 into a BatchNorm's
 * (C,) affine parameters, so a forward that ignores them is caught. */
static void set_bn_affine(tg_module *bn)
{
    tg_tensor *w = tg_module_parameter(bn, "weight");
    tg_tensor *b = tg_module_parameter(bn, "bias");
    cr_assert(w && b, "%s", tg_last_error());
    float wv[16], bv[16];
    cr_assert_leq(w->numel, 16);
    for (int64_t k = 0; k < w->numel; k++) {
        wv[k] = 0.5f + 0.25f * (float)k;
        bv[k] = 0.1f * (float)k - 0.3f;
    }
    tg_tensor *wt = tg_from_array(wv, w->shape, 1, TG_FLOAT32);
    tg_tensor *bt = tg_from_array(bv, b->shape, 1, TG_FLOAT32);
    set_tensor(w, wt);
    set_tensor(b, bt);
    tg_release(bt);
    tg_release(wt);
}

static void to_doubles(const tg_tensor *t, double *out, int64_t max)
{
    cr_assert_leq(t->numel, max);
    cr_assert_eq(tg_to_f64_array(t, out), 0, "%s", tg_last_error());
}

/* Sequential(Linear(3, 5), BatchNorm1d(5), ReLU, Linear(5, 2)) trained on
 * four batches (forward and backward, so the running statistics move),
 * then in eval mode:
 * (a) two forwards of the same batch give identical outputs;
 * (b) a row's output does not depend on the other rows: each row alone (a
 *     batch of 1, which training mode refuses) and the batch with the
 *     other rows replaced give the same row, exactly (the same
 *     arithmetic for every row);
 * (c) the output equals a recomputation in double from the parameters and
 *     the running statistics:
 *       h = x W0^T + b0, z = (h - rm) / sqrt(rv + eps) * w + b,
 *       y = relu(z) W3^T + b3
 *     within 1e-5 (absolute and relative): the layers round to float32
 *     at each of the four steps, values of order 1.
 * The eval forwards leave the running statistics alone. */
TG_TEST(layers, batch_norm_in_eval_mode_is_deterministic_per_row)
{
    tg_manual_seed(12);
    tg_module *m = check_module(TG_SEQUENTIAL(
        tg_linear_new(3, 5, true), tg_batch_norm1d_new(5, NULL),
        tg_relu_new(), tg_linear_new(5, 2, true)));
    tg_module *bn = tg_module_child(m, "1");
    set_bn_affine(bn);
    for (uint64_t s = 0; s < 4; s++) {
        tg_tensor *xb = batch(TG_SHAPE(8, 3), 90 + s, TG_FLOAT32);
        tg_tensor *y = check(tg_module_forward(m, xb));
        tg_tensor *l = check(tg_sum(y, NULL, 0, false));
        cr_assert_eq(tg_backward(l), 0, "%s", tg_last_error());
        tg_release(l);
        tg_release(y);
        tg_release(xb);
    }
    tg_module_zero_grad(m);
    cr_assert_eq(tg_item(tg_module_buffer(m, "1.num_batches_tracked")), 4);
    tg_tensor *x = batch(TG_SHAPE(6, 3), 99, TG_FLOAT32);
    /* training mode refuses a batch of one */
    tg_tensor *row0 = check(tg_narrow(x, 0, 0, 1));
    cr_assert_null(tg_module_forward(m, row0));
    tg_assert_error("expected more than 1 value per channel when training");
    tg_tensor *y_train = check(tg_module_forward(m, x)); // moves the stats once more
    tg_tensor *rm0 = check(tg_clone(tg_module_buffer(m, "1.running_mean")));
    tg_tensor *rv0 = check(tg_clone(tg_module_buffer(m, "1.running_var")));

    tg_module_train(m, false);
    cr_assert_not(tg_module_is_training(bn));
    tg_tensor *y1 = check(tg_module_forward(m, x));
    tg_tensor *y2 = check(tg_module_forward(m, x));
    tg_assert_close(y1, y2, 0, 0); // (a)
    char report[1024];
    cr_assert_not(tg_test_close(y1, y_train, 1e-3, 1e-3, true, report,
                                sizeof report),
                  "eval mode gave the training output");

    /* (b) */
    tg_tensor *other = batch(TG_SHAPE(6, 3), 98, TG_FLOAT32);
    for (int64_t i = 0; i < 6; i++) {
        tg_tensor *xi = check(tg_narrow(x, 0, i, 1));
        tg_tensor *yi = check(tg_module_forward(m, xi));
        tg_tensor *ei = check(tg_narrow(y1, 0, i, 1));
        tg_assert_close(yi, ei, 0, 0);
        /* the same row among other rows (at position i) */
        tg_tensor *mix = check(tg_clone(other));
        tg_tensor *slot = check(tg_narrow(mix, 0, i, 1));
        set_tensor(slot, xi);
        tg_tensor *ym = check(tg_module_forward(m, mix));
        tg_tensor *ymi = check(tg_narrow(ym, 0, i, 1));
        tg_assert_close(ymi, ei, 0, 0);
        tg_release(ymi);
        tg_release(ym);
        tg_release(slot);
        tg_release(mix);
        tg_release(ei);
        tg_release(yi);
        tg_release(xi);
    }

    /* (c) */
    double xv[18], yv[12], w0[15], b0[5], rm[5], rv[5], w[5], b[5], w3[10],
        b3[2];
    to_doubles(x, xv, 18);
    to_doubles(y1, yv, 12);
    to_doubles(tg_module_parameter(m, "0.weight"), w0, 15);
    to_doubles(tg_module_parameter(m, "0.bias"), b0, 5);
    to_doubles(tg_module_buffer(m, "1.running_mean"), rm, 5);
    to_doubles(tg_module_buffer(m, "1.running_var"), rv, 5);
    to_doubles(tg_module_parameter(m, "1.weight"), w, 5);
    to_doubles(tg_module_parameter(m, "1.bias"), b, 5);
    to_doubles(tg_module_parameter(m, "3.weight"), w3, 10);
    to_doubles(tg_module_parameter(m, "3.bias"), b3, 2);
    for (int i = 0; i < 6; i++) {
        double r[5];
        for (int c = 0; c < 5; c++) {
            double h = b0[c];
            for (int k = 0; k < 3; k++)
                h += xv[i * 3 + k] * w0[c * 3 + k];
            double z = (h - rm[c]) / sqrt(rv[c] + 1e-5) * w[c] + b[c];
            r[c] = z > 0 ? z : 0;
        }
        for (int o = 0; o < 2; o++) {
            double e = b3[o];
            for (int c = 0; c < 5; c++)
                e += r[c] * w3[o * 5 + c];
            cr_assert_float_eq(yv[i * 2 + o], e, 1e-5 * (1 + fabs(e)),
                               "y[%d, %d] = %.9g, recomputed %.9g", i, o,
                               yv[i * 2 + o], e);
        }
    }
    /* the eval forwards changed no statistic */
    tg_assert_close(tg_module_buffer(m, "1.running_mean"), rm0, 0, 0);
    tg_assert_close(tg_module_buffer(m, "1.running_var"), rv0, 0, 0);
    cr_assert_eq(tg_item(tg_module_buffer(m, "1.num_batches_tracked")), 5);

    tg_release(other);
    tg_release(y2);
    tg_release(y1);
    tg_release(rv0);
    tg_release(rm0);
    tg_release(y_train);
    tg_release(row0);
    tg_release(x);
    tg_module_free(m);
}

/* -------------------------------------------------------------------- MLP */

/* Asserts that parameter `name` of m has the given shape. */
static void expect_shape(const tg_module *m, const char *name,
                         const int64_t *shape, int ndim)
{
    tg_tensor *p = tg_module_parameter(m, name);
    cr_assert_not_null(p, "%s", tg_last_error());
    cr_assert_eq(p->ndim, ndim, "%s", name);
    for (int d = 0; d < ndim; d++)
        cr_assert_eq(p->shape[d], shape[d], "%s: dim %d is %lld", name, d,
                     (long long)p->shape[d]);
    cr_assert_eq(p->dtype, TG_FLOAT32, "%s", name);
}

/* tg_mlp_new(2, {8, 6}, 3, BatchNorm, ReLU) is
 * Linear(2, 8) BatchNorm1d(8) ReLU Linear(8, 6) BatchNorm1d(6) ReLU
 * Linear(6, 3), children "0" .. "6". */
TG_TEST(layers, mlp_structure)
{
    const int64_t hidden[] = {8, 6};
    tg_module *m = check_module(
        tg_mlp_new(2, hidden, 2, 3, TG_NORM_BATCH, TG_ACT_RELU));
    const char *types[] = {"Linear", "BatchNorm1d", "ReLU", "Linear",
                           "BatchNorm1d", "ReLU", "Linear"};
    cr_assert_str_eq(tg_module_get_type(m)->name, "Sequential");
    cr_assert_eq(tg_module_num_children(m), 7);
    for (int i = 0; i < 7; i++) {
        char name[8];
        snprintf(name, sizeof name, "%d", i);
        cr_assert_eq(tg_module_child(m, name), tg_module_child_at(m, i));
        cr_assert_str_eq(child_type(m, i), types[i], "child %d", i);
    }
    expect_shape(m, "0.weight", TG_SHAPE(8, 2));
    expect_shape(m, "0.bias", TG_SHAPE(8));
    expect_shape(m, "1.weight", TG_SHAPE(8));
    expect_shape(m, "3.weight", TG_SHAPE(6, 8));
    expect_shape(m, "3.bias", TG_SHAPE(6));
    expect_shape(m, "4.bias", TG_SHAPE(6));
    expect_shape(m, "6.weight", TG_SHAPE(3, 6));
    expect_shape(m, "6.bias", TG_SHAPE(3));
    cr_assert_eq(tg_module_named_parameters(m, NULL, 0), 10);
    cr_assert_eq(tg_module_named_buffers(m, NULL, 0), 6);
    cr_assert_eq(tg_module_num_elements(m),
                 (16 + 8) + 16 + (48 + 6) + 12 + (18 + 3));
    /* it trains: a forward and backward in training mode on (N, 2) */
    tg_tensor *x = batch(TG_SHAPE(5, 2), 110, TG_FLOAT32);
    tg_tensor *y = check(tg_module_forward(m, x));
    cr_assert_eq(y->shape[0], 5);
    cr_assert_eq(y->shape[1], 3);
    tg_tensor *l = check(tg_sum(y, NULL, 0, false));
    cr_assert_eq(tg_backward(l), 0, "%s", tg_last_error());
    cr_assert_not_null(tg_module_parameter(m, "0.weight")->grad);
    tg_release(l);
    tg_release(y);
    tg_release(x);
    tg_module_free(m);

    /* the other norms and activations; no hidden layer: one Linear */
    m = check_module(tg_mlp_new(4, hidden, 1, 2, TG_NORM_LAYER, TG_ACT_GELU));
    cr_assert_eq(tg_module_num_children(m), 4);
    const char *t2[] = {"Linear", "LayerNorm", "GELU", "Linear"};
    for (int i = 0; i < 4; i++)
        cr_assert_str_eq(child_type(m, i), t2[i]);
    tg_module_free(m);
    m = check_module(tg_mlp_new(4, hidden, 2, 2, TG_NORM_NONE, TG_ACT_TANH));
    const char *t3[] = {"Linear", "Tanh", "Linear", "Tanh", "Linear"};
    cr_assert_eq(tg_module_num_children(m), 5);
    for (int i = 0; i < 5; i++)
        cr_assert_str_eq(child_type(m, i), t3[i]);
    tg_module_free(m);
    m = check_module(tg_mlp_new(4, NULL, 0, 2, TG_NORM_BATCH, TG_ACT_RELU));
    cr_assert_eq(tg_module_num_children(m), 1);
    cr_assert_str_eq(child_type(m, 0), "Linear");
    expect_shape(m, "0.weight", TG_SHAPE(2, 4));
    tg_module_free(m);
}

/* The MLP draws its weights layer by layer, as hand-built Linear layers
 * after the same seed (the norm layers and activations draw nothing). */
TG_TEST(layers, mlp_weights_equal_hand_built_linears)
{
    const int64_t hidden[] = {5, 4, 6};
    const tg_norm_kind norms[] = {TG_NORM_BATCH, TG_NORM_LAYER, TG_NORM_NONE};
    for (int k = 0; k < 3; k++) {
        tg_manual_seed(21);
        tg_module *mlp = check_module(
            tg_mlp_new(3, hidden, 3, 2, norms[k], TG_ACT_TANH));
        tg_manual_seed(21);
        tg_module *lin[4]; // one statement each: in this order
        lin[0] = tg_linear_new(3, 5, true);
        lin[1] = tg_linear_new(5, 4, true);
        lin[2] = tg_linear_new(4, 6, true);
        lin[3] = tg_linear_new(6, 2, true);
        int per_block = norms[k] == TG_NORM_NONE ? 2 : 3;
        for (int i = 0; i < 4; i++) {
            tg_module *mine = tg_module_child_at(mlp, i * per_block);
            cr_assert_str_eq(tg_module_get_type(mine)->name, "Linear");
            tg_assert_close(tg_module_parameter(mine, "weight"),
                            tg_module_parameter(check_module(lin[i]),
                                                "weight"),
                            0, 0);
            tg_assert_close(tg_module_parameter(mine, "bias"),
                            tg_module_parameter(lin[i], "bias"), 0, 0);
            tg_module_free(lin[i]);
        }
        tg_module_free(mlp);
    }
}

/* Each bad argument is named, and a refused call draws no numbers. */
TG_TEST(layers, mlp_rejects_bad_arguments)
{
    const int64_t hidden[] = {8, 0};
    tg_manual_seed(30);
    cr_assert_null(tg_mlp_new(2, hidden, -1, 3, TG_NORM_NONE, TG_ACT_RELU));
    tg_assert_error("tg_mlp_new: got -1 hidden widths",
                    "rule: hidden points to nhidden >= 0 widths", "hint:");
    cr_assert_null(tg_mlp_new(2, NULL, 2, 3, TG_NORM_NONE, TG_ACT_RELU));
    tg_assert_error("tg_mlp_new: got 2 hidden widths");
    cr_assert_null(tg_mlp_new(2, hidden, 2, 3, TG_NORM_NONE, TG_ACT_RELU));
    tg_assert_error("tg_mlp_new: hidden width 1 is 0",
                    "rule: every hidden layer has at least one unit");
    cr_assert_null(tg_mlp_new(0, hidden, 1, 3, TG_NORM_NONE, TG_ACT_RELU));
    tg_assert_error("tg_mlp_new: in_features is 0 and out_features 3",
                    "rule: both are >= 1");
    cr_assert_null(tg_mlp_new(2, hidden, 1, -2, TG_NORM_NONE, TG_ACT_RELU));
    tg_assert_error("out_features -2");
    cr_assert_null(tg_mlp_new(2, hidden, 1, 3, (tg_norm_kind)7, TG_ACT_RELU));
    tg_assert_error("tg_mlp_new: unknown norm 7",
                    "rule: norm is TG_NORM_NONE, TG_NORM_BATCH or "
                    "TG_NORM_LAYER");
    cr_assert_null(tg_mlp_new(2, hidden, 1, 3, TG_NORM_NONE,
                              (tg_activation)9));
    tg_assert_error("tg_mlp_new: unknown activation 9",
                    "rule: activation is TG_ACT_RELU, TG_ACT_TANH or "
                    "TG_ACT_GELU");
    cr_assert(generator_untouched_since(30), "a refused call drew numbers");
}

/* ------------------------------------------------------------- Linear errors */

TG_TEST(layers, linear_rejects_bad_sizes)
{
    cr_assert_null(tg_linear_new(0, 3, true));
    tg_assert_error("tg_linear_new: cannot make a Linear layer with "
                    "in_features 0 and out_features 3",
                    "rule: both sizes are >= 1 (PyTorch accepts 0 with a "
                    "warning",
                    "hint: in_features is x.shape[-1] of the inputs");
    cr_assert_null(tg_linear_new(3, 0, true));
    tg_assert_error("in_features 3 and out_features 0");
    cr_assert_null(tg_linear_new(-1, 3, false));
    tg_assert_error("in_features -1");
    cr_assert_null(tg_linear_new(INT64_C(1) << 40, INT64_C(1) << 40, true));
    tg_assert_error("tg_linear_new:");
    cr_assert_null(tg_gelu_new((tg_gelu_approx)3));
    tg_assert_error("tg_gelu_new: unknown approximation 3",
                    "rule: approx is TG_GELU_EXACT", "hint:");
}

TG_TEST(layers, linear_rejects_other_inputs)
{
    tg_module *m = check_module(tg_linear_new(3, 2, true));
    tg_tensor *x = tg_zeros(TG_SHAPE(4, 5), TG_FLOAT32);
    cr_assert_null(tg_module_forward(m, x));
    tg_assert_error("tg_module_forward: Linear(in_features=3, "
                    "out_features=2) got an input of shape (4, 5)",
                    "rule: x.shape[-1] must equal in_features, but 5 != 3",
                    "hint: the layer before must give 3 features, or this "
                    "layer must be tg_linear_new(5, 2, ...)");
    tg_release(x);
    x = tg_scalar(1.0, TG_FLOAT32);
    cr_assert_null(tg_module_forward(m, x));
    tg_assert_error("got a 0-d input", "rule: x is (..., in_features)");
    tg_release(x);
    x = tg_zeros(TG_SHAPE(4, 3), TG_FLOAT64);
    cr_assert_null(tg_module_forward(m, x));
    tg_assert_error("tg_module_forward: Linear's weight is float32 but the "
                    "input is float64",
                    "rule: the input and the parameters have one dtype",
                    "hint: convert x with tg_to_dtype(x, TG_FLOAT32), or "
                    "the model with tg_module_to_dtype(model, TG_FLOAT64)");
    tg_release(x);
    x = tg_zeros(TG_SHAPE(4, 3), TG_INT64);
    cr_assert_null(tg_module_forward(m, x));
    tg_assert_error("the input is int64",
                    "hint: convert x with tg_to_dtype(x, TG_FLOAT32)");
    cr_assert_null(strstr(tg_last_error(), "tg_module_to_dtype"),
                   "a model cannot be int64: %s", tg_last_error());
    tg_release(x);
    tg_clear_error();
    cr_assert_null(tg_module_forward(m, NULL));
    cr_assert_str_eq(tg_last_error(), "");
    tg_module_free(m);
}

/* --------------------------------------------------------------- printing */

TG_TEST(layers, layers_print_as_pytorch)
{
    /* nn.Linear(2, 64); nn.Linear(2, 64, bias=False) */
    tg_test_expect_print(tg_linear_new(2, 64, true),
                         "Linear(in_features=2, out_features=64, bias=True)");
    tg_test_expect_print(tg_linear_new(2, 64, false),
                         "Linear(in_features=2, out_features=64, bias=False)");
    tg_test_expect_print(tg_relu_new(), "ReLU()");
    tg_test_expect_print(tg_tanh_new(), "Tanh()");
    tg_test_expect_print(tg_gelu_new(TG_GELU_EXACT),
                         "GELU(approximate='none')");
    tg_test_expect_print(tg_gelu_new(TG_GELU_TANH), "GELU(approximate='tanh')");
    /* nn.Dropout(), nn.Dropout(0.1), nn.Dropout(1.0), nn.Dropout(1/3) */
    tg_test_expect_print(tg_dropout_new(0.5), "Dropout(p=0.5, inplace=False)");
    tg_test_expect_print(tg_dropout_new(0.1), "Dropout(p=0.1, inplace=False)");
    tg_test_expect_print(tg_dropout_new(1.0), "Dropout(p=1.0, inplace=False)");
    tg_test_expect_print(tg_dropout_new(1.0 / 3),
                         "Dropout(p=0.3333333333333333, inplace=False)");
    tg_test_expect_print(tg_sequential_new(NULL, 0), "Sequential()");
}

TG_TEST(layers, sequentials_print_as_pytorch)
{
    /* nn.Sequential(nn.Linear(2, 64), nn.BatchNorm1d(64), nn.ReLU(),
     *               nn.Sequential(nn.Tanh(), nn.Dropout()),
     *               nn.Linear(64, 3)) */
    tg_test_expect_print(
        TG_SEQUENTIAL(tg_linear_new(2, 64, true),
                      tg_batch_norm1d_new(64, NULL), tg_relu_new(),
                      TG_SEQUENTIAL(tg_tanh_new(), tg_dropout_new(0.5)),
                      tg_linear_new(64, 3, true)),
        "Sequential(\n"
        "  (0): Linear(in_features=2, out_features=64, bias=True)\n"
        "  (1): BatchNorm1d(64, eps=1e-05, momentum=0.1, affine=True, "
        "track_running_stats=True)\n"
        "  (2): ReLU()\n"
        "  (3): Sequential(\n"
        "    (0): Tanh()\n"
        "    (1): Dropout(p=0.5, inplace=False)\n"
        "  )\n"
        "  (4): Linear(in_features=64, out_features=3, bias=True)\n"
        ")");
    /* nn.Sequential(nn.Sequential()) */
    tg_test_expect_print(TG_SEQUENTIAL(tg_sequential_new(NULL, 0)),
                         "Sequential(\n"
                         "  (0): Sequential()\n"
                         ")");
    /* the same layers as nn.Sequential(nn.Linear(2, 8), nn.LayerNorm(8),
     * nn.GELU(), nn.Linear(8, 3)) */
    const int64_t hidden[] = {8};
    tg_test_expect_print(tg_mlp_new(2, hidden, 1, 3, TG_NORM_LAYER, TG_ACT_GELU),
                         "Sequential(\n"
                         "  (0): Linear(in_features=2, out_features=8, bias=True)\n"
                         "  (1): LayerNorm((8,), eps=1e-05, "
                         "elementwise_affine=True)\n"
                         "  (2): GELU(approximate='none')\n"
                         "  (3): Linear(in_features=8, out_features=3, bias=True)\n"
                         ")");
}
