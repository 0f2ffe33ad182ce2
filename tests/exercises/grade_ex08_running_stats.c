/*
 * tests/exercises/grade_ex08_running_stats.c - grades exercise 08,
 * ex_update_running_stats (docs/exercises/08-running-stats.md):
 *   - the buffers after each of four training batches of different sizes
 *     (2 to 8) against NumPy (scripts/reference/gen_ex08.py), with
 *     momentum 0.1 and 0.3;
 *   - against the buffers of tapegrad's own BatchNorm1d
 *     (tg_batch_norm1d_new, float64) after the same training forwards,
 *     with momentum 0.1 and 0.3;
 *   - momentum 0 (nothing moves) and 1 (the buffers become the batch's
 *     statistics);
 *   - in every call: that the update happens in place and leaves x
 *     alone, and that it is not one of two classic mistakes, which are
 *     then named (the momentum the other way round, the biased variance).
 */
#define EX_STATEMENT "08-running-stats.md"
#include "grade.h"

#include <stdio.h>

/* A fresh BatchNorm1d's buffers: running_mean zeros, running_var ones,
 * (C,) float64. */
static void fresh_buffers(int64_t channels, tg_tensor **rmean,
                          tg_tensor **rvar)
{
    *rmean = tg_zeros(&channels, 1, TG_FLOAT64);
    *rvar = tg_ones(&channels, 1, TG_FLOAT64);
}

static bool same_values(const tg_tensor *a, const tg_tensor *b)
{
    char report[1024];
    return tg_test_close(a, b, 0, 0, true, report, sizeof report);
}

/* (1 - m) * old + m * batch: one step of the running average. */
static tg_tensor *moved(const tg_tensor *old, const tg_tensor *batch,
                        double m)
{
    tg_tensor *kept = tg_mul_scalar(old, 1.0 - m);
    tg_tensor *added = tg_mul_scalar(batch, m);
    tg_tensor *sum = tg_add(kept, added);
    tg_release(added);
    tg_release(kept);
    return sum;
}

static bool close_to(const tg_tensor *a, const tg_tensor *b)
{
    char report[1024];
    return tg_test_close(a, b, 1e-12, 1e-14, true, report, sizeof report);
}

/* Calls the student's update and checks that it returned 0, worked in
 * place (with momentum > 0 the buffers must move: no batch here has the
 * buffers' values as its statistics), and left the buffers' shape and
 * dtype and x alone. Two classic mistakes are named: the momentum used
 * the other way round, and the biased variance in running_var. */
static void student_update(tg_tensor *rmean, tg_tensor *rvar,
                           const tg_tensor *x, double momentum)
{
    tg_tensor *mean0 = tg_clone(rmean), *var0 = tg_clone(rvar);
    tg_tensor *x0 = tg_clone(x);
    int rc = -1;
    EX_CALL(rc = ex_update_running_stats(rmean, rvar, x, momentum));
    cr_assert_eq(rc, 0,
                 "ex_update_running_stats returned %d; the last error "
                 "was:\n%s",
                 rc, tg_last_error()[0] ? tg_last_error() : "(none reported)");
    cr_assert(rmean->ndim == 1 && rmean->shape[0] == mean0->shape[0] &&
                  rmean->dtype == TG_FLOAT64 && rvar->ndim == 1 &&
                  rvar->shape[0] == var0->shape[0] &&
                  rvar->dtype == TG_FLOAT64,
              "the buffers must keep their shape (C,) and dtype float64");
    if (momentum > 0) {
        cr_assert(!same_values(rmean, mean0),
                  "running_mean did not change. Update it in place: the "
                  "caller reads the new values through its own pointer, "
                  "so compute the new values in a new tensor, then copy "
                  "them into the buffer (tg_copy_).");
        cr_assert(!same_values(rvar, var0),
                  "running_var did not change. Update it in place: the "
                  "caller reads the new values through its own pointer, "
                  "so compute the new values in a new tensor, then copy "
                  "them into the buffer (tg_copy_).");
    }
    cr_assert(same_values(x, x0), "x was changed: it is only read");
    if (momentum > 0 && momentum != 0.5) {
        tg_tensor *batch_mean = tg_mean(x, TG_DIMS(0), false);
        tg_tensor *swapped = moved(mean0, batch_mean, 1.0 - momentum);
        cr_assert(!close_to(rmean, swapped),
                  "running_mean kept momentum * running_mean and added "
                  "(1 - momentum) * the batch mean: the other way round. "
                  "In PyTorch's BatchNorm, momentum is the weight of the "
                  "NEW value (0.1 by default), unlike an optimiser's "
                  "momentum.");
        tg_release(swapped);
        tg_release(batch_mean);
    }
    if (momentum > 0) {
        tg_tensor *biased_var = tg_var(x, TG_DIMS(0), 0, false);
        tg_tensor *biased = moved(var0, biased_var, momentum);
        cr_assert(!close_to(rvar, biased),
                  "running_var took the biased batch variance, "
                  "sum((x - mean)^2) / N, the one the forward normalises "
                  "with. The buffer takes the unbiased one, divided by "
                  "N - 1: x.var(0, correction=1).");
        tg_release(biased);
        tg_release(biased_var);
    }
    tg_release(x0);
    tg_release(var0);
    tg_release(mean0);
}

/* Four batches of 8, 2, 5 and 3 rows from fresh buffers; after batch k
 * the buffers must equal row k of the references ex08_rmean_<tag> and
 * ex08_rvar_<tag>. */
