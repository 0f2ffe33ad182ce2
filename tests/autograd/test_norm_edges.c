/*
 * tests/autograd/test_norm_edges.c - LayerNorm and BatchNorm at their
 * edges: float64 rows with |mean| >> std, eps 0 on a constant channel,
 * rows and batches of no elements, and the plain tg_batch_norm entry point
 * passing its momentum and eps through. Each expected value is PyTorch
 * 1.13's behaviour (quoted in the test) or follows from the definition.
 */
#include "../common.h"

#include <math.h>

/* The value of element i (C order) of a 1-D or 2-D tensor. */
static double at(const tg_tensor *t, int64_t i, int64_t j)
{
    double v = NAN;
    int64_t index[2] = {i, j};
    cr_assert_eq(tg_get(t, index, t->ndim, &v), 0, "%s", tg_last_error());
    return v;
}

/* float64 x = 1e8 + N(0, 1): the variance is 1 and the mean 1e8 times
 * larger than the std. E[x^2] - E[x]^2 loses every digit here (x^2 ~ 1e16
 * has an ulp of 2), even in double; the two-pass variance of the fused ops
 * keeps them. The composed forms, also two-pass here (x - mean is exact
 * enough in float64), are the reference: both must agree to 1e-6, while a
 * one-pass variance is off by order 1. */
TG_TEST(norm_edges, float64_large_mean_matches_the_composed_form)
{
    tg_manual_seed(7);
    tg_tensor *z = tg_randn(TG_SHAPE(16, 3), TG_FLOAT64);
    tg_tensor *x = tg_add_scalar(z, 1e8);
    tg_tensor *ln = tg_layer_norm(x, TG_SHAPE(3), NULL, NULL, 1e-5);
    tg_tensor *ln_ref = tg_layer_norm_composed(x, TG_SHAPE(3), NULL, NULL,
                                               1e-5);
    tg_assert_close(ln, ln_ref, 1e-6, 1e-6);
    tg_batch_norm_options o = tg_batch_norm_defaults();
    tg_tensor *bn = tg_batch_norm_ex(x, NULL, NULL, NULL, NULL, &o, NULL,
                                     NULL);
    tg_tensor *bn_ref = tg_batch_norm_composed(x, NULL, NULL, NULL, NULL, &o);
    tg_assert_close(bn, bn_ref, 1e-6, 1e-6);
    /* and the statistics are those of z shifted: var(x) = var(z) */
    tg_tensor *mean, *invstd;
    tg_tensor *y = tg_batch_norm_ex(x, NULL, NULL, NULL, NULL, &o, &mean,
                                    &invstd);
    tg_tensor *var_z = tg_var(z, TG_DIMS(0), 0, false);
    for (int64_t c = 0; c < 3; c++)
        cr_assert_float_eq(at(invstd, c, 0), 1.0 / sqrt(at(var_z, c, 0) + 1e-5),
                           1e-7, "channel %lld", (long long)c);
    tg_release(var_z);
    tg_release(y);
    tg_release(invstd);
    tg_release(mean);
    tg_release(bn_ref);
    tg_release(bn);
    tg_release(ln_ref);
    tg_release(ln);
    tg_release(x);
    tg_release(z);
}

/* PyTorch: F.batch_norm(torch.full((4, 1), 3.), None, None, w, b, True,
 * 0.1, 0.0) gives y = b everywhere and native_batch_norm's invstd = 0: a
 * constant channel with eps 0 has var + eps = 0, and PyTorch sets invstd
 * to 0 rather than inf (which would make y = 0 * inf = NaN). */
TG_TEST(norm_edges, batch_norm_constant_channel_with_eps_zero)
{
    tg_tensor *x = tg_full(TG_SHAPE(4, 1), 3.0, TG_FLOAT64);
    tg_tensor *w = tg_full(TG_SHAPE(1), 2.0, TG_FLOAT64);
    tg_tensor *b = tg_full(TG_SHAPE(1), 0.5, TG_FLOAT64);
    tg_batch_norm_options o = tg_batch_norm_defaults();
    o.eps = TG_EXACT_ZERO;
    tg_tensor *mean, *invstd;
    tg_tensor *y = tg_batch_norm_ex(x, NULL, NULL, w, b, &o, &mean, &invstd);
    cr_assert(y, "%s", tg_last_error());
    for (int64_t i = 0; i < 4; i++)
        cr_assert_eq(at(y, i, 0), 0.5, "y[%lld] = %g", (long long)i,
                     at(y, i, 0));
    cr_assert_eq(at(mean, 0, 0), 3.0);
    cr_assert_eq(at(invstd, 0, 0), 0.0);
    tg_release(invstd);
    tg_release(mean);
    tg_release(y);
    tg_release(b);
    tg_release(w);
    tg_release(x);
}

/* PyTorch: torch.native_layer_norm(torch.zeros(2, 0), (0,), None, None,
 * 1e-5) gives an empty (2, 0) output, mean [[0.], [0.]] and rstd NaN. */
