/*
 * tests/autograd/test_histogram.c - tg_histogram against np.histogram
 * (scripts/reference/gen_histogram.py): edges, counts and densities of
 * float32 and float64 inputs, values exactly on edges and one ulp either
 * side, constant and one-element inputs; then what the references cannot
 * show: non-contiguous inputs, no gradient, the empty input, the errors,
 * and the comparison catching a histogram that is one count off.
 *
 * Tolerances: none. The edges are the float64 values NumPy computes
 * (i * step + lo, rounded to x's dtype) and the counts are integers, so
 * both must match exactly. The density is count / width / numel with the
 * same width (computed in x's dtype, as np.diff) and the same two float64
 * divisions in the same order as NumPy, so it is exact too; only
 * sum(density * width) == 1 allows a few roundings (one per bin).
 */
#include "../common.h"

#include <math.h>

/* The cases of gen_histogram.py: name, bins, density. */
typedef struct hist_case {
    const char *name;
    int64_t bins;
    bool density;
} hist_case;

static const hist_case cases[] = {
    {"tanh_f32", 100, true},
    {"grad_f32", 100, true},
    {"normal_f64", 100, true},
    {"counts_f64", 17, false},
    {"integers_f64", 5, false},
    {"on_edges_f32", 7, false},
    {"on_edges_density_f32", 13, true},
    {"on_edges_f64", 31, false},
    {"const_f32", 4, false},
    {"const_density_f64", 10, true},
    {"single_f32", 3, true},
    {"empty_f32", 4, false},
};
#define NCASES ((int)(sizeof cases / sizeof *cases))

static tg_tensor *load(const char *name, const char *what)
{
    char ref[128];
    snprintf(ref, sizeof ref, "hist_%s_%s", name, what);
    return tg_test_load_ref(ref);
}

/* Checks counts and edges of x against the case's references. */
static void check_case(const hist_case *c, const tg_tensor *x)
{
    tg_tensor *edges = NULL;
    tg_tensor *counts = tg_histogram(x, c->bins, c->density, &edges);
    cr_assert(counts && edges, "%s: %s", c->name, tg_last_error());
    char ref[128];
    snprintf(ref, sizeof ref, "hist_%s_counts", c->name);
    tg_test_check_ref(counts, ref, 0.0, 0.0);
    snprintf(ref, sizeof ref, "hist_%s_edges", c->name);
    tg_test_check_ref(edges, ref, 0.0, 0.0);
}

TG_TEST(histogram, matches_numpy)
{
    for (int i = 0; i < NCASES; i++) {
        tg_tensor *x = load(cases[i].name, "x");
        check_case(&cases[i], x);
        tg_release(x);
    }
}

/* The counts add up to numel and a density integrates to 1. */
TG_TEST(histogram, counts_sum_to_numel_density_to_one)
{
    tg_tensor *x = load("tanh_f32", "x");
    tg_tensor *edges = NULL;
    tg_tensor *counts = tg_histogram(x, 100, false, NULL);
    tg_tensor *density = tg_histogram(x, 100, true, &edges);
    cr_assert(counts && density && edges);
    const double *c = tg_data_f64(counts), *d = tg_data_f64(density);
    const double *e = tg_data_f64(edges);
    double total = 0, integral = 0;
    for (int i = 0; i < 100; i++) {
        total += c[i];
        integral += d[i] * (e[i + 1] - e[i]);
    }
    cr_assert_eq(total, (double)x->numel);
    /* 100 products and sums of values near 0.01, each rounded once */
    cr_assert(fabs(integral - 1.0) < 1e-12, "integral %.17g", integral);
    /* the first and last edges are min(x) and max(x) */
    tg_tensor *lo = tg_min(x, NULL, 0, false), *hi = tg_max(x, NULL, 0, false);
    cr_assert_eq(e[0], tg_item(lo));
    cr_assert_eq(e[100], tg_item(hi));
    tg_release(lo);
    tg_release(hi);
    tg_release(edges);
    tg_release(density);
    tg_release(counts);
    tg_release(x);
}

/* The same values in a transposed (non-contiguous) tensor give the same
 * histogram: the bins do not depend on the order of the values. */
