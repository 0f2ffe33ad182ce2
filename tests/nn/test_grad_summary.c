/*
 * tests/nn/test_grad_summary.c - the gradient summaries of nn/diagnostics.c
 * against NumPy (scripts/reference/gen_grad_summary.py): mean and unbiased
 * std of p.grad and the grad:data ratio std(grad) / std(p).
 *
 * Tolerances: float64 parameters, relative 1e-12 (a two-pass std in double
 * against a correctly rounded sum: a few ulp); float32 ones, relative 1e-6
 * (the std is rounded to float32 once, as torch.std of a float32 tensor,
 * about 6e-8 relative, and the mean of values spread around 0 has an
 * absolute error of a few ulp of the largest value, hence the absolute
 * 1e-9 on the float32 mean, whose gradients are of order 1e-3).
 */
#include "../common.h"

#include <math.h>
#include <string.h>

static bool near(double a, double e, double rtol, double atol)
{
    return fabs(a - e) <= atol + rtol * fabs(e);
}

/* Whether s matches the four reference numbers; which one fails in why. */
static bool matches(const tg_grad_summary *s, const double *ref, double rtol,
                    double atol, char *why, size_t size)
{
    const double got[4] = {s->grad_mean, s->grad_std, s->data_std,
                           s->grad_data};
    static const char *const names[4] = {"grad_mean", "grad_std", "data_std",
                                         "grad_data"};
    for (int k = 0; k < 4; k++)
        if (!near(got[k], ref[k], rtol, k == 0 ? atol : 0.0)) {
            snprintf(why, size, "%s: %.17g, expected %.17g", names[k], got[k],
                     ref[k]);
            return false;
        }
    return true;
}

static tg_tensor *load(const char *c, const char *what)
{
    char name[64];
    snprintf(name, sizeof name, "grad_summary_%s_%s", c, what);
    return tg_test_load_ref(name);
}

/* The summary of the parameter of case c, with its gradient. */
static tg_grad_summary summary_of(const char *c)
{
    tg_tensor *p = load(c, "p");
    tg_set_requires_grad(p, true);
    p->grad = load(c, "g");
    tg_grad_summary s;
    cr_assert_eq(tg_param_grad_summary(p, &s), 0, "%s", tg_last_error());
    tg_release(p);
    return s;
}

static const struct {
    const char *name;
    double rtol, atol;
} CASES[] = {{"w64", 1e-12, 1e-15}, {"w32", 1e-6, 1e-9}, {"b64", 1e-12, 1e-15}};

TG_TEST(grad_summary, matches_numpy)
{
    for (size_t i = 0; i < sizeof CASES / sizeof *CASES; i++) {
        tg_grad_summary s = summary_of(CASES[i].name);
        tg_tensor *ref = load(CASES[i].name, "stats");
        char why[128];
        cr_assert(matches(&s, tg_data_f64(ref), CASES[i].rtol, CASES[i].atol,
                          why, sizeof why),
                  "%s: %s", CASES[i].name, why);
        cr_assert(s.has_grad);
        cr_assert_str_eq(s.name, "");
        tg_release(ref);
    }
    tg_grad_summary s = summary_of("w32");
    cr_assert(s.ndim == 2 && s.shape[0] == 10 && s.shape[1] == 3);
}

/* The comparison can fail: another case's numbers, or one number off by
 * 1e-5 relative, are caught. */
TG_TEST(grad_summary, the_check_can_fail)
{
    tg_grad_summary s = summary_of("w64");
    tg_tensor *other = load("b64", "stats");
    tg_tensor *ref = load("w64", "stats");
    char why[128];
    cr_assert_not(matches(&s, tg_data_f64(other), 1e-12, 1e-15, why,
                          sizeof why));
    double off[4];
    memcpy(off, tg_data_f64(ref), sizeof off);
    off[3] *= 1.0 + 1e-5;
    cr_assert_not(matches(&s, off, 1e-12, 1e-15, why, sizeof why));
    cr_assert(strstr(why, "grad_data"), "%s", why);
    /* a biased std (n instead of n - 1) is caught too */
    memcpy(off, tg_data_f64(ref), sizeof off);
    off[1] *= sqrt(19.0 / 20.0);
    cr_assert_not(matches(&s, off, 1e-12, 1e-15, why, sizeof why));
    tg_release(ref);
    tg_release(other);
}

/* A module's summaries, in named_parameters order with their names, equal
 * the single ones; a parameter without .grad is marked and NaN. */
TG_TEST(grad_summary, module_lists_every_parameter)
{
    tg_module *m = tg_linear_new(4, 5, true);
    cr_assert_eq(tg_module_to_dtype(m, TG_FLOAT64), 0);
    tg_tensor *w = tg_module_parameter(m, "weight");
    tg_tensor *b = tg_module_parameter(m, "bias");
    tg_tensor *wp = load("w64", "p"), *bp = load("b64", "p");
    memcpy(tg_data_f64(w), tg_data_f64(wp), 20 * sizeof(double));
    memcpy(tg_data_f64(b), tg_data_f64(bp), 5 * sizeof(double));
    w->grad = load("w64", "g");

    cr_assert_eq(tg_module_grad_summaries(m, NULL, 0), 2);
    tg_grad_summary s[2];
    cr_assert_eq(tg_module_grad_summaries(m, s, 2), 2, "%s",
                 tg_last_error());
    cr_assert_str_eq(s[0].name, "weight");
    cr_assert_str_eq(s[1].name, "bias");
    tg_grad_summary single = summary_of("w64");
    cr_assert(s[0].grad_mean == single.grad_mean &&
              s[0].grad_std == single.grad_std &&
              s[0].data_std == single.data_std &&
              s[0].grad_data == single.grad_data);
    cr_assert_not(s[1].has_grad);
    cr_assert(isnan(s[1].grad_mean) && isnan(s[1].grad_data));
    cr_assert_eq(s[1].ndim, 1);

    b->grad = load("b64", "g");
    tg_grad_summary one;
    cr_assert_eq(tg_module_grad_summaries(m, &one, 1), 2, "max 1 of 2");
    cr_assert_str_eq(one.name, "weight");
    cr_assert_eq(tg_module_grad_summaries(m, s, 2), 2);
    tg_tensor *ref = load("b64", "stats");
    char why[128];
    cr_assert(matches(&s[1], tg_data_f64(ref), 1e-12, 1e-15, why, sizeof why),
              "%s", why);
    tg_release(ref);
    tg_release(wp);
    tg_release(bp);
    tg_module_free(m);
}

/* torch.tensor([3.0]).std() is nan: one element has no unbiased std. */
TG_TEST(grad_summary, one_element_has_no_std)
{
    tg_tensor *p = tg_full(TG_SHAPE(1), 3.0, TG_FLOAT32);
    tg_set_requires_grad(p, true);
    p->grad = tg_full(TG_SHAPE(1), 0.5, TG_FLOAT32);
    tg_grad_summary s;
    cr_assert_eq(tg_param_grad_summary(p, &s), 0);
    cr_assert_eq(s.grad_mean, 0.5);
    cr_assert(isnan(s.grad_std) && isnan(s.data_std) && isnan(s.grad_data));
    tg_release(p);
}
