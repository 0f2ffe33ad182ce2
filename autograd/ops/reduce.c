/*
 * autograd/ops/reduce.c - reductions over a set of dims: sum, mean, var,
 * std, max, min (torch.amax / amin), and argmax, argmin over one dim.
 *
 * Forward only so far. Every reduction here runs the same way: x is viewed
 * with the kept dims first and the reduced dims last, and copied into a
 * contiguous (rows, n) matrix; row r holds the n elements that reduce into
 * output element r (outputs in C order). A kernel then reduces one row at a
 * time. The copy makes non-contiguous inputs trivial and keeps every kernel a
 * plain loop over an array; it costs one pass and one buffer, which is the
 * price of simplicity here (a strided kernel would avoid it).
 *
 * Float inputs are reduced in double, whatever their dtype, and rounded to
 * the input dtype at the end: float32 sums accumulate in double. int64 sums
 * stay int64 (wrapping on overflow, as PyTorch). This file is not softmax
 * (softmax.c) and not matmul (matmul.c).
 */
#include "../../tensor/internal.h"
#include "../ops.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

/* ------------------------------------------------------------ the plan */

/* Which dims a reduction removes, and the (rows, n) matrix it works on. */
typedef struct reduce_plan {
    bool reduced[TG_MAX_DIMS];         // (x->ndim,)
    int64_t out_shape[TG_MAX_DIMS];    // (out_ndim,)
    int out_ndim;
    int64_t rows; // output elements
    int64_t n;    // input elements reduced into each output element
} reduce_plan;

/* Formats dims as "[1, -1]" for messages. */
static char *dims_format(const int *dims, int ndims, char buf[TG_SHAPE_STR_MAX])
{
    size_t len = 0;
    buf[len++] = '[';
    buf[len] = '\0';
    for (int i = 0; i < ndims && len < TG_SHAPE_STR_MAX - 32; i++)
        len += (size_t)snprintf(buf + len, TG_SHAPE_STR_MAX - len, "%s%d",
                                i ? ", " : "", dims[i]);
    snprintf(buf + len, TG_SHAPE_STR_MAX - len, "]");
    return buf;
}

/* Checks dims against x and fills p. dims NULL or ndims 0 reduces every
 * dim. A 0-d x accepts dim 0 or -1 (as PyTorch) and reduces its one
 * element. Returns 0, or -1 with an error naming fn. */
static int plan_make(const char *fn, const tg_tensor *x, const int *dims,
                     int ndims, bool keepdim, reduce_plan *p)
{
    memset(p, 0, sizeof *p);
    if (ndims < 0) {
        tg_error(fn,
                 "ndims is %d\n"
                 "  rule: ndims must be >= 0 (0 reduces every dim)",
                 ndims);
        return -1;
    }
    bool all = !dims || ndims == 0;
    bool seen_scalar_dim = false; // a 0-d x: dim 0 may be named once
    for (int i = 0; !all && i < ndims; i++) {
        int d = tg_dim_normalize(fn, dims[i], x->ndim);
        if (d < 0)
            return -1;
        bool *seen = x->ndim == 0 ? &seen_scalar_dim : &p->reduced[d];
        if (*seen) {
            char s[TG_SHAPE_STR_MAX], ds[TG_SHAPE_STR_MAX];
            tg_error(fn,
                     "dims %s name dim %d twice for a tensor of shape %s\n"
                     "  rule: each dim may be listed once (negative dims "
                     "count from the end)",
                     dims_format(dims, ndims, ds), d, tg_shape_str(x, s));
            return -1;
        }
        *seen = true;
    }
    p->rows = 1;
    p->n = 1;
    for (int d = 0; d < x->ndim; d++) {
        if (all)
            p->reduced[d] = true;
        if (p->reduced[d]) {
            p->n *= x->shape[d];
            if (keepdim)
                p->out_shape[p->out_ndim++] = 1;
        } else {
            p->rows *= x->shape[d];
            p->out_shape[p->out_ndim++] = x->shape[d];
        }
    }
    return 0;
}

/* x as a contiguous (rows, n) matrix of the given dtype: a view with the
 * kept dims first and the reduced dims last (both in their original order),
 * then a contiguous copy. New reference, or NULL with an error. */
static tg_tensor *rows_as(const tg_tensor *x, const reduce_plan *p,
                          tg_dtype dtype)
{
    int64_t shape[TG_MAX_DIMS], strides[TG_MAX_DIMS];
    int k = 0;
    for (int pass = 0; pass < 2; pass++)
        for (int d = 0; d < x->ndim; d++)
            if (p->reduced[d] == (pass == 1)) {
                shape[k] = x->shape[d];
                strides[k] = x->strides[d];
                k++;
            }
    tg_tensor *view = tg_view_make(x, shape, strides, x->ndim, x->offset);
    if (!view)
        return NULL;
    tg_tensor *rows = tg_contiguous_as(view, dtype);
    tg_release(view);
    return rows;
}

/* ------------------------------------------------------- row kernels */
/* Each reduces row[0..n) to one value. Float rows are double (see the top
 * of the file); argmax and argmin return an index, exact in a double. */