TG_TEST(histogram, non_contiguous_input)
{
    tg_tensor *x = load("tanh_f32", "x"); // (32, 40)
    tg_tensor *t = tg_transpose(x, 0, 1);
    cr_assert(t && !tg_is_contiguous(t));
    tg_tensor *ea = NULL, *eb = NULL;
    tg_tensor *a = tg_histogram(x, 100, true, &ea);
    tg_tensor *b = tg_histogram(t, 100, true, &eb);
    tg_assert_close(b, a, 0.0, 0.0);
    tg_assert_close(eb, ea, 0.0, 0.0);
    /* and a strided slice: every other row */
    tg_tensor *s = tg_slice(x, 0, 0, 32, 2);
    tg_tensor *sc = tg_contiguous(s);
    tg_tensor *hs = tg_histogram(s, 10, false, NULL);
    tg_tensor *hc = tg_histogram(sc, 10, false, NULL);
    tg_assert_close(hs, hc, 0.0, 0.0);
    tg_release(hc);
    tg_release(hs);
    tg_release(sc);
    tg_release(s);
    tg_release(eb);
    tg_release(ea);
    tg_release(b);
    tg_release(a);
    tg_release(t);
    tg_release(x);
}

/* Shapes and dtypes of the results, for any input shape (a 0-d one too). */
TG_TEST(histogram, shapes_and_dtypes)
{
    tg_tensor *x = tg_scalar(2.5, TG_FLOAT32);
    tg_tensor *edges = NULL;
    tg_tensor *h = tg_histogram(x, 3, false, &edges);
    cr_assert(h && edges);
    cr_assert_eq(h->dtype, TG_FLOAT64);
    cr_assert_eq(edges->dtype, TG_FLOAT64);
    cr_assert(h->ndim == 1 && h->shape[0] == 3);
    cr_assert(edges->ndim == 1 && edges->shape[0] == 4);
    /* one value: the unit range around it, counted in the middle bin */
    const double *c = tg_data_f64(h), *e = tg_data_f64(edges);
    cr_assert(c[0] == 0 && c[1] == 1 && c[2] == 0);
    cr_assert(e[0] == 2.0 && e[3] == 3.0);
    tg_release(edges);
    tg_release(h);
    tg_release(x);
}

/* Not differentiable: an input that requires grad gives a result that
 * does not, and nothing is recorded. */
TG_TEST(histogram, records_nothing)
{
    tg_tensor *x = tg_linspace(-1.0, 1.0, 9, TG_FLOAT64);
    tg_set_requires_grad(x, true);
    tg_tensor *y = tg_mul_scalar(x, 2.0); // a non-leaf input too
    tg_tensor *edges = NULL;
    tg_tensor *h = tg_histogram(y, 4, true, &edges);
    cr_assert(h && edges);
    cr_assert(!h->requires_grad && !edges->requires_grad);
    cr_assert_null(tg_grad_fn_name(h));
    cr_assert_eq(tg_tape_size(), 1); // only the MulBackward0 of y
    tg_release(edges);
    tg_release(h);
    tg_release(y);
    tg_release(x);
}

/* An empty x, as torch.histogram and np.histogram: edges over [0, 1],
 * zero counts, and a density of 0 / 0 = NaN. */
TG_TEST(histogram, empty_input)
{
    tg_tensor *x = tg_zeros(TG_SHAPE(0, 3), TG_FLOAT64);
    tg_tensor *edges = NULL;
    tg_tensor *h = tg_histogram(x, 4, true, &edges);
    cr_assert(h && edges);
    const double *c = tg_data_f64(h), *e = tg_data_f64(edges);
    for (int i = 0; i < 4; i++)
        cr_assert(isnan(c[i]), "bin %d: %g", i, c[i]);
    for (int i = 0; i <= 4; i++)
        cr_assert_eq(e[i], 0.25 * i);
    tg_release(edges);
    tg_release(h);
    tg_release(x);
}

TG_TEST(histogram, edges_may_be_null)
{
    tg_tensor *x = load("counts_f64", "x");
    tg_tensor *h = tg_histogram(x, 17, false, NULL);
    tg_test_check_ref(h, "hist_counts_f64_counts", 0.0, 0.0);
    tg_release(x);
}

TG_TEST(histogram, bad_bins)
{
    tg_tensor *x = tg_ones(TG_SHAPE(3), TG_FLOAT32);
    tg_tensor *edges = x; // must be set to NULL on failure
    cr_assert_null(tg_histogram(x, 0, false, &edges));
    cr_assert_null(edges);
    tg_assert_error("tg_histogram", "bins is 0", "rule: bins must be >= 1");
    cr_assert_null(tg_histogram(x, -5, true, NULL));
    tg_assert_error("tg_histogram", "bins is -5");
    tg_release(x);
}

