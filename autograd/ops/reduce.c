/*
 * autograd/ops/reduce.c - reductions over a set of dims: sum, mean, var,
 * std, max, min (torch.amax / amin), and argmax, argmin over one dim;
 * forward and backward.
 *
 * Every reduction here runs the same way: x is viewed with the kept dims
 * first and the reduced dims last, and copied into a contiguous (rows, n)
 * matrix; row r holds the n elements that reduce into output element r
 * (outputs in C order). A kernel then reduces one row at a time. The copy
 * makes non-contiguous inputs trivial and keeps every kernel a plain loop
 * over an array; it costs one pass and one buffer, which is the price of
 * simplicity here (a strided kernel would avoid it).
 *
 * Float inputs are reduced in double, whatever their dtype, and rounded to
 * the input dtype at the end: float32 sums accumulate in double. int64 sums
 * stay int64 (wrapping on overflow, as PyTorch). This file is not softmax
 * (softmax.c) and not matmul (matmul.c).
 *
 * Backward: the incoming gradient g has the output's shape; with keepdim
 * false the reduced dims are first put back as size 1 (grad_keepdim), so
 * that g broadcasts against x. Each backward sits above the public op it
 * differentiates and is written with public ops (backward runs with
 * gradients disabled). Each forward records one node and calls no recorded
 * op. argmax and argmin give int64 indices and are not recorded.
 */
#include "../internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
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
    tg_check_alive(fn, x);
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
/* The variance from the sum of squared deviations ss of n elements (also
 * sum_contiguous's, for leading dims). */
static double var_of_ss(double ss, int64_t n, int64_t correction)
{
    /* In double: n - correction cannot overflow for any int64 correction. */
    double dof = (double)n - (double)correction;
    return ss / (dof > 0.0 ? dof : 0.0);
}

static double var_f64(const double *row, int64_t n, int64_t correction)
{
    double mean = mean_f64(row, n, 0);
    double ss = 0.0;
    for (int64_t j = 0; j < n; j++) {
        double dev = row[j] - mean;
        ss += dev * dev;
    }
    return var_of_ss(ss, n, correction);
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

/* ------------------------------------------- contiguous sum, mean, var */

/* The loops of sum_contiguous over leading dims, x seen as (n, rows): each
 * column's sum, acc[r] += x[i, r] for i = 0, 1, ..., and for var its
 * squared deviations from mean[r] the same way. Across the columns they
 * vectorise; down a column the additions stay in row order, so every
 * clone (TG_VECTOR_CLONES) gives the bits of the plain loop. */
#define TG_LEADING_SUMS(SFX, T)                                             \
    static TG_VECTOR_CLONES void sum_leading_##SFX(                          \
        const T *restrict x, int64_t n, int64_t rows, double *restrict acc)  \
    {                                                                       \
        for (int64_t i = 0; i < n; i++)                                     \
            for (int64_t r = 0; r < rows; r++)                              \
                acc[r] += (double)x[i * rows + r];                          \
    }                                                                       \
    static TG_VECTOR_CLONES void ss_leading_##SFX(                           \
        const T *restrict x, int64_t n, int64_t rows,                       \
        const double *restrict mean, double *restrict ss)                   \
    {                                                                       \
        for (int64_t i = 0; i < n; i++)                                     \
            for (int64_t r = 0; r < rows; r++) {                            \
                double dev = (double)x[i * rows + r] - mean[r];             \
                ss[r] += dev * dev;                                         \
            }                                                               \
    }
TG_LEADING_SUMS(f32, float)
TG_LEADING_SUMS(f64, double)
#undef TG_LEADING_SUMS

/* Whether a reduction is one that sum_contiguous may compute, and which:
 * the fast path is chosen by this field, not by which op it is. */
typedef enum reduce_fast {
    NO_FAST_PATH = 0,
    FAST_SUM,
    FAST_MEAN,
    FAST_VAR, // leading dims only
    FAST_STD, // leading dims only
} reduce_fast;

