/*
 * examples/normalization_tour.c - LayerNorm and BatchNorm by example: the
 * demos of the course notebooks, reproduced with tapegrad.
 *
 *   1. LayerNorm gives every row mean 0 and variance 1, whatever its scale
 *      and offset were.
 *   2. LayerNorm and softmax both act on rows, but they promise different
 *      things: softmax rows sum to 1, LayerNorm rows have mean 0 and
 *      variance 1 (so they sum to 0).
 *   3. Biased and unbiased variance, and which one each layer uses.
 *   4. LayerNorm over a trailing block (14, 768) rather than one row (768,).
 *   5. BatchNorm normalises columns across the batch, LayerNorm rows across
 *      the features; so a BatchNorm output depends on the rest of the batch
 *      (in training), a LayerNorm output never does.
 *   6. The same numbers as PyTorch for the same seed.
 *
 * It is a tour, not a test suite, but every property it shows is also
 * checked: the program exits 1 when one does not hold, and it is run by the
 * test suite (suite 'examples'). It uses only the public API.
 *
 * Tolerances used by the checks (float32 throughout):
 *   - a mean that should be 0: |mean| <= 1e-5. The outputs are float32
 *     values of size about 1, each rounded by at most 6e-8 relative; their
 *     mean is summed in double, so the error is far below 1e-5.
 *   - a variance that should be 1: |var - 1| <= 1e-3. LayerNorm and
 *     BatchNorm divide by sqrt(var + eps), not sqrt(var), so the output
 *     variance is var / (var + eps) = 1 - eps / var + ..., about 1e-5 / var
 *     below 1: under 1e-3 for any row or column whose variance is above
 *     0.01, which holds for all the data below.
 *   - a softmax row sum: |sum - 1| <= 1e-6 (8 float32 values, each off by
 *     at most 6e-8 relative).
 */
#include "tapegrad.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---------------------------------------------------------------- checks */

static int nchecks, nfailed;

/* Records one property of the tour. ok false (a NaN comparison is false
 * too, so a failed op that gave NULL -> NaN fails here) prints what did not
 * hold and makes main return 1. */
static void check(bool ok, const char *property, double value)
{
    nchecks++;
    if (!ok) {
        nfailed++;
        printf("CHECK FAILED: %s (value %.9g)\n", property, value);
    }
}

/* ------------------------------------------------------------- summaries */

/* max |t - target| over all elements; NaN when t is NULL. */
static double max_dev(const tg_tensor *t, double target)
{
    tg_tensor *d = tg_sub_scalar(t, target);
    tg_tensor *a = tg_abs(d);
    tg_tensor *m = tg_max(a, NULL, 0, false);
    double v = tg_item(m);
    tg_release(m);
    tg_release(a);
    tg_release(d);
    return v;
}

/* max |a - b| over all elements (a and b broadcast). */
static double max_diff(const tg_tensor *a, const tg_tensor *b)
{
    tg_tensor *d = tg_sub(a, b);
    double v = max_dev(d, 0.0);
    tg_release(d);
    return v;
}

/* Prints the label and the values of t (detached: no grad_fn suffix), on
 * one line when they fit in 80 columns, else the label on a line of its
 * own. Takes ownership of t, to keep the tour short. */
#define LABEL_WIDTH 17
static void show(const char *label, tg_tensor *t)
{
    tg_tensor *values = tg_detach(t);
    char *s = tg_format(values);
    if (!s)
        printf("%-*s (no tensor: %s)\n", LABEL_WIDTH, label,
               tg_last_error());
    else if (strchr(s, '\n') || LABEL_WIDTH + 1 + strlen(s) > 80)
        printf("%s\n%s\n", label, s);
    else
        printf("%-*s %s\n", LABEL_WIDTH, label, s);
    free(s);
    tg_release(values);
    tg_release(t);
}

/* Prints max |t| for a tensor that should be all zeros. Takes ownership. */
static void show_max_abs(const char *label, tg_tensor *t)
{
    printf("%-*s max |.| = %.2g\n", LABEL_WIDTH, label, max_dev(t, 0.0));
    tg_release(t);
}