static void check_against_numpy(double momentum, const char *tag)
{
    char name[64];
    snprintf(name, sizeof name, "ex08_rmean_%s", tag);
    tg_tensor *means = tg_test_load_ref(name);
    snprintf(name, sizeof name, "ex08_rvar_%s", tag);
    tg_tensor *vars = tg_test_load_ref(name);
    tg_tensor *rmean, *rvar;
    fresh_buffers(4, &rmean, &rvar);
    for (int k = 0; k < 4; k++) {
        snprintf(name, sizeof name, "ex08_x_%d", k);
        tg_tensor *x = tg_test_load_ref(name);
        student_update(rmean, rvar, x, momentum);
        tg_tensor *mean_k = tg_select(means, 0, k);
        tg_tensor *var_k = tg_select(vars, 0, k);
        char what[128];
        snprintf(what, sizeof what,
                 "running_mean after batch %d (%lld rows), momentum %g", k,
                 (long long)x->shape[0], momentum);
        ex_check_close(rmean, mean_k, what, 1e-12, 1e-14);
        snprintf(what, sizeof what,
                 "running_var after batch %d (%lld rows), momentum %g", k,
                 (long long)x->shape[0], momentum);
        ex_check_close(rvar, var_k, what, 1e-12, 1e-14);
        tg_release(var_k);
        tg_release(mean_k);
        tg_release(x);
    }
    tg_release(rvar);
    tg_release(rmean);
    tg_release(vars);
    tg_release(means);
}

TG_TEST(ex08, matches_numpy)
{
    check_against_numpy(0.1, "m01");
}

TG_TEST(ex08, matches_numpy_momentum_0_3)
{
    check_against_numpy(0.3, "m03");
}

/* The student's buffers against those of tapegrad's BatchNorm1d (in
 * float64) after the same training forwards, batch by batch. */
static void check_against_module(double momentum, uint64_t seed)
{
    const int64_t channels = 3, sizes[4] = {2, 16, 7, 2};
    tg_batch_norm_config cfg = tg_batch_norm_config_defaults();
    cfg.momentum = momentum;
    tg_module *bn = tg_batch_norm1d_new(channels, &cfg);
    cr_assert(bn && tg_module_to_dtype(bn, TG_FLOAT64) == 0, "%s",
              tg_last_error());
    tg_generator *gen = tg_generator_new(seed);
    tg_tensor *rmean, *rvar;
    fresh_buffers(channels, &rmean, &rvar);
    for (int k = 0; k < 4; k++) {
        tg_tensor *z = tg_randn_gen(gen, TG_SHAPE(sizes[k], channels),
                                    TG_FLOAT64);
        tg_tensor *x = tg_mul_scalar(z, 2.0 + k); // spreads 2 to 5
        tg_tensor *y = tg_module_forward(bn, x);  // a training forward
        cr_assert(y != NULL, "%s", tg_last_error());
        student_update(rmean, rvar, x, momentum);
        char what[128];
        snprintf(what, sizeof what,
                 "running_mean after batch %d (%lld rows), momentum %g, "
                 "against BatchNorm1d's",
                 k, (long long)sizes[k], momentum);
        ex_check_close(rmean, tg_module_buffer(bn, "running_mean"), what,
                    1e-12, 1e-14);
        snprintf(what, sizeof what,
                 "running_var after batch %d (%lld rows), momentum %g, "
                 "against BatchNorm1d's",
                 k, (long long)sizes[k], momentum);
        ex_check_close(rvar, tg_module_buffer(bn, "running_var"), what, 1e-12,
                    1e-14);
        tg_release(y);
        tg_release(x);
        tg_release(z);
    }
    tg_release(rvar);
    tg_release(rmean);
    tg_generator_free(gen);
    tg_module_free(bn);
}

TG_TEST(ex08, matches_batch_norm1d)
{
    check_against_module(0.1, 81);
}

TG_TEST(ex08, matches_batch_norm1d_momentum_0_3)
{
    check_against_module(0.3, 82);
}

/* momentum 0 keeps the buffers exactly; momentum 1 replaces them with
 * the batch's mean and unbiased variance. */
TG_TEST(ex08, momentum_zero_and_one)
{
    tg_tensor *x = tg_test_load_ref("ex08_x_2");
    tg_tensor *rmean, *rvar;
    fresh_buffers(4, &rmean, &rvar);
    tg_tensor *zeros = tg_clone(rmean), *ones = tg_clone(rvar);
    student_update(rmean, rvar, x, 0.0);
    ex_check_close(rmean, zeros, "running_mean with momentum 0 (must not move)",
                0, 0);
    ex_check_close(rvar, ones, "running_var with momentum 0 (must not move)", 0,
                0);
    student_update(rmean, rvar, x, 1.0);
    tg_tensor *mean = tg_mean(x, TG_DIMS(0), false);
    tg_tensor *var = tg_var(x, TG_DIMS(0), 1, false);
    ex_check_close(rmean, mean,
                "running_mean with momentum 1 (must be x.mean(0))", 1e-12,
                1e-14);
    ex_check_close(rvar, var,
                "running_var with momentum 1 (must be x.var(0, "
                "correction=1))",
                1e-12, 1e-14);
    tg_release(var);
    tg_release(mean);
    tg_release(ones);
    tg_release(zeros);
    tg_release(rvar);
    tg_release(rmean);
    tg_release(x);
}
