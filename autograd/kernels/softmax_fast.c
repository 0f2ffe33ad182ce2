/*
 * autograd/kernels/softmax_fast.c - softmax and log_softmax of float32
 * rows written for the vectoriser: the kernel autograd/ops/softmax.c runs
 * along a float32 tensor's last dim unless TG_KERNELS=reference.
 *
 * Not the place to learn softmax: softmax.c has the ops, their backwards
 * and the plain kernel (softmax_row), whose steps this one takes in the
 * same order and in double:
 *
 *   m = max_j x_j,  s_j = x_j - m,  sum = sum_j exp(s_j) (j ascending),
 *   log_softmax_j = s_j - log(sum),  softmax_j = exp(s_j) / sum,
 *
 * each rounded once to float32. Only exp and log differ: softmax_row
 * calls C's exp and log per element, which the compiler cannot vectorise;
 * here they are exp_log_fast.h's, within 2 double ulps, so a result
 * differs from softmax_row's only when its double value falls within
 * ~4e-16 of the midpoint between two floats
 * (tests/autograd/test_fast_exp_log.c counts it over random rows).
 *
 * Rows are taken in chunks of whole rows (short rows, such as a
 * classifier's 3 or 27 classes) or one row in pieces (long rows), so that
 * each exp or log loop runs over up to CHUNK values at once.
 *
 * s_j is clamped to -708 before exp, where exp_log_fast.h's exp stops: for
 * s_j below it exp(s_j) < 3.4e-308, which neither moves a sum of at least
 * 1 (the maximum's own exp(0)) nor survives the division by it in float32,
 * so softmax_j is 0 either way; log_softmax_j uses s_j itself. A -inf
 * entry thus gives 0 and -inf, and NaN, +inf or a row of -inf give NaN
 * rows, as softmax_row.
 */
#include "softmax_fast.h"

#include "exp_log_fast.h"
#include "../internal.h"

#include <math.h>

enum { CHUNK = 1024 };

/* e[i] = exp(max(e[i], -708)) */
static TG_VECTOR_CLONES void exp_in_place(double *e, int64_t n)
{
    for (int64_t i = 0; i < n; i++)
        e[i] = tg_exp_in_range(tg_select_double(e[i] < -708.0, -708.0,
                                                   e[i]));
}

/* v[i] = log(v[i]) */
static TG_VECTOR_CLONES void log_in_place(double *v, int64_t n)
{
    for (int64_t i = 0; i < n; i++)
        v[i] = tg_log_positive(v[i]);
}

static double row_max(const float *x, int64_t n)
{
    double m = -INFINITY;
    for (int64_t j = 0; j < n; j++)
        if ((double)x[j] > m) // NaN never is: as softmax_row
            m = x[j];
    return m;
}

/* Rows of n <= CHUNK elements, CHUNK / n of them at a time. */
static void short_rows(const float *x, int64_t rows, int64_t n, float *out,
                       bool log_form)
{
    double e[CHUNK], m[CHUNK], sum[CHUNK];
    const int64_t per = CHUNK / n;
    for (int64_t r0 = 0; r0 < rows; r0 += per) {
        const int64_t nr = rows - r0 < per ? rows - r0 : per;
        const float *xr = x + r0 * n;
        float *o = out + r0 * n;
        for (int64_t r = 0; r < nr; r++) {
            m[r] = row_max(xr + r * n, n);
            for (int64_t j = 0; j < n; j++)
                e[r * n + j] = (double)xr[r * n + j] - m[r];
        }
        exp_in_place(e, nr * n);
        for (int64_t r = 0; r < nr; r++) {
            double s = 0.0;
            for (int64_t j = 0; j < n; j++)
                s += e[r * n + j];
            sum[r] = s;
        }
        if (log_form) {
            log_in_place(sum, nr);
            for (int64_t r = 0; r < nr; r++)
                for (int64_t j = 0; j < n; j++)
                    o[r * n + j] =
                        (float)(((double)xr[r * n + j] - m[r]) - sum[r]);
        } else {
            for (int64_t r = 0; r < nr; r++)
                for (int64_t j = 0; j < n; j++)
                    o[r * n + j] = (float)(e[r * n + j] / sum[r]);
        }
    }
}

/* exp(x[j] - m) for j in [j0, j0 + len) into e */
static void shifted_exps(const float *x, int64_t j0, int64_t len, double m,
                         double *e)
{
    for (int64_t j = 0; j < len; j++)
        e[j] = (double)x[j0 + j] - m;
    exp_in_place(e, len);
}

/* One row of n > CHUNK elements, in pieces of CHUNK; softmax takes each
 * exp again for its output (as softmax_row does). */
static void long_row(const float *x, int64_t n, float *out, bool log_form)
{
    double e[CHUNK];
    const double m = row_max(x, n);
    double sum = 0.0;
    for (int64_t j0 = 0; j0 < n; j0 += CHUNK) {
        const int64_t len = n - j0 < CHUNK ? n - j0 : CHUNK;
        shifted_exps(x, j0, len, m, e);
        for (int64_t j = 0; j < len; j++)
            sum += e[j];
    }
    if (log_form) {
        log_in_place(&sum, 1);
        for (int64_t j = 0; j < n; j++)
            out[j] = (float)(((double)x[j] - m) - sum);
        return;
    }
    for (int64_t j0 = 0; j0 < n; j0 += CHUNK) {
        const int64_t len = n - j0 < CHUNK ? n - j0 : CHUNK;
        shifted_exps(x, j0, len, m, e);
        for (int64_t j = 0; j < len; j++)
            out[j0 + j] = (float)(e[j] / sum);
    }
}

void tg_softmax_rows_f32_fast(const float *x, int64_t rows, int64_t n,
                              float *out, bool log_form)
{
    if (n <= CHUNK)
        short_rows(x, rows, n, out, log_form);
    else
        for (int64_t r = 0; r < rows; r++)
            long_row(x + r * n, n, out + r * n, log_form);
}