/* The mean and the biased variance along dim (row statistics for dim -1,
 * column statistics for dim 0): new references. */
static tg_tensor *mean_along(const tg_tensor *x, int dim)
{
    return tg_mean(x, &dim, 1, false);
}
static tg_tensor *var_along(const tg_tensor *x, int dim)
{
    return tg_var(x, &dim, 1, 0, false);
}

/* Checks that x has mean 0 and variance 1 along dim. */
static void check_normalised(const tg_tensor *x, int dim, const char *what)
{
    char property[128];
    tg_tensor *m = mean_along(x, dim), *v = var_along(x, dim);
    snprintf(property, sizeof property, "%s: |mean| <= 1e-5", what);
    double dm = max_dev(m, 0.0);
    check(dm <= 1e-5, property, dm);
    snprintf(property, sizeof property, "%s: |var - 1| <= 1e-3", what);
    double dv = max_dev(v, 1.0);
    check(dv <= 1e-3, property, dv);
    tg_release(v);
    tg_release(m);
}

/* ------------------------------------------------------ 1. rows to (0, 1) */

/* Four rows of 8 random values with very different scales and offsets:
 * row i is z[i] * scale[i] + offset[i], z ~ N(0, 1). Returns z (new
 * reference) for part 2. */
static tg_tensor *rows_to_unit(void)
{
    printf("== 1. LayerNorm: every row to mean 0, variance 1 ==\n");
    tg_manual_seed(0);
    tg_tensor *z = tg_randn(TG_SHAPE(4, 8), TG_FLOAT32);
    tg_tensor *scale = tg_from_array((float[]){0.5f, 1.0f, 10.0f, 100.0f},
                                     TG_SHAPE(4, 1), TG_FLOAT32);
    tg_tensor *offset = tg_from_array((float[]){-3.0f, 0.0f, 5.0f, 1000.0f},
                                      TG_SHAPE(4, 1), TG_FLOAT32);
    tg_tensor *zs = tg_mul(z, scale);
    tg_tensor *x = tg_add(zs, offset); // (4, 8)
    /* y = F.layer_norm(x, (8,)): no weight or bias, eps 1e-5 */
    tg_tensor *y = tg_layer_norm(x, TG_SHAPE(8), NULL, NULL, 1e-5);

    printf("x = randn(4, 8) * [0.5, 1, 10, 100] + [-3, 0, 5, 1000] (per "
           "row)\n");
    show("x row means", mean_along(x, -1));
    show("x row variances", var_along(x, -1));
    show("y row means", mean_along(y, -1));
    show("y row variances", var_along(y, -1));
    check_normalised(y, -1, "part 1, rows of layer_norm(x)");

    tg_release(y);
    tg_release(x);
    tg_release(zs);
    tg_release(offset);
    tg_release(scale);
    return z;
}

/* ------------------------------------------------ 2. LayerNorm vs softmax */

static void layer_norm_vs_softmax(const tg_tensor *z)
{
    printf("\n== 2. LayerNorm (LN) vs softmax, both along rows ==\n");
    printf("z = randn(4, 8) (part 1's rows before scaling)\n");
    tg_tensor *ln = tg_layer_norm(z, TG_SHAPE(8), NULL, NULL, 1e-5);
    tg_tensor *sm = tg_softmax(z, -1);
    int last = -1;
    tg_tensor *ln_sum = tg_sum(ln, &last, 1, false);
    tg_tensor *sm_sum = tg_sum(sm, &last, 1, false);
    tg_tensor *sm_var = var_along(sm, -1);
    tg_tensor *sm_min = tg_min(sm, NULL, 0, false);

    show("softmax row sums", tg_retain(sm_sum));
    show("softmax row vars", tg_retain(sm_var));
    printf("%-*s %.4g (all positive)\n", LABEL_WIDTH, "softmax min",
           tg_item(sm_min));
    show("LN row sums", tg_retain(ln_sum));
    show("LN row vars", var_along(ln, -1));

    double d = max_dev(sm_sum, 1.0);
    check(d <= 1e-6, "part 2, softmax rows sum to 1 within 1e-6", d);
    d = tg_item(sm_min);
    check(d > 0.0, "part 2, softmax values are positive", d);
    /* A row of 8 probabilities has biased variance sum(p^2)/8 - 1/64, at
     * most 7/64 (one-hot); here, with unit-size logits, far less. */
    d = max_dev(sm_var, 0.0);
    check(d < 7.0 / 64.0, "part 2, softmax row variance < 7/64", d);
    /* 8 values of mean 0 within 1e-5 (see the top) sum to 0 within 8e-5 */
    d = max_dev(ln_sum, 0.0);
    check(d <= 8e-5, "part 2, layer_norm rows sum to 0 within 8e-5", d);
    check_normalised(ln, -1, "part 2, rows of layer_norm(z)");

    tg_release(sm_min);
    tg_release(sm_var);
    tg_release(sm_sum);
    tg_release(ln_sum);
    tg_release(sm);
    tg_release(ln);
}