/* The fast path of sum and mean for a contiguous float x whose reduced
 * dims are all before its kept ones (a bias gradient: (N, C) -> (C,)) or
 * all after them (each row of a matrix), dims of size 1 aside, and of var
 * and std for the first layout (BatchNorm's statistics written by hand:
 * x.mean(0), x.std(0)): it reads x where it lies instead of copying it
 * transposed into doubles. Each output is still a double sum from 0 in the
 * order of the elements (row after row for leading dims), the very
 * additions of sum_f64 on the copy, and var's squared deviations from that
 * mean are added in the same order as var_f64's, so the result is the
 * reference's bit for bit. Leading dims add whole rows into a row of
 * accumulators, a loop the compiler vectorises. Returns false, having done
 * nothing, for any other layout; else true, with *out the new reference
 * (NULL after an error). */
static bool sum_contiguous(const char *fn, const tg_tensor *x,
                           const reduce_plan *p, reduce_fast kind,
                           int64_t correction, tg_tensor **out)
{
    const bool mean = kind == FAST_MEAN;
    const bool var = kind == FAST_VAR || kind == FAST_STD;
    /* An empty x goes the general way: its leading dims may be huge
     * around a 0, and the loops below would count through them. */
    if (!tg_dtype_is_float(x->dtype) || !tg_is_contiguous(x) ||
        x->numel == 0 || tg_use_reference_kernels())
        return false;
    /* 0: no dim of size > 1 seen; 1: in the first block; 2: in the second. */
    int block = 0;
    bool first_reduced = false;
    for (int d = 0; d < x->ndim; d++) {
        if (x->shape[d] == 1)
            continue;
        if (block == 0) {
            block = 1;
            first_reduced = p->reduced[d];
        } else if (block == 1 && p->reduced[d] != first_reduced) {
            block = 2;
        } else if (block == 2 && p->reduced[d] == first_reduced) {
            return false; // three blocks: the general path
        }
    }
    bool leading = first_reduced && block == 2;
    if (var && !leading)
        return false;
    /* the accumulators, and for var the squared deviations after them */
    const int64_t nacc = var ? 2 * p->rows : p->rows;
    double stack[512], *acc = stack;
    if (leading && nacc > 512 &&
        !(acc = tg_malloc((size_t)nacc * sizeof *acc))) {
        tg_error(fn, "out of memory");
        *out = NULL;
        return true;
    }
    tg_tensor *o = tg_alloc(p->out_shape, p->out_ndim, x->dtype);
    if (o) {
        const char *base = tg_base_ptr(x);
        int64_t rows = p->rows, n = p->n;
        if (leading) {
            for (int64_t r = 0; r < rows; r++)
                acc[r] = 0.0;
            if (x->dtype == TG_FLOAT32)
                sum_leading_f32((const float *)base, n, rows, acc);
            else
                sum_leading_f64((const double *)base, n, rows, acc);
            if (var) { /* var_f64: the mean, then (x - mean)^2 in order */
                double *ss = acc + rows;
                for (int64_t r = 0; r < rows; r++) {
                    acc[r] /= (double)n;
                    ss[r] = 0.0;
                }
                if (x->dtype == TG_FLOAT32)
                    ss_leading_f32((const float *)base, n, rows, acc, ss);
                else
                    ss_leading_f64((const double *)base, n, rows, acc, ss);
                for (int64_t r = 0; r < rows; r++) {
                    double v = var_of_ss(ss[r], n, correction);
                    tg_store_contiguous(o, r, kind == FAST_STD ? sqrt(v) : v);
                }
            } else {
                for (int64_t r = 0; r < rows; r++)
                    tg_store_contiguous(o, r,
                                        mean ? acc[r] / (double)n : acc[r]);
            }
        } else {
#define TG_SUM_TRAILING(T)                                                  \
    for (int64_t r = 0; r < rows; r++) {                                    \
        const T *row = (const T *)base + r * n;                             \
        double sum = 0.0;                                                   \
        for (int64_t j = 0; j < n; j++)                                     \
            sum += (double)row[j];                                          \
        tg_store_contiguous(o, r, mean ? sum / (double)n : sum);            \
    }
            if (x->dtype == TG_FLOAT32)
                TG_SUM_TRAILING(float)
            else
                TG_SUM_TRAILING(double)
#undef TG_SUM_TRAILING
        }
    }
    if (acc != stack)
        free(acc);
    *out = o;
    return true;
}

