/*
 * tensor/multinomial.c - torch.multinomial: category indices drawn from the
 * rows of a tensor of weights, with or without replacement.
 *
 * Same generator state, same indices: torch.multinomial(p, n, replacement,
 * generator=g) on PyTorch 1.13's CPU and tg_multinomial(p, n, replacement, g)
 * return the same int64 tensor and leave g in the same state, so the next
 * torch.rand and tg_rand agree too (the makemore sampling loops depend on
 * it). That takes PyTorch's two algorithms, its draws and its arithmetic,
 * in each dtype; both are written out below: without replacement, a race
 * of exponential clocks; with replacement (even for one sample, as 1.13
 * does), the inverse of the cumulative distribution. There is one
 * implementation of each, plain loops, whatever TG_KERNELS says.
 *
 * What this file is not: not differentiable (PyTorch's multinomial is not
 * either; the result is indices and nothing goes on the tape), not
 * parallel, and not a copy of PyTorch's topk in one corner: when ties
 * reach the samples drawn without replacement (in practice: more samples
 * than positive weights, so zero-weight categories fill the end), tied
 * categories come in increasing index order here, while PyTorch's order
 * is whatever its unstable std::nth_element leaves. Every other result is
 * the same, index for index.
 */
#include "debug.h"
#include "internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

/* torch.multinomial refuses more categories than float32 counts exactly. */
#define MAX_CATEGORIES (INT64_C(1) << 24)

/* The rows of probs as a (R, K) matrix: a 1-D probs is one row. */
typedef struct rows {
    const char *base; // element (0, 0)
    int64_t R, K;     // rows, categories
    int64_t sr, sk;   // strides in elements (sr unused when R == 1)
    tg_dtype dtype;
} rows;

static double weight(const rows *m, int64_t r, int64_t k)
{
    int64_t i = r * m->sr + k * m->sk;
    if (m->dtype == TG_FLOAT32)
        return ((const float *)m->base)[i];
    return ((const double *)m->base)[i];
}

/* ------------------------------------------------- sampling by exponentials
 *
 * Without replacement PyTorch 1.13 races exponential clocks (the
 * Gumbel-max trick with exp applied):
 *
 *   q_ij ~ Exp(1) = -log(1 - u_ij),   u_ij ~ U[0, 1) in double
 *   key_ij = p_ij / q_ij               (in probs' dtype)
 *   sample: the index of the largest key; n samples: the n largest keys,
 *   largest first.
 *
 * Why it samples p: q / p ~ Exp(p) (an exponential with rate p), the
 * smallest of independent exponentials is the one with index j with
 * probability p_j / sum(p), and, by memorylessness, the remaining clocks
 * race again among themselves: the order in which they ring is sampling
 * without replacement. So the weights need no normalisation.
 *
 * The draws: one double uniform (random64) per element of probs, all
 * drawn before any key is compared, into a tensor laid out like probs
 * (torch.empty_like: the same strides when probs is dense, as a transposed
 * matrix is; C order otherwise) and filled in memory order. float32 probs
 * round q to float32 and divide in float32.
 *
 * Ranking: a larger key first; NaN counts as the largest (it arises only
 * from 0 / 0, when u = 0 exactly); ties by the smaller index. */

/* key a ranks before key b */
static bool ranks_before(double a, int64_t ia, double b, int64_t ib)
{
    if (isnan(a) || isnan(b))
        return isnan(a) && (!isnan(b) || ia < ib);
    return a > b || (a == b && ia < ib);
}

typedef struct keyed {
    double key;
    int64_t index;
} keyed;

static int compare_keyed(const void *pa, const void *pb)
{
    const keyed *a = pa, *b = pb;
    if (ranks_before(a->key, a->index, b->key, b->index))
        return -1;
    return ranks_before(b->key, b->index, a->key, a->index) ? 1 : 0;
}

/* torch.empty_like keeps probs' strides when probs is dense (its elements
 * fill a block of memory with no gaps or overlaps); q is then filled in
 * memory order, so element (r, k) gets draw number r sr + k sk. Otherwise
 * q is contiguous and the draws go in C order. */
static bool is_dense(const rows *m)
{
    if (m->R <= 1 || m->K <= 1) {
        int64_t n = m->R <= 1 ? m->K : m->R;
        int64_t s = m->R <= 1 ? m->sk : m->sr;
        return n <= 1 || s == 1;
    }
    return (m->sk == 1 && m->sr == m->K) || (m->sr == 1 && m->sk == m->R);
}

static int64_t draw_number(const rows *m, bool dense, int64_t r, int64_t k)
{
    if (!dense)
        return r * m->K + k;
    return (m->R > 1 ? r * m->sr : 0) + (m->K > 1 ? k * m->sk : 0);
}