/* ------------------------------------------- 3. biased, unbiased variance */

static void biased_unbiased(void)
{
    printf("\n== 3. Biased (divide by n) vs unbiased (n - 1) variance ==\n");
    /* mean 5, squared deviations 9+1+1+1+0+0+4+16 = 32 */
    tg_tensor *r = tg_from_array((float[]){2, 4, 4, 4, 5, 5, 7, 9},
                                 TG_SHAPE(8), TG_FLOAT32);
    tg_tensor *vb = tg_var(r, NULL, 0, 0, false); // 32 / 8 = 4
    tg_tensor *vu = tg_var(r, NULL, 0, 1, false); // 32 / 7 = 4.5714
    double b = tg_item(vb), u = tg_item(vu);
    show("r", tg_retain(r));
    printf("var(r, correction=0) = %.6f   var(r, correction=1) = %.6f\n", b,
           u);
    printf("ratio = %.6f = n / (n - 1) = 8/7 = %.6f\n", u / b, 8.0 / 7.0);
    check(fabs(u / b - 8.0 / 7.0) <= 1e-6, "part 3, unbiased/biased = 8/7",
          u / b);

    /* LayerNorm divides by sqrt(biased var + eps) = sqrt(4.00001): r[0] = 2
     * becomes -3 / 2.0000025 = -1.4999981 (not -3 / sqrt(32/7) = -1.403). */
    tg_tensor *ln = tg_layer_norm(r, TG_SHAPE(8), NULL, NULL, 1e-5);
    show("layer_norm(r)", tg_retain(ln));

    /* BatchNorm1d(1) sees r as a batch of 8 samples of one feature. With
     * momentum=None (cumulative) the first batch replaces the running
     * statistics, so the buffers show exactly what one batch stores. */
    tg_batch_norm_config cfg = tg_batch_norm_config_defaults();
    cfg.cumulative = true;
    tg_module *bn = tg_batch_norm1d_new(1, &cfg);
    tg_tensor *col = tg_reshape(r, TG_SHAPE(8, 1)); // (N, C) = (8, 1)
    tg_tensor *bn_col = bn ? tg_module_forward(bn, col) : NULL;
    tg_tensor *bn_row = tg_reshape(bn_col, TG_SHAPE(8));
    show("batch_norm1d(r)", tg_retain(bn_row));
    double rv = bn ? tg_item(tg_module_buffer(bn, "running_var")) : NAN;
    double rm = bn ? tg_item(tg_module_buffer(bn, "running_mean")) : NAN;
    printf("BatchNorm1d buffers: running_mean = %.6f, running_var = %.6f "
           "(unbiased)\n",
           rm, rv);

    double x0 = -3.0 / sqrt(4.0 + 1e-5), d;
    double ln0 = NAN, bn0 = NAN;
    tg_get(ln, TG_SHAPE(0), &ln0);
    tg_get(bn_row, TG_SHAPE(0), &bn0);
    /* float32 results of size 1.5: within 1e-6 of the double value */
    check(fabs(ln0 - x0) <= 1e-6, "part 3, layer_norm uses the biased var",
          ln0);
    check(fabs(bn0 - x0) <= 1e-6, "part 3, batch_norm uses the biased var",
          bn0);
    d = max_diff(ln, bn_row);
    check(d <= 1e-6, "part 3, layer_norm(r) == batch_norm(r) column", d);
    /* float32 buffers of size 5: within 1e-6 relative */
    check(fabs(rv - 32.0 / 7.0) <= 5e-6, "part 3, running_var is unbiased",
          rv);
    check(fabs(rm - 5.0) <= 5e-6, "part 3, running_mean is the mean", rm);
    printf("both normalise with the biased var: (2 - 5) / sqrt(4 + 1e-5) = "
           "%.7f\n",
           x0);

    /* makemore part 4 normalises with the unbiased variance in training
     * too: correction = 1 divides by sqrt(32/7 + eps) instead. */
    cfg = tg_batch_norm_config_defaults();
    cfg.correction = 1;
    tg_module *bn1 = tg_batch_norm1d_new(1, &cfg);
    tg_tensor *mm = bn1 ? tg_module_forward(bn1, col) : NULL;
    double mm0 = NAN, mm_expected = -3.0 / sqrt(32.0 / 7.0 + 1e-5);
    tg_get(mm, TG_SHAPE(0, 0), &mm0);
    printf("with correction=1 (makemore): (2 - 5) / sqrt(32/7 + 1e-5) = "
           "%.7f\n",
           mm0);
    check(fabs(mm0 - mm_expected) <= 1e-6,
          "part 3, correction=1 normalises with the unbiased var", mm0);
    tg_release(mm);
    tg_module_free(bn1);

    tg_release(bn_row);
    tg_release(bn_col);
    tg_release(col);
    tg_module_free(bn);
    tg_release(ln);
    tg_release(vu);
    tg_release(vb);
    tg_release(r);
}