/* ------------------------------------------------------------ driver */

/* What every reduction's backward knows besides its saved tensors. */
typedef struct reduce_ctx {
    bool reduced[TG_MAX_DIMS]; // (ndim,) the dims x lost (or kept as 1)
    int ndim;                  // x->ndim
    bool keepdim;
    int64_t n;                 // elements reduced into each output (N)
    int64_t correction;        // var, std
} reduce_ctx;

/* One reduction: its name, its kernels, and what it requires. */
typedef struct reduce_op {
    const char *fn;
    const char *what;   // for messages: "the maximum", "the mean", ...
    row_f64_fn f64;     // float inputs
    row_i64_fn i64;     // int64 inputs; NULL: int64 is an error
    bool out_int64;     // argmax, argmin: indices whatever the input
    bool needs_element; // max, min, argmax, argmin: no value for an empty row
    reduce_fast fast;   // sum_contiguous when the layout allows
} reduce_op;

/* Runs op over dims of x. When grad is given and x requires grad, records
 * the call as one node (with a reduce_ctx) and sets *node, so that the
 * caller can save what its backward needs; *node is NULL otherwise. */
static tg_tensor *reduce(const reduce_op *op, const tg_op *grad,
                         const tg_tensor *x, const int *dims, int ndims,
                         bool keepdim, int64_t correction, tg_node **node)
{
    if (node)
        *node = NULL;
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
    tg_tensor *out = NULL, *rows = NULL;
    if (op->fast != NO_FAST_PATH &&
        sum_contiguous(op->fn, x, &p, op->fast, correction, &out)) {
        if (!out)
            return NULL;
    } else {
        rows = rows_as(x, &p, as_int ? TG_INT64 : TG_FLOAT64);
        out = rows ? tg_alloc(p.out_shape, p.out_ndim,
                              op->out_int64 ? TG_INT64 : x->dtype)
                   : NULL;
    }
    if (rows && out && as_int) {
        const int64_t *m = (const int64_t *)tg_base_ptr(rows); // (rows, n)
        int64_t *o = (int64_t *)tg_base_ptr(out);               // (rows,)
        for (int64_t r = 0; r < p.rows; r++)
            o[r] = op->i64(m + r * p.n, p.n);
    } else if (rows && out) {
        const double *m = (const double *)tg_base_ptr(rows); // (rows, n)
        for (int64_t r = 0; r < p.rows; r++)
            tg_store_contiguous(out, r, op->f64(m + r * p.n, p.n, correction));
    }
    tg_release(rows);
    if (out)
        out->made_by = op->fn;
    tg_node *n = grad ? tg_record(grad, &out, TG_INPUTS(x)) : NULL;
    if (n) {
        reduce_ctx *c = tg_node_ctx(n);
        memcpy(c->reduced, p.reduced, sizeof c->reduced);
        c->ndim = x->ndim;
        c->keepdim = keepdim;
        c->n = p.n;
        c->correction = correction;
    }
    if (node)
        *node = n;
    return out;
}

/* ------------------------------------------------- backward helpers */

/* t (the output's shape) with the reduced dims back as size 1, so that it
 * broadcasts against x: a view. Unsqueezing in increasing dim order puts
 * each one at its place in x. New reference. */
static tg_tensor *grad_keepdim(const reduce_ctx *c, const tg_tensor *t)
{
    tg_tensor *r = tg_retain((tg_tensor *)t);
    for (int d = 0; !c->keepdim && r && d < c->ndim; d++)
        if (c->reduced[d]) {
            tg_tensor *u = tg_unsqueeze(r, d);
            tg_release(r);
            r = u;
        }
    return r;
}

