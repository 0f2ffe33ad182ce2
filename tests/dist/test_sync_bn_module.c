/*
 * tests/dist/test_sync_bn_module.c - SyncBatchNorm as a layer
 * (tg_sync_batch_norm_new) and tg_sync_batch_norm_convert on 1 to 4 real
 * MPI processes.
 *
 * The layer: two training steps on each rank's shard of a full batch
 * (tg_dist_shard's split: uneven from 3 ranks on, and 2 rows on 4 ranks
 * leave two ranks empty in the second case) equal a BatchNorm1d layer on
 * the full batch: outputs, input gradients, the summed weight and bias
 * gradients, running statistics and num_batches_tracked, float64 within
 * 1e-12 (sums in another order: rounding only). The negative control:
 * BatchNorm1d layers on the shards fail the same check from 2 ranks on.
 * Eval mode: running statistics, no MPI call at all (counted through
 * MPI's profiling interface), and momentum None (cumulative) is
 * followed as in BatchNorm.
 *
 * The convert: every BatchNorm1d/2d of a tree (nested, and the root
 * itself) becomes a SyncBatchNorm holding the SAME tensors, settings and
 * mode; other layers stay; it prints as PyTorch's.
 */
#include "mpi_test.h"

#include <math.h>
#include <mpi.h>
#include <stdlib.h>
#include <string.h>

/* sum(y * g). New reference. */
static tg_tensor *weighted(const tg_tensor *y, const tg_tensor *g)
{
    tg_tensor *p = tg_mul(y, g);
    tg_tensor *s = tg_sum(p, NULL, 0, false);
    tg_release(p);
    return s;
}

static tg_module *bn_f64(const tg_batch_norm_config *c)
{
    tg_module *m = tg_batch_norm1d_new(3, c);
    tg_module_to_dtype(m, TG_FLOAT64);
    return m;
}

/* Two training steps of `layer` on this rank's rows and of a BatchNorm1d
 * on the full (N, 3) batches; the worst difference of everything. */
static double two_steps(tg_module *layer, int64_t N,
                        const tg_batch_norm_config *c)
{
    tg_module *ref = bn_f64(c);
    tg_generator *gen = tg_generator_new(5);
    double worst = 0;
    for (int step = 0; step < 2; step++) {
        tg_tensor *x0 = tg_randn_gen(gen, TG_SHAPE(N, 3), TG_FLOAT64);
        tg_tensor *X = tg_add_scalar(x0, 2.0);
        tg_tensor *G = tg_randn_gen(gen, TG_SHAPE(N, 3), TG_FLOAT64);
        tg_set_requires_grad(X, true);
        tg_tensor *x = tg_dist_shard(mt_pg, X);
        tg_tensor *xl = tg_clone(x), *xleaf = tg_detach(xl);
        tg_set_requires_grad(xleaf, true);
        tg_tensor *g = tg_dist_shard(mt_pg, G);
        tg_module_zero_grad(ref);
        tg_module_zero_grad(layer);
        tg_tensor *Y = tg_module_forward(ref, X), *L = weighted(Y, G);
        tg_tensor *y = tg_module_forward(layer, xleaf), *l = weighted(y, g);
        MT_CHECK(y && tg_backward(L) == 0 && tg_backward(l) == 0,
                 "step %d failed: %s", step, tg_last_error());
        tg_tensor *y_want = tg_dist_shard(mt_pg, Y);
        tg_tensor *dx_want = tg_dist_shard(mt_pg, X->grad);
        worst = fmax(worst, mt_max_abs_diff(y, y_want));
        worst = fmax(worst, mt_max_abs_diff(xleaf->grad, dx_want));
        static const char *const names[] = {"weight", "bias"};
        for (int k = 0; k < 2; k++) {
            tg_tensor *mine = tg_module_parameter(layer, names[k])->grad;
            tg_tensor *sum = tg_all_reduce(mt_pg, mine, TG_REDUCE_SUM);
            worst = fmax(worst, mt_max_abs_diff(
                                    sum, tg_module_parameter(ref, names[k])->grad));
            tg_release(sum);
        }
        static const char *const bufs[] = {"running_mean", "running_var"};
        for (int k = 0; k < 2; k++)
            worst = fmax(worst,
                         mt_max_abs_diff(tg_module_buffer(layer, bufs[k]),
                                         tg_module_buffer(ref, bufs[k])));
        int64_t nb = *(int64_t *)tg_data_i64(
            tg_module_buffer(layer, "num_batches_tracked"));
        MT_CHECK(nb == step + 1, "num_batches_tracked %lld after step %d",
                 (long long)nb, step);
        tg_release(dx_want), tg_release(y_want), tg_release(l);
        tg_release(y), tg_release(L), tg_release(Y), tg_release(g);
        tg_release(xleaf), tg_release(xl), tg_release(x), tg_release(G);
        tg_release(X), tg_release(x0);
    }
    tg_generator_free(gen);
    tg_module_free(ref);
    return worst;
}

static void layer_equals_batch_norm(void)
{
    tg_batch_norm_config cum = tg_batch_norm_config_defaults();
    cum.cumulative = true;
    const tg_batch_norm_config *configs[] = {NULL, &cum};
    for (int k = 0; k < 2; k++)
        for (int64_t N = 2; N <= 10; N += 8) { // 2 rows: empty ranks at W 4
            tg_module *s = tg_sync_batch_norm_new(mt_pg, 3, configs[k]);
            tg_module_to_dtype(s, TG_FLOAT64);
            double d = two_steps(s, N, configs[k]);
            MT_CHECK(d <= 1e-12, "config %d, N %lld: differs by %.3g", k,
                     (long long)N, d);
            tg_module_free(s);
        }
}