/* ------------------------------------------ 4. a (14, 768) trailing block */

static void trailing_block(void)
{
    printf("\n== 4. LayerNorm over a (14, 768) block vs over rows of 768 "
           "==\n");
    tg_manual_seed(1);
    tg_tensor *z = tg_randn(TG_SHAPE(2, 14, 768), TG_FLOAT32);
    tg_tensor *z3 = tg_mul_scalar(z, 3.0);
    tg_tensor *x = tg_add_scalar(z3, 2.0); // mean about 2, std about 3
    char s1[TG_SHAPE_STR_MAX], s2[TG_SHAPE_STR_MAX];

    /* normalized_shape (14, 768): one row per sample, 14 * 768 = 10752
     * values; mean and rstd keep x's leading dim and one 1 per normalised
     * dim: (2, 1, 1). */
    tg_tensor *mean = NULL, *rstd = NULL;
    tg_tensor *yb = tg_layer_norm_ex(x, TG_SHAPE(14, 768), NULL, NULL, 1e-5,
                                     &mean, &rstd);
    printf("x = randn(2, 14, 768) * 3 + 2\n");
    printf("tg_layer_norm_ex, normalized_shape (14, 768): mean %s, rstd "
           "%s\n",
           mean ? tg_shape_str(mean, s1) : "?",
           rstd ? tg_shape_str(rstd, s2) : "?");
    show("x block means", tg_reshape(mean, TG_SHAPE(-1)));
    show("x block rstds", tg_reshape(rstd, TG_SHAPE(-1)));
    tg_tensor *yb_flat = tg_reshape(yb, TG_SHAPE(2, -1)); // (2, 10752)
    show_max_abs("y sample means", mean_along(yb_flat, -1));
    show("y sample vars", var_along(yb_flat, -1));
    check(mean && tg_same_shape(mean, rstd) && mean->ndim == 3 &&
              mean->shape[0] == 2 && mean->shape[1] == 1 &&
              mean->shape[2] == 1,
          "part 4, block statistics have shape (2, 1, 1)",
          mean ? (double)mean->numel : NAN);
    check_normalised(yb_flat, -1, "part 4, samples of the block norm");

    /* normalized_shape (768,): one row per (sample, position), 28 rows */
    tg_tensor *mean2 = NULL, *rstd2 = NULL;
    tg_tensor *yr = tg_layer_norm_ex(x, TG_SHAPE(768), NULL, NULL, 1e-5,
                                     &mean2, &rstd2);
    printf("tg_layer_norm_ex, normalized_shape (768,): mean %s, rstd %s\n",
           mean2 ? tg_shape_str(mean2, s1) : "?",
           rstd2 ? tg_shape_str(rstd2, s2) : "?");
    check(mean2 && tg_same_shape(mean2, rstd2) && mean2->ndim == 3 &&
              mean2->shape[0] == 2 && mean2->shape[1] == 14 &&
              mean2->shape[2] == 1,
          "part 4, row statistics have shape (2, 14, 1)",
          mean2 ? (double)mean2->numel : NAN);
    check_normalised(yr, -1, "part 4, rows of the row norm");

    /* The difference: the block norm centres the block, not each of its 14
     * rows; every row of 768 keeps its own small offset (about 1/sqrt(768)
     * = 0.036 for random data), which the row norm removes. */
    tg_tensor *bm = mean_along(yb, -1), *rmn = mean_along(yr, -1);
    double block_rows = max_dev(bm, 0.0), row_rows = max_dev(rmn, 0.0);
    printf("largest |mean| of one row of 768: block norm %.4f, row norm "
           "%.2g\n",
           block_rows, row_rows);
    check(block_rows > 1e-3, "part 4, block norm leaves row offsets",
          block_rows);

    tg_release(rmn);
    tg_release(bm);
    tg_release(rstd2);
    tg_release(mean2);
    tg_release(yr);
    tg_release(yb_flat);
    tg_release(rstd);
    tg_release(mean);
    tg_release(yb);
    tg_release(x);
    tg_release(z3);
    tg_release(z);
}