TG_TEST(norm_edges, layer_norm_rows_of_no_elements)
{
    tg_tensor *x = tg_zeros(TG_SHAPE(2, 0), TG_FLOAT32);
    tg_tensor *mean, *rstd;
    tg_tensor *y = tg_layer_norm_ex(x, TG_SHAPE(0), NULL, NULL, 1e-5, &mean,
                                    &rstd);
    cr_assert(y, "%s", tg_last_error());
    cr_assert(tg_same_shape(y, x));
    cr_assert_eq(mean->ndim, 2);
    cr_assert_eq(mean->shape[0], 2);
    cr_assert_eq(mean->shape[1], 1);
    for (int64_t r = 0; r < 2; r++) {
        cr_assert_eq(at(mean, r, 0), 0.0);
        cr_assert(isnan(at(rstd, r, 0)));
    }
    tg_release(rstd);
    tg_release(mean);
    tg_release(y);
    tg_release(x);
}

/* PyTorch: bn = nn.BatchNorm1d(3); bn(torch.zeros(0, 3)) returns an empty
 * (0, 3) output, leaves running_mean and running_var as they were (an
 * empty batch has no statistics) and counts the batch in
 * num_batches_tracked. Only n == 1 is an error. */
TG_TEST(norm_edges, batch_norm_empty_batch_leaves_running_stats)
{
    tg_module *bn = tg_batch_norm1d_new(3, NULL);
    tg_tensor *x = tg_zeros(TG_SHAPE(0, 3), TG_FLOAT32);
    tg_tensor *y = tg_module_forward(bn, x);
    cr_assert(y, "%s", tg_last_error());
    cr_assert(tg_same_shape(y, x));
    for (int64_t c = 0; c < 3; c++) {
        cr_assert_eq(at(tg_module_buffer(bn, "running_mean"), c, 0), 0.0);
        cr_assert_eq(at(tg_module_buffer(bn, "running_var"), c, 0), 1.0);
    }
    cr_assert_eq(tg_item(tg_module_buffer(bn, "num_batches_tracked")), 1.0);
    /* the composed form leaves them alone too */
    tg_tensor *rm = tg_zeros(TG_SHAPE(3), TG_FLOAT32);
    tg_tensor *rv = tg_ones(TG_SHAPE(3), TG_FLOAT32);
    tg_tensor *yc = tg_batch_norm_composed(x, rm, rv, NULL, NULL, NULL);
    cr_assert(yc, "%s", tg_last_error());
    for (int64_t c = 0; c < 3; c++) {
        cr_assert_eq(at(rm, c, 0), 0.0);
        cr_assert_eq(at(rv, c, 0), 1.0);
    }
    tg_release(yc);
    tg_release(rv);
    tg_release(rm);
    tg_release(y);
    tg_release(x);
    tg_module_free(bn);
}

/* tg_batch_norm passes its momentum and eps through: with momentum 0.3 and
 * eps 0.5 it gives what tg_batch_norm_ex gives with those options, and the
 * running statistics follow the definition running = 0.7 * running + 0.3
 * * batch (unbiased variance) computed here with tg_mean and tg_var. */
TG_TEST(norm_edges, plain_batch_norm_uses_its_momentum_and_eps)
{
    tg_manual_seed(3);
    tg_tensor *x = tg_randn(TG_SHAPE(6, 2), TG_FLOAT64);
    tg_tensor *rm = tg_zeros(TG_SHAPE(2), TG_FLOAT64);
    tg_tensor *rv = tg_ones(TG_SHAPE(2), TG_FLOAT64);
    tg_tensor *y = tg_batch_norm(x, rm, rv, NULL, NULL, true, 0.3, 0.5);
    tg_batch_norm_options o = tg_batch_norm_defaults();
    o.momentum = 0.3;
    o.eps = 0.5;
    tg_tensor *y_ref = tg_batch_norm_composed(x, NULL, NULL, NULL, NULL, &o);
    tg_assert_close(y, y_ref, 1e-12, 1e-12);
    tg_tensor *m = tg_mean(x, TG_DIMS(0), false);
    tg_tensor *v = tg_var(x, TG_DIMS(0), 1, false);
    for (int64_t c = 0; c < 2; c++) {
        cr_assert_float_eq(at(rm, c, 0), 0.3 * at(m, c, 0), 1e-12);
        cr_assert_float_eq(at(rv, c, 0), 0.7 + 0.3 * at(v, c, 0), 1e-12);
    }
    /* eval with eps 0.5: y = (x - running_mean) / sqrt(running_var + 0.5) */
    tg_tensor *e = tg_batch_norm(x, rm, rv, NULL, NULL, false, 0.3, 0.5);
    double want = (at(x, 0, 1) - at(rm, 1, 0)) / sqrt(at(rv, 1, 0) + 0.5);
    cr_assert_float_eq(at(e, 0, 1), want, 1e-12);
    tg_release(e);
    tg_release(v);
    tg_release(m);
    tg_release(y_ref);
    tg_release(y);
    tg_release(rv);
    tg_release(rm);
    tg_release(x);
}

/* The LayerNorm module refuses an eps that is not a finite number >= 0. */
TG_TEST(norm_edges, layer_norm_module_rejects_bad_eps)
{
    const double bad[] = {INFINITY, NAN, -1e-5};
    for (int i = 0; i < 3; i++) {
        tg_clear_error();
        cr_assert_null(tg_layer_norm_new(TG_SHAPE(4), bad[i], true));
        tg_assert_error("tg_layer_norm_new: eps is", "rule:", "hint:");
    }
}