typedef double (*row_f64_fn)(const double *row, int64_t n, int64_t correction);
typedef int64_t (*row_i64_fn)(const int64_t *row, int64_t n);

/* sum = row[0] + ... + row[n-1]; 0 for an empty row */
static double sum_f64(const double *row, int64_t n, int64_t correction)
{
    (void)correction;
    double s = 0.0;
    for (int64_t j = 0; j < n; j++)
        s += row[j];
    return s;
}

/* int64 sums wrap modulo 2^64 like PyTorch's; unsigned arithmetic makes the
 * wrap defined in C. */
static int64_t sum_i64(const int64_t *row, int64_t n)
{
    uint64_t s = 0;
    for (int64_t j = 0; j < n; j++)
        s += (uint64_t)row[j];
    return (int64_t)s;
}

/* mean = sum / n; an empty row gives 0 / 0 = NaN, as PyTorch */
static double mean_f64(const double *row, int64_t n, int64_t correction)
{
    return sum_f64(row, n, correction) / (double)n;
}

/* Two passes: mean first, then the squared deviations from it.
 *   var = sum_j (row[j] - mean)^2 / max(0, n - correction)
 * The one-pass E[x^2] - E[x]^2 cancels catastrophically when |mean| >> std
 * (a row near 1e4 with std 1e-2 loses every digit in float32). A divisor of
 * 0 gives inf, or NaN when the deviations are all 0, as PyTorch. */
static double var_f64(const double *row, int64_t n, int64_t correction)
{
    double mean = mean_f64(row, n, 0);
    double ss = 0.0;
    for (int64_t j = 0; j < n; j++) {
        double dev = row[j] - mean;
        ss += dev * dev;
    }
    /* In double: n - correction cannot overflow for any int64 correction. */
    double dof = (double)n - (double)correction;
    return ss / (dof > 0.0 ? dof : 0.0);
}

/* std = sqrt(var) */
static double std_f64(const double *row, int64_t n, int64_t correction)
{
    return sqrt(var_f64(row, n, correction));
}

/* max = the largest element; the first NaN makes it NaN (torch.amax).
 * Only called with n >= 1. */
static double max_f64(const double *row, int64_t n, int64_t correction)
{
    (void)correction;
    double m = row[0];
    for (int64_t j = 1; j < n && !isnan(m); j++)
        if (isnan(row[j]) || row[j] > m)
            m = row[j];
    return m;
}

static double min_f64(const double *row, int64_t n, int64_t correction)
{
    (void)correction;
    double m = row[0];
    for (int64_t j = 1; j < n && !isnan(m); j++)
        if (isnan(row[j]) || row[j] < m)
            m = row[j];
    return m;
}

static int64_t max_i64(const int64_t *row, int64_t n)
{
    int64_t m = row[0];
    for (int64_t j = 1; j < n; j++)
        if (row[j] > m)
            m = row[j];
    return m;
}

static int64_t min_i64(const int64_t *row, int64_t n)
{
    int64_t m = row[0];
    for (int64_t j = 1; j < n; j++)
        if (row[j] < m)
            m = row[j];
    return m;
}

/* argmax = the first j with row[j] == max; a NaN counts as larger than
 * everything, so the first NaN wins (as torch.argmax). argmin likewise, NaN
 * again winning (as torch.argmin). Ties keep the earlier index because only
 * a strictly better element replaces the best. */
static double argmax_f64(const double *row, int64_t n, int64_t correction)
{
    (void)correction;
    int64_t best = 0;
    for (int64_t j = 1; j < n && !isnan(row[best]); j++)
        if (isnan(row[j]) || row[j] > row[best])
            best = j;
    return (double)best;
}

static double argmin_f64(const double *row, int64_t n, int64_t correction)
{
    (void)correction;
    int64_t best = 0;
    for (int64_t j = 1; j < n && !isnan(row[best]); j++)
        if (isnan(row[j]) || row[j] < row[best])
            best = j;
    return (double)best;
}

static int64_t argmax_i64(const int64_t *row, int64_t n)
{
    int64_t best = 0;
    for (int64_t j = 1; j < n; j++)
        if (row[j] > row[best])
            best = j;
    return best;
}

static int64_t argmin_i64(const int64_t *row, int64_t n)
{
    int64_t best = 0;
    for (int64_t j = 1; j < n; j++)
        if (row[j] < row[best])
            best = j;
    return best;
}

/* ------------------------------------------------------------ driver */

/* One reduction: its name, its kernels, and what it requires. */
typedef struct reduce_op {
    const char *fn;
    const char *what;   // for messages: "the maximum", "the mean", ...
    row_f64_fn f64;     // float inputs
    row_i64_fn i64;     // int64 inputs; NULL: int64 is an error
    bool out_int64;     // argmax, argmin: indices whatever the input
    bool needs_element; // max, min, argmax, argmin: no value for an empty row
} reduce_op;