/* --------------------------------------- 5. across the batch vs features */

/* randn(n, 5) * 2 + 1: 5 features of mean about 1, std about 2. */
static tg_tensor *features(int64_t n)
{
    tg_tensor *z = tg_randn(TG_SHAPE(n, 5), TG_FLOAT32);
    tg_tensor *z2 = tg_mul_scalar(z, 2.0);
    tg_tensor *x = tg_add_scalar(z2, 1.0);
    tg_release(z2);
    tg_release(z);
    return x;
}

/* The output for sample 0 of batch A and of batch B through module m;
 * prints both and returns max |difference|. */
static double sample0(tg_module *m, const tg_tensor *a, const tg_tensor *b,
                      const char *label)
{
    tg_tensor *ya = tg_module_forward(m, a), *yb = tg_module_forward(m, b);
    tg_tensor *ya0 = tg_select(ya, 0, 0), *yb0 = tg_select(yb, 0, 0);
    char l[64];
    snprintf(l, sizeof l, "%s, A", label);
    show(l, tg_retain(ya0));
    snprintf(l, sizeof l, "%s, B", label);
    show(l, tg_retain(yb0));
    double d = max_diff(ya0, yb0);
    tg_release(yb0);
    tg_release(ya0);
    tg_release(yb);
    tg_release(ya);
    return d;
}