/* The reduced dims as a list for tg_sum / tg_mean; 0 for a 0-d x (whose
 * one element is then reduced, as with dims NULL). */
static int reduced_dims(const reduce_ctx *c, int dims[TG_MAX_DIMS])
{
    int nd = 0;
    for (int d = 0; d < c->ndim; d++)
        if (c->reduced[d])
            dims[nd++] = d;
    return nd;
}

/* t broadcast to input 0's shape (a stride-0 view). New reference. */
static tg_tensor *expand_to_input(const tg_node *node, const tg_tensor *t)
{
    int ndim;
    const int64_t *shape = tg_node_input_shape(node, 0, &ndim);
    return tg_expand(t, shape, ndim);
}

/* ------------------------------------------------------------------ ops */

static const reduce_op sum_op = {"tg_sum", "the sum", sum_f64, sum_i64,
                                 false, false, FAST_SUM};
static const reduce_op mean_op = {"tg_mean", "the mean", mean_f64, NULL,
                                  false, false, FAST_MEAN};
static const reduce_op var_op = {"tg_var", "the variance", var_f64, NULL,
                                 false, false, FAST_VAR};
static const reduce_op std_op = {"tg_std", "the standard deviation",
                                 std_f64, NULL, false, false, FAST_STD};
static const reduce_op max_op = {"tg_max", "the maximum", max_f64, max_i64,
                                 false, true, NO_FAST_PATH};
static const reduce_op min_op = {"tg_min", "the minimum", min_f64, min_i64,
                                 false, true, NO_FAST_PATH};
static const reduce_op argmax_op = {"tg_argmax", "the argmax", argmax_f64,
                                    argmax_i64, true, true, NO_FAST_PATH};
static const reduce_op argmin_op = {"tg_argmin", "the argmin", argmin_f64,
                                    argmin_i64, true, true, NO_FAST_PATH};

/* PyTorch names a reduction over every dim (x.sum()) ...Backward0 and one
 * over given dims (x.sum(0)) ...Backward1. */
static bool all_dims(const int *dims, int ndims)
{
    return !dims || ndims == 0;
}

/* ---------------------------------------------------------------- sum */

/* forward: out = sum of x over the reduced dims, so every x element of a
 * row gets that row's gradient: dx = g with the reduced dims put back and
 * broadcast to x's shape. Saved: nothing (x's shape is on the node). */
static int sum_backward(tg_node *node, const tg_tensor *g, tg_tensor **grads)
{
    tg_tensor *gk = grad_keepdim(tg_node_ctx(node), g);
    grads[0] = expand_to_input(node, gk);
    tg_release(gk);
    return grads[0] ? 0 : -1;
}
static const tg_op sum_all_grad = {"SumBackward0", sum_backward,
                                   sizeof(reduce_ctx)};
static const tg_op sum_grad = {"SumBackward1", sum_backward,
                               sizeof(reduce_ctx)};

/* out = sum of x over dims; keeps x's dtype (int64 stays exact). */
tg_tensor *tg_sum(const tg_tensor *x, const int *dims, int ndims,
                  bool keepdim)
{
    return reduce(&sum_op, all_dims(dims, ndims) ? &sum_all_grad : &sum_grad,
                  x, dims, ndims, keepdim, 0, NULL);
}

/* --------------------------------------------------------------- mean */

/* forward: out = sum(x) / N, so dx = g / N, broadcast back as for sum.
 * Saved: nothing (N is in the ctx). */
static int mean_backward(tg_node *node, const tg_tensor *g,
                         tg_tensor **grads)
{
    const reduce_ctx *c = tg_node_ctx(node);
    tg_tensor *gk = grad_keepdim(c, g);
    tg_tensor *share = tg_div_scalar(gk, (double)c->n);
    grads[0] = expand_to_input(node, share);
    tg_release(share);
    tg_release(gk);
    return grads[0] ? 0 : -1;
}
static const tg_op mean_all_grad = {"MeanBackward0", mean_backward,
                                    sizeof(reduce_ctx)};