static void local_batch_norm_layer_differs(void)
{
    tg_module *local = bn_f64(NULL);
    double d = two_steps(local, 10, NULL);
    MT_CHECK(d > 1e-3, "local BatchNorm matched the full batch (%.3g)", d);
    tg_module_free(local);
}

static void eval_does_not_communicate(void)
{
    tg_module *s = tg_sync_batch_norm_new(mt_pg, 3, NULL);
    tg_module *b = tg_batch_norm1d_new(3, NULL);
    tg_module_to_dtype(s, TG_FLOAT64);
    tg_module_to_dtype(b, TG_FLOAT64);
    tg_tensor *rm = tg_module_buffer(s, "running_mean");
    tg_tensor *one = tg_full(TG_SHAPE(3), 0.5, TG_FLOAT64);
    tg_copy_(rm, one);
    tg_copy_(tg_module_buffer(b, "running_mean"), one);
    tg_module_train(s, false);
    tg_module_train(b, false);
    // a different number of rows on each rank: eval needs no agreement
    tg_tensor *x = tg_randn(TG_SHAPE(1 + mt_rank, 3), TG_FLOAT64);
    int before = mt_mpi_calls;
    tg_tensor *y = tg_module_forward(s, x);
    MT_CHECK(y && mt_mpi_calls == before, "%d MPI calls in eval",
             mt_mpi_calls - before);
    tg_tensor *want = tg_module_forward(b, x);
    MT_CHECK(mt_max_abs_diff(y, want) == 0, "eval differs from BatchNorm1d");
    // and training does communicate
    tg_module_train(s, true);
    tg_tensor *x2 = tg_randn(TG_SHAPE(4, 3), TG_FLOAT64);
    before = mt_mpi_calls;
    tg_tensor *yt = tg_module_forward(s, x2);
    MT_CHECK(yt && mt_mpi_calls > before, "no MPI call in training");
    tg_release(yt), tg_release(x2), tg_release(want), tg_release(y);
    tg_release(x), tg_release(one);
    tg_module_free(b);
    tg_module_free(s);
}

static bool type_is(const tg_module *m, const char *name)
{
    return m && strcmp(tg_module_get_type(m)->name, name) == 0;
}

static void convert_replaces_every_batch_norm(void)
{
    tg_batch_norm_config c = tg_batch_norm_config_defaults();
    c.eps = 1e-3;
    c.cumulative = true;
    tg_module *inner = TG_SEQUENTIAL(tg_batch_norm2d_new(4, &c));
    tg_module *net = TG_SEQUENTIAL(tg_linear_new(2, 4, true),
                                   tg_batch_norm1d_new(4, NULL),
                                   tg_tanh_new(), inner);
    tg_module *bn1 = tg_module_child_at(net, 1);
    tg_module_train(bn1, false);
    tg_tensor *w = tg_module_parameter(bn1, "weight");
    tg_tensor *rv = tg_module_buffer(tg_module_child_at(inner, 0),
                                     "running_var");
    int n = tg_sync_batch_norm_convert(&net, mt_pg);
    MT_CHECK(n == 2, "converted %d layers, not 2", n);
    tg_module *s1 = tg_module_child_at(net, 1);
    tg_module *s2 = tg_module_child_at(tg_module_child_at(net, 3), 0);
    MT_CHECK(type_is(tg_module_child_at(net, 0), "Linear") &&
                 type_is(s1, "SyncBatchNorm") &&
                 type_is(tg_module_child_at(net, 2), "Tanh") &&
                 type_is(s2, "SyncBatchNorm"),
             "wrong layers after the convert");
    MT_CHECK(tg_module_parameter(s1, "weight") == w &&
                 tg_module_buffer(s2, "running_var") == rv,
             "the tensors were not carried over");
    MT_CHECK(!tg_module_is_training(s1) && tg_module_is_training(s2),
             "the modes were not carried over");
    char *text = tg_module_format(s2);
    MT_CHECK(text && strcmp(text, "SyncBatchNorm(4, eps=0.001, momentum=None, "
                                  "affine=True, track_running_stats=True)") == 0,
             "printed %s", text ? text : "(null)");
    free(text);
    text = tg_module_format(s1);
    MT_CHECK(text && strcmp(text, "SyncBatchNorm(4, eps=1e-05, momentum=0.1, "
                                  "affine=True, track_running_stats=True)") == 0,
             "printed %s", text ? text : "(null)");
    free(text);
    // a second convert has nothing left to do; a root BatchNorm is replaced
    MT_CHECK(tg_sync_batch_norm_convert(&net, mt_pg) == 0, "second convert");
    tg_module_free(net);
    tg_module *root = tg_batch_norm1d_new(3, NULL);
    MT_CHECK(tg_sync_batch_norm_convert(&root, mt_pg) == 1 &&
                 type_is(root, "SyncBatchNorm"),
             "the root was not converted");
    tg_module_free(root);
}

int main(int argc, char **argv)
{
    static const mt_case cases[] = {
        {"SyncBatchNorm layer on the shards equals BatchNorm1d on the full batch (2 steps, momentum 0.1 and None, empty ranks; float64 1e-12)", layer_equals_batch_norm, 1},
        {"negative control: BatchNorm1d layers on the shards differ", local_batch_norm_layer_differs, 2},
        {"eval mode uses the running statistics and does not communicate", eval_does_not_communicate, 1},
        {"tg_sync_batch_norm_convert replaces every BatchNorm, keeping tensors, settings and mode", convert_replaces_every_batch_norm, 1},
    };
    return mt_main(argc, argv, cases, (int)(sizeof cases / sizeof *cases));
}