static void batch_vs_features(void)
{
    printf("\n== 5. BatchNorm across the batch, LayerNorm across features "
           "==\n");
    tg_manual_seed(3);
    tg_tensor *x = features(6); // (N, C) = (6, 5)
    tg_module *bn = tg_batch_norm1d_new(5, NULL);
    tg_module *ln = tg_layer_norm_new(TG_SHAPE(5), 1e-5, true);
    if (!bn || !ln) {
        check(false, "part 5, the modules were made", NAN);
        tg_module_free(ln);
        tg_module_free(bn);
        tg_release(x);
        return;
    }
    tg_tensor *yb = tg_module_forward(bn, x); // training mode
    tg_tensor *yl = tg_module_forward(ln, x);
    printf("x = randn(6, 5) * 2 + 1; BatchNorm1d(5) (training) and "
           "LayerNorm(5)\n");
    show_max_abs("BN column means", mean_along(yb, 0));
    show("BN column vars", var_along(yb, 0));
    show("BN row means", mean_along(yb, -1));
    show_max_abs("LN row means", mean_along(yl, -1));
    show("LN row vars", var_along(yl, -1));
    check_normalised(yb, 0, "part 5, columns of BatchNorm1d(x)");
    check_normalised(yl, -1, "part 5, rows of LayerNorm(x)");

    /* The same sample, x[0], in two batches: A = x, and B = x[0] with
     * three other samples. */
    tg_tensor *b = features(4);
    tg_tensor *b0 = tg_select(b, 0, 0), *x0 = tg_select(x, 0, 0);
    check(tg_copy_(b0, x0) == 0, "part 5, B[0] = x[0]", NAN);
    printf("the same sample x[0] in batch A = x (6 samples) and in batch B "
           "(4 samples):\n");
    show("x[0]", tg_retain(x0));
    double d_bn = sample0(bn, x, b, "BN train");
    double d_ln = sample0(ln, x, b, "LN");
    tg_module_train(bn, false); // eval: running statistics, no batch ones
    double d_ev = sample0(bn, x, b, "BN eval");
    printf("max |A - B| for x[0]: BN train %.4f, LN %.2g, BN eval %.2g\n",
           d_bn, d_ln, d_ev);
    check(d_bn > 1e-2, "part 5, BatchNorm (training) depends on the batch",
          d_bn);
    /* Exactly the same arithmetic on the same row: no difference at all. */
    check(d_ln == 0.0, "part 5, LayerNorm does not depend on the batch",
          d_ln);
    check(d_ev == 0.0, "part 5, BatchNorm (eval) does not depend on it",
          d_ev);

    tg_release(x0);
    tg_release(b0);
    tg_release(b);
    tg_release(yl);
    tg_release(yb);
    tg_module_free(ln);
    tg_module_free(bn);
    tg_release(x);
}

/* ------------------------------------------------- 6. the same as PyTorch */

/*
 * The PyTorch program that prints the same numbers (PyTorch 1.13.1, CPU):
 *
 *   import torch
 *   import torch.nn.functional as F
 *   torch.manual_seed(42)
 *   x = torch.randn(3, 4)
 *   print(x)
 *   y = F.layer_norm(x, (4,))
 *   print(y)
 *   bn = torch.nn.BatchNorm1d(4)
 *   z = bn(x)
 *   print(z)
 *   print(bn.running_mean)
 *   print(bn.running_var)
 *   print(bn.num_batches_tracked)
 *
 * and what it prints:
 *
 *   tensor([[ 0.3367,  0.1288,  0.2345,  0.2303],
 *           [-1.1229, -0.1863,  2.2082, -0.6380],
 *           [ 0.4617,  0.2674,  0.5349,  0.8094]])
 *   tensor([[ 1.4150, -1.4102,  0.0257, -0.0305],
 *           [-0.9276, -0.1964,  1.6731, -0.5491],
 *           [-0.2914, -1.2908,  0.0853,  1.4969]])
 *   tensor([[ 0.6185,  0.3100, -0.8730,  0.1621],
 *           [-1.4106, -1.3498,  1.4000, -1.2977],
 *           [ 0.7922,  1.0398, -0.5270,  1.1356]],
 *          grad_fn=<NativeBatchNormBackward0>)
 *   tensor([-0.0108,  0.0070,  0.0993,  0.0134])
 *   tensor([0.9776, 0.9054, 1.0131, 0.9531])
 *   tensor(1)
 *
 * The arrays below are the same tensors at full float32 precision
 * (x.flatten().tolist() and so on), for the checks.
 */
static const float torch_x[12] = {
    0.33669037f, 0.1288094f,   0.23446237f, 0.23033303f,
    -1.1228564f, -0.18632829f, 2.2082014f,  -0.63799703f,
    0.46165723f, 0.26735088f,  0.53490466f, 0.8093572f};
static const float torch_y[12] = {
    1.4150176f,   -1.410231f,   0.025667135f, -0.030453438f,
    -0.92763716f, -0.19642767f, 1.6731402f,   -0.54907537f,
    -0.29141575f, -1.2907739f,  0.08531109f,  1.496878f};