/* out[r * n + j] for the n largest keys of each row. */
static int sample_by_exponentials(const rows *m, int64_t n, tg_generator *g,
                                  int64_t *out)
{
    int64_t numel = m->R * m->K;
    double *q = tg_malloc((size_t)numel * sizeof *q);
    keyed *row = tg_malloc((size_t)m->K * sizeof *row);
    if (!q || !row) {
        free(q);
        free(row);
        tg_error("tg_multinomial",
                 "out of memory for the keys of %lld categories",
                 (long long)m->K);
        return -1;
    }
    for (int64_t i = 0; i < numel; i++)
        q[i] = -log(1.0 - tg_random_uniform_f64(g)); // Exp(1), in double
    bool dense = is_dense(m);
    for (int64_t r = 0; r < m->R; r++) {
        for (int64_t k = 0; k < m->K; k++) {
            double qk = q[draw_number(m, dense, r, k)];
            double p = weight(m, r, k);
            row[k].index = k;
            if (m->dtype == TG_FLOAT32)
                row[k].key = (float)p / (float)qk;
            else
                row[k].key = p / qk;
        }
        if (n == 1) {
            int64_t best = 0;
            for (int64_t k = 1; k < m->K; k++)
                if (ranks_before(row[k].key, k, row[best].key, best))
                    best = k;
            out[r] = best;
        } else {
            qsort(row, (size_t)m->K, sizeof *row, compare_keyed);
            for (int64_t j = 0; j < n; j++)
                out[r * n + j] = row[j].index;
        }
    }
    free(q);
    free(row);
    return 0;
}

/* ------------------------------------------ sampling by the inverse CDF
 *
 * With replacement PyTorch 1.13 inverts the cumulative distribution, one
 * row at a time, even for a single sample (later versions race
 * exponentials for one sample too, which draws other numbers):
 *
 *   c_k = (p_0 + ... + p_k) / (p_0 + ... + p_{K-1})
 *         (the running sum in probs' dtype, each c_k divided by the total
 *          in that dtype; then c_{K-1} is set to exactly 1)
 *   for each sample: u ~ U[0, 1) in double (random64),
 *                    index = the smallest k with c_k >= u (binary search)
 *
 * P(index = k) = c_k - c_{k-1} = p_k / sum(p). A zero weight makes an
 * empty interval (c_k = c_{k-1}), never chosen, except at k = 0 when u is
 * exactly 0. float32 c_k are compared with the double u as doubles. */
static int sample_by_cdf(const rows *m, int64_t n, tg_generator *g,
                         int64_t *out)
{
    double *c = tg_malloc((size_t)m->K * sizeof *c);
    if (!c) {
        tg_error("tg_multinomial",
                 "out of memory for the cumulative sums of %lld categories",
                 (long long)m->K);
        return -1;
    }
    for (int64_t r = 0; r < m->R; r++) {
        if (m->dtype == TG_FLOAT32) {
            float sum = 0.0f;
            for (int64_t k = 0; k < m->K; k++) {
                sum += (float)weight(m, r, k);
                c[k] = sum;
            }
            for (int64_t k = 0; k < m->K; k++)
                c[k] = (float)c[k] / sum;
        } else {
            double sum = 0.0;
            for (int64_t k = 0; k < m->K; k++) {
                sum += weight(m, r, k);
                c[k] = sum;
            }
            for (int64_t k = 0; k < m->K; k++)
                c[k] = c[k] / sum;
        }
        c[m->K - 1] = 1.0;
        for (int64_t j = 0; j < n; j++) {
            double u = tg_random_uniform_f64(g);
            int64_t lo = 0, hi = m->K; // the answer is in [lo, hi]
            while (lo < hi) {
                int64_t mid = lo + (hi - lo) / 2;
                if (c[mid] < u)
                    lo = mid + 1;
                else
                    hi = mid;
            }
            out[r * n + j] = lo;
        }
    }
    free(c);
    return 0;
}

/* ------------------------------------------------------------ the checks */