static const tg_op mean_grad = {"MeanBackward1", mean_backward,
                                sizeof(reduce_ctx)};

/* out = sum(x) / N, N the number of elements reduced into each output. */
tg_tensor *tg_mean(const tg_tensor *x, const int *dims, int ndims,
                   bool keepdim)
{
    return reduce(&mean_op,
                  all_dims(dims, ndims) ? &mean_all_grad : &mean_grad, x,
                  dims, ndims, keepdim, 0, NULL);
}

/* ---------------------------------------------------------------- var */

/* forward: var = sum((x - mean)^2) / max(0, N - correction). The mean's
 * own gradient term sums to zero (sum(x - mean) = 0), so
 *   dx = g * 2 (x - mean) / max(0, N - correction)
 * with g's reduced dims put back. A divisor of 0 gives +-inf, or NaN where
 * x == mean or g == 0, as PyTorch's var_backward over given dims. (For
 * N - correction < 0 PyTorch 1.13 divides by the negative number although
 * its forward gave inf; here the divisor is 0, as in the forward.) */
static tg_tensor *var_grad(const reduce_ctx *c, const tg_tensor *g,
                           const tg_tensor *x)
{
    int dims[TG_MAX_DIMS];
    int nd = reduced_dims(c, dims);
    double dof = (double)c->n - (double)c->correction;
    tg_tensor *mean = tg_mean(x, dims, nd, true);
    tg_tensor *dev = tg_sub(x, mean); // x - mean
    tg_tensor *gk = grad_keepdim(c, g);
    tg_tensor *gdev = tg_mul(gk, dev);
    tg_tensor *dx = tg_mul_scalar(gdev, dof > 0.0 ? 2.0 / dof : INFINITY);
    tg_release(gdev);
    tg_release(gk);
    tg_release(dev);
    tg_release(mean);
    return dx;
}

/* Saved: x. */
static int var_backward(tg_node *node, const tg_tensor *g, tg_tensor **grads)
{
    grads[0] = var_grad(tg_node_ctx(node), g, tg_node_saved(node, 0));
    return grads[0] ? 0 : -1;
}
static const tg_op var_grad_op = {"VarBackward0", var_backward,
                                  sizeof(reduce_ctx)};

/* out = sum((x - mean)^2) / max(0, N - correction) */
tg_tensor *tg_var(const tg_tensor *x, const int *dims, int ndims,
                  int64_t correction, bool keepdim)
{
    tg_node *node;
    tg_tensor *out = reduce(&var_op, &var_grad_op, x, dims, ndims, keepdim,
                            correction, &node);
    if (node)
        tg_node_save(node, x); // x
    return out;
}

/* ---------------------------------------------------------------- std */

/* forward: std = sqrt(var), so dvar = g / (2 std) and
 *   dx = g (x - mean) / ((N - correction) std)
 * through var_grad. Where std == 0 (a constant row) g / (2 std) is set to
 * 0, so the gradient there is 0, not NaN: PyTorch 1.13's std_backward masks
 * it the same way. Saved: x and std (the output). */
static int std_backward(tg_node *node, const tg_tensor *g, tg_tensor **grads)
{
    const tg_tensor *x = tg_node_saved(node, 0), *std = tg_node_saved(node, 1);
    tg_tensor *two_std = tg_mul_scalar(std, 2.0);
    tg_tensor *dvar = tg_div(g, two_std);
    tg_tensor *at_zero = tg_eq_scalar(std, 0.0);
    tg_tensor *zero = tg_scalar(0.0, std->dtype);
    tg_tensor *dvar_masked = tg_where(at_zero, zero, dvar);
    grads[0] = dvar_masked ? var_grad(tg_node_ctx(node), dvar_masked, x)
                           : NULL;
    tg_release(dvar_masked);
    tg_release(zero);
    tg_release(at_zero);
    tg_release(dvar);
    tg_release(two_std);
    return grads[0] ? 0 : -1;
}
static const tg_op std_grad_op = {"StdBackward0", std_backward,
                                  sizeof(reduce_ctx)};