static tg_tensor *reduce(const reduce_op *op, const tg_tensor *x,
                         const int *dims, int ndims, bool keepdim,
                         int64_t correction)
{
    if (!x)
        return NULL;
    if (x->dtype == TG_INT64 && !op->i64) {
        tg_error(op->fn,
                 "cannot take %s of an int64 tensor\n"
                 "  rule: mean, var and std need a float32 or float64 "
                 "input (as in PyTorch)\n"
                 "  hint: convert first: %s(tg_to_dtype(x, TG_FLOAT32), "
                 "...)",
                 op->what, op->fn);
        return NULL;
    }
    reduce_plan p;
    if (plan_make(op->fn, x, dims, ndims, keepdim, &p) < 0)
        return NULL;
    if (op->needs_element && p.n == 0) {
        int d = 0;
        while (!(p.reduced[d] && x->shape[d] == 0))
            d++;
        char s[TG_SHAPE_STR_MAX];
        tg_error(op->fn,
                 "cannot reduce dim %d of size 0 in a tensor of shape %s\n"
                 "  rule: %s of no elements is undefined, so every reduced "
                 "dim must have size >= 1",
                 d, tg_shape_str(x, s), op->what);
        return NULL;
    }
    bool as_int = x->dtype == TG_INT64;
    tg_tensor *rows = rows_as(x, &p, as_int ? TG_INT64 : TG_FLOAT64);
    tg_tensor *out = rows ? tg_alloc(p.out_shape, p.out_ndim,
                                     op->out_int64 ? TG_INT64 : x->dtype)
                          : NULL;
    if (out && as_int) {
        const int64_t *m = (const int64_t *)tg_base_ptr(rows); // (rows, n)
        int64_t *o = (int64_t *)tg_base_ptr(out);               // (rows,)
        for (int64_t r = 0; r < p.rows; r++)
            o[r] = op->i64(m + r * p.n, p.n);
    } else if (out) {
        const double *m = (const double *)tg_base_ptr(rows); // (rows, n)
        for (int64_t r = 0; r < p.rows; r++)
            tg_store_contiguous(out, r, op->f64(m + r * p.n, p.n, correction));
    }
    tg_release(rows);
    return out;
}

/* ------------------------------------------------------------------ ops */

static const reduce_op sum_op = {"tg_sum", "the sum", sum_f64, sum_i64,
                                 false, false};
static const reduce_op mean_op = {"tg_mean", "the mean", mean_f64, NULL,
                                  false, false};
static const reduce_op var_op = {"tg_var", "the variance", var_f64, NULL,
                                 false, false};
static const reduce_op std_op = {"tg_std", "the standard deviation",
                                 std_f64, NULL, false, false};
static const reduce_op max_op = {"tg_max", "the maximum", max_f64, max_i64,
                                 false, true};
static const reduce_op min_op = {"tg_min", "the minimum", min_f64, min_i64,
                                 false, true};
static const reduce_op argmax_op = {"tg_argmax", "the argmax", argmax_f64,
                                    argmax_i64, true, true};
static const reduce_op argmin_op = {"tg_argmin", "the argmin", argmin_f64,
                                    argmin_i64, true, true};

/* out = sum of x over dims; keeps x's dtype (int64 stays exact). */
tg_tensor *tg_sum(const tg_tensor *x, const int *dims, int ndims,
                  bool keepdim)
{
    return reduce(&sum_op, x, dims, ndims, keepdim, 0);
}

/* out = sum(x) / N, N the number of elements reduced into each output. */
tg_tensor *tg_mean(const tg_tensor *x, const int *dims, int ndims,
                   bool keepdim)
{
    return reduce(&mean_op, x, dims, ndims, keepdim, 0);
}

/* out = sum((x - mean)^2) / max(0, N - correction) */
tg_tensor *tg_var(const tg_tensor *x, const int *dims, int ndims,
                  int64_t correction, bool keepdim)
{
    return reduce(&var_op, x, dims, ndims, keepdim, correction);
}

/* out = sqrt(var(x)) */
tg_tensor *tg_std(const tg_tensor *x, const int *dims, int ndims,
                  int64_t correction, bool keepdim)
{
    return reduce(&std_op, x, dims, ndims, keepdim, correction);
}

/* out = max of x over dims (torch.amax) */
tg_tensor *tg_max(const tg_tensor *x, const int *dims, int ndims,
                  bool keepdim)
{
    return reduce(&max_op, x, dims, ndims, keepdim, 0);
}

/* out = min of x over dims (torch.amin) */
tg_tensor *tg_min(const tg_tensor *x, const int *dims, int ndims,
                  bool keepdim)
{
    return reduce(&min_op, x, dims, ndims, keepdim, 0);
}

/* out[...] = the first index j along dim where x[..., j, ...] is largest */
tg_tensor *tg_argmax(const tg_tensor *x, int dim, bool keepdim)
{
    return reduce(&argmax_op, x, &dim, 1, keepdim, 0);
}

/* out[...] = the first index j along dim where x[..., j, ...] is smallest */
tg_tensor *tg_argmin(const tg_tensor *x, int dim, bool keepdim)
{
    return reduce(&argmin_op, x, &dim, 1, keepdim, 0);
}