static const float torch_z[12] = {
    0.6184534f,  0.31004688f, -0.8730127f,  0.16212788f,
    -1.4106383f, -1.3497983f, 1.4000242f,   -1.2977165f,
    0.7921849f,  1.0397514f,  -0.52701133f, 1.1355886f};
static const float torch_running_mean[4] = {-0.01081696f, 0.0069944f,
                                            0.099252276f, 0.013389774f};
static const float torch_running_var[4] = {0.9776096f, 0.90540546f,
                                           1.0130972f, 0.9530683f};

/* max |t - expected| with expected a float32 array of t's shape. */
static double diff_from(const tg_tensor *t, const float *expected)
{
    if (!t)
        return NAN;
    tg_tensor *e = tg_from_array(expected, t->shape, t->ndim, TG_FLOAT32);
    double d = max_diff(t, e);
    tg_release(e);
    return d;
}

static void same_as_pytorch(void)
{
    printf("\n== 6. The same numbers as PyTorch for the same seed ==\n");
    tg_manual_seed(42);
    tg_tensor *x = tg_randn(TG_SHAPE(3, 4), TG_FLOAT32);
    tg_tensor *y = tg_layer_norm(x, TG_SHAPE(4), NULL, NULL, 1e-5);
    tg_module *bn = tg_batch_norm1d_new(4, NULL);
    tg_tensor *z = bn ? tg_module_forward(bn, x) : NULL;
    tg_tensor *rm = bn ? tg_module_buffer(bn, "running_mean") : NULL;
    tg_tensor *rv = bn ? tg_module_buffer(bn, "running_var") : NULL;
    tg_tensor *nbt = bn ? tg_module_buffer(bn, "num_batches_tracked") : NULL;
    printf(">>> torch.manual_seed(42); x = torch.randn(3, 4)\n");
    tg_print(x);
    printf(">>> F.layer_norm(x, (4,))\n");
    tg_print(y);
    printf(">>> bn = nn.BatchNorm1d(4); bn(x)\n");
    tg_print(z);
    printf(">>> bn.running_mean, bn.running_var, bn.num_batches_tracked\n");
    tg_print(rm);
    tg_print(rv);
    tg_print(nbt);

    /* randn's small path (< 16 values) computes each value in double and
     * rounds it once to float32, as PyTorch does: the same bits. The
     * normalised values are statistics of 4 or 3 values, which tapegrad
     * accumulates in double and PyTorch in float32: they may differ by a few
     * float32 ulps (1.2e-7 at 1.5), well within 1e-6. */
    double d = diff_from(x, torch_x);
    check(d == 0.0, "part 6, randn(3, 4) as PyTorch's, bit for bit", d);
    d = diff_from(y, torch_y);
    check(d <= 1e-6, "part 6, layer_norm as PyTorch's", d);
    d = diff_from(z, torch_z);
    check(d <= 1e-6, "part 6, BatchNorm1d output as PyTorch's", d);
    d = diff_from(rm, torch_running_mean);
    check(d <= 1e-6, "part 6, running_mean as PyTorch's", d);
    d = diff_from(rv, torch_running_var);
    check(d <= 1e-6, "part 6, running_var as PyTorch's", d);
    d = tg_item(nbt);
    check(d == 1.0, "part 6, num_batches_tracked is 1", d);

    tg_release(z);
    tg_module_free(bn); // rm, rv and nbt were borrowed from it
    tg_release(y);
    tg_release(x);
}

int main(void)
{
    tg_tensor *z = rows_to_unit();
    layer_norm_vs_softmax(z);
    tg_release(z);
    biased_unbiased();
    trailing_block();
    batch_vs_features();
    same_as_pytorch();

    /* every tensor released, and with them every node of the tape */
    check(tg_live_tensors() == 0, "no tensor left alive",
          (double)tg_live_tensors());
    check(tg_tape_size() == 0, "the tape is empty", (double)tg_tape_size());
    printf("\n%d of %d checks hold\n", nchecks - nfailed, nchecks);
    return nfailed == 0 ? 0 : 1;
}