/* out = sqrt(var(x)) */
tg_tensor *tg_std(const tg_tensor *x, const int *dims, int ndims,
                  int64_t correction, bool keepdim)
{
    tg_node *node;
    tg_tensor *out = reduce(&std_op, &std_grad_op, x, dims, ndims, keepdim,
                            correction, &node);
    if (node) {
        tg_node_save(node, x);   // x
        tg_node_save(node, out); // std
    }
    return out;
}

/* ----------------------------------------------------------- max, min */

/* forward: out = max (or min) over the reduced dims. The gradient goes to
 * the elements equal to it, split evenly among ties as PyTorch's amax /
 * amin backward:
 *   dx = g * (x == out) / count,  count = sum(x == out) over the row
 * A row holding NaN has out NaN, no element equal to it, count 0, and a
 * NaN gradient for the whole row (g / 0 * 0), as PyTorch. Saved: x and
 * out (the extreme). */
static int extreme_backward(tg_node *node, const tg_tensor *g,
                            tg_tensor **grads)
{
    const reduce_ctx *c = tg_node_ctx(node);
    int dims[TG_MAX_DIMS];
    int nd = reduced_dims(c, dims);
    tg_tensor *extreme = grad_keepdim(c, tg_node_saved(node, 1));
    tg_tensor *hit = tg_eq(tg_node_saved(node, 0), extreme); // int64 0/1
    tg_tensor *count = tg_sum(hit, dims, nd, true);
    tg_tensor *gk = grad_keepdim(c, g);
    tg_tensor *share = tg_div(gk, count);
    grads[0] = tg_mul(share, hit);
    tg_release(share);
    tg_release(gk);
    tg_release(count);
    tg_release(hit);
    tg_release(extreme);
    return grads[0] ? 0 : -1;
}
static const tg_op max_grad = {"AmaxBackward0", extreme_backward,
                               sizeof(reduce_ctx)};
static const tg_op min_grad = {"AminBackward0", extreme_backward,
                               sizeof(reduce_ctx)};

/* Saves what extreme_backward needs. */
static tg_tensor *extreme(const reduce_op *op, const tg_op *grad,
                          const tg_tensor *x, const int *dims, int ndims,
                          bool keepdim)
{
    tg_node *node;
    tg_tensor *out = reduce(op, grad, x, dims, ndims, keepdim, 0, &node);
    if (node) {
        tg_node_save(node, x);   // x
        tg_node_save(node, out); // the max or min
    }
    return out;
}

/* out = max of x over dims (torch.amax) */
tg_tensor *tg_max(const tg_tensor *x, const int *dims, int ndims,
                  bool keepdim)
{
    return extreme(&max_op, &max_grad, x, dims, ndims, keepdim);
}

/* out = min of x over dims (torch.amin) */
tg_tensor *tg_min(const tg_tensor *x, const int *dims, int ndims,
                  bool keepdim)
{
    return extreme(&min_op, &min_grad, x, dims, ndims, keepdim);
}

/* ---------------------------------------------------- argmax, argmin */
/* int64 indices: nothing to differentiate, nothing recorded. */

/* out[...] = the first index j along dim where x[..., j, ...] is largest */
tg_tensor *tg_argmax(const tg_tensor *x, int dim, bool keepdim)
{
    return reduce(&argmax_op, NULL, x, &dim, 1, keepdim, 0, NULL);
}

/* out[...] = the first index j along dim where x[..., j, ...] is smallest */
tg_tensor *tg_argmin(const tg_tensor *x, int dim, bool keepdim)
{
    return reduce(&argmin_op, NULL, x, &dim, 1, keepdim, 0, NULL);
}
