/*
 * tests/nn/test_optim_state.c - saving and loading an optimiser's state
 * (tg_optimizer_save / tg_optimizer_load, nn/optim.c): N steps in one go
 * equal k steps, a save, a fresh optimiser that loads the state and N - k
 * more steps, bit for bit, for SGD with momentum, Adam and AdamW, with one
 * parameter skipping a step (its own step count); without the load the
 * numbers differ (the comparison can fail); a state that does not fit
 * (another kind, count, shape or dtype) is refused and changes nothing.
 */
#define _POSIX_C_SOURCE 200809L // mkdtemp, strdup

#include "../common.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum { N_STEPS = 6, K_STEPS = 3 };

typedef enum kind { SGD, ADAM, ADAMW } kind;

static tg_optimizer *make(kind k, const tg_module *m)
{
    tg_sgd_config s = {.lr = 0.1, .momentum = 0.9};
    tg_adam_config a = {.lr = 0.01};
    return k == SGD ? tg_sgd_new(m, &s)
           : k == ADAM ? tg_adam_new(m, &a)
                       : tg_adamw_new(m, &a);
}

/* A (3 -> 2) Linear in float64 with fixed weights. */
static tg_module *model(void)
{
    tg_manual_seed(4);
    tg_module *m = tg_linear_new(3, 2, true);
    cr_assert_eq(tg_module_to_dtype(m, TG_FLOAT64), 0);
    return m;
}

/* Step `step` of the run: fixed gradients; the bias has none at step 1. */
static void set_grads(tg_module *m, int step)
{
    tg_tensor *w = tg_module_parameter(m, "weight");
    tg_tensor *b = tg_module_parameter(m, "bias");
    tg_manual_seed(100 + (uint64_t)step);
    tg_release(w->grad);
    tg_release(b->grad);
    w->grad = tg_randn(TG_SHAPE(2, 3), TG_FLOAT64);
    b->grad = step == 1 ? NULL : tg_randn(TG_SHAPE(2), TG_FLOAT64);
}

static void steps(tg_module *m, tg_optimizer *opt, int from, int to)
{
    for (int s = from; s < to; s++) {
        set_grads(m, s);
        cr_assert_eq(tg_optimizer_step(opt), 0, "%s", tg_last_error());
    }
}

static char *scratch(void)
{
    char *dir = strdup("/tmp/tg-optim-state-XXXXXX");
    cr_assert(mkdtemp(dir));
    size_t n = strlen(dir) + 8;
    char *sub = malloc(n);
    snprintf(sub, n, "%s/state", dir);
    free(dir);
    return sub;
}

static void scratch_remove(char *sub)
{
    char cmd[256];
    char *slash = strrchr(sub, '/');
    *slash = '\0';
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", sub);
    cr_assert_eq(system(cmd), 0);
    free(sub);
}

static bool same_params(const tg_module *a, const tg_module *b)
{
    const char *names[2] = {"weight", "bias"};
    for (int i = 0; i < 2; i++) {
        tg_tensor *x = tg_module_parameter(a, names[i]);
        tg_tensor *y = tg_module_parameter(b, names[i]);
        if (memcmp(tg_data_f64(x), tg_data_f64(y),
                   (size_t)x->numel * sizeof(double)) != 0)
            return false;
    }
    return true;
}

/* The run of N steps, and the run saved after K and resumed by a fresh
 * optimiser that loads (load true) or does not (load false). */
static bool resume_matches(kind k, bool load)
{
    tg_module *whole = model(), *parts = model();
    tg_optimizer *o1 = make(k, whole);
    steps(whole, o1, 0, N_STEPS);

    tg_optimizer *o2 = make(k, parts);
    steps(parts, o2, 0, K_STEPS);
    char *dir = scratch();
    cr_assert_eq(tg_optimizer_save(o2, dir), 0, "%s", tg_last_error());
    tg_optimizer_free(o2);
    tg_optimizer *o3 = make(k, parts);
    if (load) {
        cr_assert_eq(tg_optimizer_load(o3, dir), 0, "%s", tg_last_error());
        cr_assert_eq(tg_optimizer_steps(o3), K_STEPS);
    }
    steps(parts, o3, K_STEPS, N_STEPS);
    if (load)
        cr_assert_eq(tg_optimizer_steps(o3), N_STEPS);
    bool same = same_params(whole, parts);
    scratch_remove(dir);
    tg_optimizer_free(o1);
    tg_optimizer_free(o3);
    tg_module_free(whole);
    tg_module_free(parts);
    return same;
}