TG_TEST(histogram, int64_input_is_refused)
{
    tg_tensor *x = tg_arange(0, 5, 1, TG_INT64);
    cr_assert_null(tg_histogram(x, 5, false, NULL));
    tg_assert_error("tg_histogram", "cannot bin an int64 tensor",
                    "rule: x must be float32 or float64",
                    "tg_to_dtype(x, TG_FLOAT64)");
    tg_release(x);
}

/* NaN and infinities, as PyTorch and NumPy: an error (the range would not
 * be finite). The message names the first such element. */
TG_TEST(histogram, non_finite_values_are_refused)
{
    const double bad[] = {NAN, INFINITY, -INFINITY};
    const char *names[] = {"is nan", "is inf", "is -inf"};
    for (int i = 0; i < 3; i++) {
        double v[4] = {0.5, -1.0, bad[i], bad[i]};
        tg_tensor *x = tg_from_array(v, TG_SHAPE(2, 2), TG_FLOAT64);
        tg_tensor *edges = x;
        tg_clear_error();
        cr_assert_null(tg_histogram(x, 10, true, &edges));
        cr_assert_null(edges);
        tg_assert_error("tg_histogram", "element 2 of x (shape (2, 2))",
                        names[i], "must be finite");
        tg_release(x);
    }
}

/* Bins narrower than the dtype can resolve: a float32 constant 1e8 (where
 * 1e8 +- 0.5 rounds back to 1e8), and a float32 range of 2^-20 around 1
 * cut into 100 bins (float32 numbers near 1 are 2^-23 apart). NumPy and
 * PyTorch return zero-width bins there (with NaN or inf densities); tapegrad
 * refuses, and the same values in float64 work. */
TG_TEST(histogram, zero_width_bins_are_refused)
{
    tg_tensor *x = tg_full(TG_SHAPE(4), 1e8, TG_FLOAT32);
    cr_assert_null(tg_histogram(x, 4, false, NULL));
    tg_assert_error("tg_histogram", "has width 0 in float32",
                    "tg_to_dtype(x, TG_FLOAT64)");
    tg_tensor *x64 = tg_to_dtype(x, TG_FLOAT64);
    tg_tensor *h = tg_histogram(x64, 4, false, NULL);
    cr_assert(h, "%s", tg_last_error());
    tg_release(h);
    tg_release(x64);
    tg_release(x);

    float v[2] = {1.0f, 1.0f + 0x1p-20f};
    x = tg_from_array(v, TG_SHAPE(2), TG_FLOAT32);
    cr_assert_null(tg_histogram(x, 100, false, NULL));
    tg_assert_error("tg_histogram", "has width 0 in float32");
    h = tg_histogram(x, 8, false, NULL); // 8 bins of 2^-23: fine
    cr_assert(h, "%s", tg_last_error());
    const double *c = tg_data_f64(h);
    cr_assert(c[0] == 1 && c[7] == 1);
    tg_release(h);
    tg_release(x);
}

TG_TEST(histogram, range_too_wide)
{
    tg_tensor *x = tg_from_array((double[]){-1e308, 1e308}, TG_SHAPE(2),
                                 TG_FLOAT64);
    cr_assert_null(tg_histogram(x, 10, false, NULL));
    tg_assert_error("tg_histogram", "wider than the largest double");
    tg_release(x);
}

TG_TEST(histogram, null_input_fails_quietly)
{
    tg_clear_error();
    tg_tensor *edges = (tg_tensor *)&edges; // any non-NULL value
    cr_assert_null(tg_histogram(NULL, 10, true, &edges));
    cr_assert_null(edges);
    cr_assert_str_empty(tg_last_error());
}

/* The comparison used above catches a histogram that is one count off:
 * one value moved into the neighbouring bin, as a wrong rule at an edge
 * ([a, b] instead of [a, b)) would do. */
TG_TEST(histogram, comparison_catches_one_count_off)
{
    tg_tensor *x = load("integers_f64", "x");
    tg_tensor *h = tg_histogram(x, 5, false, NULL);
    tg_tensor *ref = load("integers_f64", "counts");
    tg_assert_close(h, ref, 0.0, 0.0);
    double *c = tg_data_f64(h);
    c[1] -= 1;
    c[0] += 1;
    char report[512];
    cr_assert(!tg_test_close(h, ref, 0.0, 0.0, true, report, sizeof report));
    tg_release(ref);
    tg_release(h);
    tg_release(x);
}
