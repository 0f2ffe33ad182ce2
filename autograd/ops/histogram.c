/*
 * autograd/ops/histogram.c - tg_histogram: how a tensor's values spread
 * over equal bins between their min and max, as counts or as a density,
 * as torch.histogram(x, bins, density) and np.histogram(x, bins=n,
 * density=...) compute it. The diagnostics of makemore part 3 draw it for
 * every layer's activations and gradients (SEMANTICS.md section 7).
 *
 * Not differentiable: a count is piecewise constant in x (its derivative
 * is 0 almost everywhere), so nothing is recorded and the result never
 * requires grad. Not a general binning tool either: no given range, no
 * uneven edges, no weights.
 *
 * The bins follow NumPy exactly (scripts/reference/gen_histogram.py is
 * the reference), so the edges and counts are the same, value for value:
 *   lo, hi  = min(x), max(x); a constant x spans [x - 0.5, x + 0.5] (in
 *             double) and an empty x spans [0, 1]
 *   edge[i] = i * ((hi - lo) / bins) + lo in double, rounded to x's dtype
 *             (np.linspace), edge[bins] = hi
 *   bin i   = [edge[i], edge[i + 1]), the last bin [edge[bins-1], hi]
 *   density = count / width / numel, width = edge[i + 1] - edge[i] in x's
 *             dtype, so that sum(density * width) = 1
 * torch.histogram (1.13) rounds its edges differently (torch.linspace):
 * about half of them differ from NumPy's by an ulp or a few, in float32
 * and float64, and a value that sits exactly on such an edge may then
 * fall in the neighbouring bin. It also returns the counts in x's dtype;
 * here they are always float64.
 *
 * Refused with an error: NaN and infinite values (as PyTorch and NumPy),
 * and bins of width 0, where x's dtype cannot tell the edges apart (a
 * float32 range of 2^-20 in 100 bins, a float32 constant 1e8). PyTorch
 * and NumPy return such bins, with a density of NaN or inf.
 */
#include "../internal.h"

#include <math.h>

/* v rounded to the precision of dtype (a float32 x has float32 edges). */
static double round_to(tg_dtype dtype, double v)
{
    return dtype == TG_FLOAT32 ? (double)(float)v : v;
}

/* b - a computed in dtype, as np.diff on the edges array. */
static double width_in(tg_dtype dtype, double a, double b)
{
    return dtype == TG_FLOAT32 ? (double)((float)b - (float)a) : b - a;
}

/* The checks: a float x, bins in [1, 2^59). Returns 0 or -1 with an
 * error. */
static int histogram_check(const char *fn, const tg_tensor *x, int64_t bins)
{
    tg_check_alive(fn, x);
    if (!tg_dtype_is_float(x->dtype)) {
        tg_error(fn,
                 "cannot bin an %s tensor\n"
                 "  rule: x must be float32 or float64 (as torch.histogram)\n"
                 "  hint: convert first: tg_histogram(tg_to_dtype(x, "
                 "TG_FLOAT64), ...)",
                 tg_dtype_name(x->dtype));
        return -1;
    }
    /* The upper bound keeps the bins + 1 edges a valid tensor size, and
     * names the number the caller gave rather than the edges' shape. */
    if (bins < 1 || bins >= TG_MAX_NUMEL) {
        tg_error(fn,
                 "bins is %lld\n"
                 "  rule: bins must be >= 1 (and below 2^59)\n"
                 "  hint: makemore part 3 draws its histograms with 100 bins",
                 (long long)bins);
        return -1;
    }
    return 0;
}

/* lo and hi of the values v[0 .. n): their min and max, widened as at the
 * top of the file. -1 with an error naming the first value that is NaN or
 * infinite (its bins would have no finite edges). */
static int value_range(const char *fn, const tg_tensor *x, const double *v,
                       int64_t n, double *lo, double *hi)
{
    *lo = 0.0;
    *hi = 1.0;
    for (int64_t i = 0; i < n; i++) {
        if (isfinite(v[i])) {
            *lo = i == 0 || v[i] < *lo ? v[i] : *lo;
            *hi = i == 0 || v[i] > *hi ? v[i] : *hi;
            continue;
        }
        char s[TG_SHAPE_STR_MAX];
        tg_error(fn,
                 "element %lld of x (shape %s) is %s\n"
                 "  rule: the bins span [min(x), max(x)], which must be "
                 "finite (as in torch.histogram and np.histogram)\n"
                 "  hint: a NaN or inf in activations or gradients usually "
                 "means that training diverged: try a smaller learning rate",
                 (long long)i, tg_shape_str(x, s),
                 isnan(v[i]) ? "nan" : v[i] > 0 ? "inf" : "-inf");
        return -1;
    }
    if (*lo == *hi) { // no spread: one unit around the value
        *lo -= 0.5;
        *hi += 0.5;
    }
    return 0;
}