/* The shape, dtype and count checks, in PyTorch's order. */
static bool check_arguments(const tg_tensor *probs, int64_t num_samples,
                            bool replacement)
{
    const char *fn = "tg_multinomial";
    tg_check_alive(fn, probs);
    char s[TG_SHAPE_STR_MAX];
    if (probs->ndim != 1 && probs->ndim != 2) {
        tg_error(fn,
                 "probs of shape %s has %d dims\n"
                 "  rule: probs must be 1-D (K,) or 2-D (R, K): the "
                 "weights of K categories, one row per distribution\n"
                 "  hint: make one row per distribution with "
                 "tg_reshape(probs, (int64_t[]){-1, K}, 2)",
                 tg_shape_str(probs, s), probs->ndim);
        return false;
    }
    if (!tg_dtype_is_float(probs->dtype)) {
        tg_error(fn,
                 "cannot sample from %s probs of shape %s\n"
                 "  rule: probs must be float32 or float64 (as in PyTorch)\n"
                 "  hint: convert first: tg_to_dtype(probs, TG_FLOAT32)",
                 tg_dtype_name(probs->dtype), tg_shape_str(probs, s));
        return false;
    }
    int64_t K = probs->shape[probs->ndim - 1];
    if (num_samples <= 0) {
        tg_error(fn,
                 "cannot draw %lld samples\n"
                 "  rule: num_samples must be >= 1",
                 (long long)num_samples);
        return false;
    }
    if (!replacement && num_samples > K) {
        tg_error(fn,
                 "cannot draw %lld samples without replacement from %lld "
                 "categories\n"
                 "  rule: without replacement each category is drawn at "
                 "most once, so num_samples <= probs.shape[-1], but %lld > "
                 "%lld\n"
                 "  hint: pass replacement = true to allow repeats",
                 (long long)num_samples, (long long)K,
                 (long long)num_samples, (long long)K);
        return false;
    }
    if (K > MAX_CATEGORIES) {
        tg_error(fn,
                 "probs of shape %s has %lld categories\n"
                 "  rule: at most 2^24 = 16777216 categories (as "
                 "torch.multinomial)",
                 tg_shape_str(probs, s), (long long)K);
        return false;
    }
    return true;
}

/* Every weight finite and >= 0, every row with a weight > 0. PyTorch checks
 * the same; the first bad element in C order is the one reported. */
static bool check_weights(const rows *m, const tg_tensor *probs)
{
    const char *fn = "tg_multinomial";
    char s[TG_SHAPE_STR_MAX];
    for (int64_t r = 0; r < m->R; r++) {
        for (int64_t k = 0; k < m->K; k++) {
            double p = weight(m, r, k);
            if (isfinite(p) && p >= 0)
                continue;
            char at[64];
            if (probs->ndim == 2)
                snprintf(at, sizeof at, "[%lld][%lld]", (long long)r,
                         (long long)k);
            else
                snprintf(at, sizeof at, "[%lld]", (long long)k);
            tg_error(fn,
                     "probs%s is %g\n"
                     "  rule: weights must be finite and >= 0 (they need "
                     "not sum to 1)\n"
                     "  hint: pass probabilities or weights, such as "
                     "tg_softmax(logits, -1), not logits or log-"
                     "probabilities",
                     at, p);
            return false;
        }
    }
    for (int64_t r = 0; r < m->R; r++) {
        bool positive = false;
        for (int64_t k = 0; k < m->K && !positive; k++)
            positive = weight(m, r, k) > 0;
        if (positive)
            continue;
        char which[64] = "";
        if (probs->ndim == 2)
            snprintf(which, sizeof which, "row %lld of ", (long long)r);
        tg_error(fn,
                 "%sprobs of shape %s has no positive weight\n"
                 "  rule: each row needs a weight > 0: the weights are "
                 "divided by their sum",
                 which, tg_shape_str(probs, s));
        return false;
    }
    return true;
}

/* ------------------------------------------------------------ the op */

tg_tensor *tg_multinomial(const tg_tensor *probs, int64_t num_samples,
                          bool replacement, tg_generator *g)
{
    if (!probs || !check_arguments(probs, num_samples, replacement))
        return NULL;
    rows m = {tg_base_ptr(probs), 1, probs->shape[probs->ndim - 1], 0,
              probs->strides[probs->ndim - 1], probs->dtype};
    if (probs->ndim == 2) {
        m.R = probs->shape[0];
        m.sr = probs->strides[0];
    }
    int64_t out_shape[2] = {m.R, num_samples};
    int out_ndim = probs->ndim;
    if (out_ndim == 1)
        out_shape[0] = num_samples;
    if (tg_shape_check("tg_multinomial", out_shape, out_ndim) < 0)
        return NULL; // R * num_samples too large
    if (m.R == 0) // no rows: nothing to check or draw, as PyTorch
        return tg_alloc(out_shape, out_ndim, TG_INT64);
    if (!check_weights(&m, probs))
        return NULL;
    tg_tensor *out = tg_alloc(out_shape, out_ndim, TG_INT64);
    if (!out)
        return NULL;
    if (!g)
        g = tg_default_generator();
    int64_t *idx = (int64_t *)tg_base_ptr(out);
    int rc = replacement ? sample_by_cdf(&m, num_samples, g, idx)
                         : sample_by_exponentials(&m, num_samples, g, idx);
    if (rc < 0) {
        tg_release(out);
        return NULL;
    }
    return out;
}