TG_TEST(optim_state, sgd_momentum_resumes_bit_for_bit)
{
    cr_assert(resume_matches(SGD, true));
    cr_assert_not(resume_matches(SGD, false), "the momentum matters");
}

TG_TEST(optim_state, adam_resumes_bit_for_bit)
{
    cr_assert(resume_matches(ADAM, true));
    cr_assert_not(resume_matches(ADAM, false), "the moments matter");
}

TG_TEST(optim_state, adamw_resumes_bit_for_bit)
{
    cr_assert(resume_matches(ADAMW, true));
    cr_assert_not(resume_matches(ADAMW, false));
}

/* The learning rate comes back too (a schedule may have changed it). */
TG_TEST(optim_state, learning_rate_is_restored)
{
    tg_module *m = model();
    tg_optimizer *o = make(ADAM, m);
    cr_assert_eq(tg_optimizer_set_lr(o, 0.125), 0);
    char *dir = scratch();
    cr_assert_eq(tg_optimizer_save(o, dir), 0, "%s", tg_last_error());
    tg_optimizer *fresh = make(ADAM, m);
    cr_assert_eq(tg_optimizer_load(fresh, dir), 0, "%s", tg_last_error());
    cr_assert_eq(tg_optimizer_lr(fresh), 0.125);
    scratch_remove(dir);
    tg_optimizer_free(o);
    tg_optimizer_free(fresh);
    tg_module_free(m);
}

/* Refusals: nothing changes, and the message says what differs. */
TG_TEST(optim_state, a_state_that_does_not_fit_is_refused)
{
    tg_module *m = model();
    tg_optimizer *sgd = make(SGD, m);
    steps(m, sgd, 0, 2);
    char *dir = scratch();
    cr_assert_eq(tg_optimizer_save(sgd, dir), 0, "%s", tg_last_error());

    tg_optimizer *adam = make(ADAM, m);
    cr_assert_eq(tg_optimizer_load(adam, dir), -1);
    tg_assert_error("tg_optimizer_load", "it is the state of SGD, this "
                    "optimiser is Adam");
    cr_assert_eq(tg_optimizer_steps(adam), 0);

    tg_module *other = tg_linear_new(3, 4, true); // (4, 3): other shapes
    cr_assert_eq(tg_module_to_dtype(other, TG_FLOAT64), 0);
    tg_optimizer *wrong_shape = make(SGD, other);
    cr_assert_eq(tg_optimizer_load(wrong_shape, dir), -1);
    tg_assert_error("parameter 0 (\"weight\") is float64 (4, 3)");

    tg_module *f32 = tg_linear_new(3, 2, true);
    tg_optimizer *wrong_dtype = make(SGD, f32);
    cr_assert_eq(tg_optimizer_load(wrong_dtype, dir), -1);
    tg_assert_error("parameter 0 (\"weight\") is float32 (2, 3)");

    tg_optimizer *one = make(SGD, NULL);
    cr_assert_eq(tg_optimizer_add_parameter(one, tg_module_parameter(m,
                                                                "weight")),
                 0);
    cr_assert_eq(tg_optimizer_load(one, dir), -1);
    tg_assert_error("it has 2 parameters, this optimiser has 1");

    cr_assert_eq(tg_optimizer_load(sgd, "/nonexistent/folder"), -1);
    tg_assert_error("tg_optimizer_load", "cannot read header");
    cr_assert_eq(tg_optimizer_steps(sgd), 2, "unchanged");
    scratch_remove(dir);
    tg_optimizer_free(sgd);
    tg_optimizer_free(adam);
    tg_optimizer_free(wrong_shape);
    tg_optimizer_free(wrong_dtype);
    tg_optimizer_free(one);
    tg_module_free(m);
    tg_module_free(other);
    tg_module_free(f32);
}

TG_TEST(optim_state, null_passes_through)
{
    cr_assert_eq(tg_optimizer_save(NULL, "x"), -1);
    cr_assert_eq(tg_optimizer_load(NULL, "x"), -1);
}