/* edges (bins + 1,) as at the top of the file. -1 with an error when two
 * neighbouring edges are equal: a bin of width 0 has no density, and x's
 * dtype cannot tell its values apart at that scale. */
static int fill_edges(const char *fn, const tg_tensor *x, double lo,
                      double hi, int64_t bins, double *e)
{
    double step = (hi - lo) / (double)bins;
    if (!isfinite(step)) {
        tg_error(fn,
                 "the values of x span [%g, %g], wider than the largest "
                 "double\n"
                 "  rule: max(x) - min(x) must be finite to cut it into "
                 "bins\n"
                 "  hint: scale x down first: tg_mul_scalar(x, 0.5) is enough",
                 lo, hi);
        return -1;
    }
    for (int64_t i = 0; i < bins; i++) {
        double offset = (double)i * step; // two roundings, as np.linspace
        e[i] = round_to(x->dtype, offset + lo);
    }
    e[bins] = round_to(x->dtype, hi);
    for (int64_t i = 0; i < bins; i++) {
        if (e[i] < e[i + 1])
            continue;
        tg_error(fn,
                 "bin %lld of %lld over [%.9g, %.9g] has width 0 in %s\n"
                 "  rule: every bin must be wider than the spacing of %s "
                 "numbers around its values, so that its edges differ\n"
                 "  hint: convert x with tg_to_dtype(x, TG_FLOAT64) or use "
                 "fewer bins",
                 (long long)i, (long long)bins, lo, hi,
                 tg_dtype_name(x->dtype), tg_dtype_name(x->dtype));
        return -1;
    }
    return 0;
}

/* The bin of value v in [e[0], e[bins]]: first the index the even spacing
 * gives, then moved to the bin whose edges hold v, since rounding can put
 * a value near an edge one bin off (NumPy corrects it the same way). */
static int64_t bin_of(double v, double lo, double scale, const double *e,
                      int64_t bins)
{
    double f = (v - lo) * scale;
    int64_t i = f <= 0.0 ? 0 : f >= (double)bins ? bins - 1 : (int64_t)f;
    while (i > 0 && v < e[i])
        i--;
    while (i < bins - 1 && v >= e[i + 1])
        i++;
    return i;
}

/* counts[i] = #{k : x[k] in bin i}; with density
 * counts[i] / (edge[i + 1] - edge[i]) / numel */
tg_tensor *tg_histogram(const tg_tensor *x, int64_t bins, bool density,
                        tg_tensor **edges)
{
    const char *fn = "tg_histogram";
    if (edges)
        *edges = NULL;
    if (!x || histogram_check(fn, x, bins) < 0)
        return NULL;
    /* the values as doubles, in C order (exact for float32) */
    tg_tensor *values = tg_contiguous_as(x, TG_FLOAT64);
    if (!values)
        return NULL;
    const double *v = (const double *)tg_base_ptr(values); // (numel,)
    int64_t n = x->numel;
    double lo, hi;
    int64_t nedges = bins + 1;
    tg_tensor *e_t = NULL, *out = NULL;
    if (value_range(fn, x, v, n, &lo, &hi) < 0)
        goto fail;
    e_t = tg_alloc(&nedges, 1, TG_FLOAT64);
    out = e_t ? tg_alloc(&bins, 1, TG_FLOAT64) : NULL;
    if (!out)
        goto fail;
    double *e = (double *)tg_base_ptr(e_t);  // (bins + 1,)
    double *c = (double *)tg_base_ptr(out);  // (bins,)
    if (fill_edges(fn, x, lo, hi, bins, e) < 0)
        goto fail;
    for (int64_t i = 0; i < bins; i++)
        c[i] = 0.0;
    double scale = (double)bins / (hi - lo);
    for (int64_t k = 0; k < n; k++)
        c[bin_of(v[k], lo, scale, e, bins)] += 1.0;
    /* an empty x gives 0 / width / 0 = NaN, as NumPy and PyTorch */
    for (int64_t i = 0; density && i < bins; i++)
        c[i] = c[i] / width_in(x->dtype, e[i], e[i + 1]) / (double)n;
    tg_release(values);
    if (edges)
        *edges = e_t;
    else
        tg_release(e_t);
    return out;
fail:
    tg_release(out);
    tg_release(e_t);
    tg_release(values);
    return NULL;
}
