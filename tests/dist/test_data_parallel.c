/*
 * tests/dist/test_data_parallel.c - data-parallel SGD on 1 to 4 real MPI
 * processes equals single-process SGD on the full batch.
 *
 * The model has no BatchNorm (Linear -> Tanh -> LayerNorm -> Linear, in
 * float64), so each row's loss depends on that row alone and the only
 * coupling between ranks is the gradient sum. The batch of N = 10 rows is
 * split unevenly, one rank with no rows at all (3 and 4 ranks):
 *
 *     W = 1: 10    W = 2: 3 7    W = 3: 6 0 4    W = 4: 1 5 0 4
 *
 * Every rank starts from a model of its own seed; tg_dist_broadcast_module
 * makes rank 0's the common start. Each of 12 steps: loss_r = (sum of the
 * squared errors of r's rows) / N, backward, tg_dist_all_reduce_grads SUM,
 * an SGD step. Each rank also trains the reference, the same model on the
 * full batch in one process (loss = sum of squared errors / N), and
 * checks after every step:
 *   - the global loss (the sum of the loss_r) equals the reference's
 *     within 1e-12;
 *   - every parameter equals the reference's within 1e-12;
 *   - a hash of the parameters' bytes is the same on every rank (bitwise
 *     identical models).
 * Tolerance: the sums over the ranks add the rows' gradients in another
 * order than one process does, so the results differ by rounding (about
 * 1e-16 relative per step), far below 1e-12 and far above nothing.
 *
 * The same with BatchNorm in the model's third layer: tg_sync_batch_norm
 * on the shards against nn's BatchNorm1d on the full batch, checking the
 * running statistics too.
 *
 * Negative controls (they must detect a difference):
 *   - per-rank MEAN losses with gradients averaged over the ranks, on
 *     uneven shards without an empty rank: off by far more than 1e-12;
 *   - one rank's parameters changed in the last bit: the hash check sees it;
 *   - BatchNorm on each rank's shard, unsynchronised (shards of 2 rows or
 *     more, so that each can normalise): off by far more than 1e-12.
 */
#include "mpi_test.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

enum { N = 10, D = 4, H = 8, OUT = 3, STEPS = 12 };

/* A BatchNorm layer of this test's own around tg_sync_batch_norm (or,
 * for the negative control, plain tg_batch_norm on the rank's shard):
 * parameters weight and bias, buffers running_mean and running_var. */
typedef struct norm_layer {
    bool sync;
} norm_layer;

static tg_tensor *norm_forward(tg_module *m, const tg_tensor *x)
{
    const norm_layer *d = tg_module_data(m);
    tg_tensor *rm = tg_module_buffer(m, "running_mean");
    tg_tensor *rv = tg_module_buffer(m, "running_var");
    tg_tensor *w = tg_module_parameter(m, "weight");
    tg_tensor *b = tg_module_parameter(m, "bias");
    bool train = tg_module_is_training(m);
    return d->sync ? tg_sync_batch_norm(mt_pg, x, rm, rv, w, b, train, 0.1,
                                        1e-5)
                   : tg_batch_norm(x, rm, rv, w, b, train, 0.1, 1e-5);
}

static const tg_module_type norm_type = {"TestBatchNorm", norm_forward, NULL,
                                         sizeof(norm_layer)};

static tg_module *norm_new(bool sync)
{
    tg_module *m = tg_module_new(&norm_type);
    ((norm_layer *)tg_module_data(m))->sync = sync;
    tg_tensor *t[4] = {tg_ones(TG_SHAPE(H), TG_FLOAT32),
                       tg_zeros(TG_SHAPE(H), TG_FLOAT32),
                       tg_zeros(TG_SHAPE(H), TG_FLOAT32),
                       tg_ones(TG_SHAPE(H), TG_FLOAT32)};
    tg_module_add_parameter(m, "weight", t[0]);
    tg_module_add_parameter(m, "bias", t[1]);
    tg_module_add_buffer(m, "running_mean", t[2]);
    tg_module_add_buffer(m, "running_var", t[3]);
    for (int i = 0; i < 4; i++)
        tg_release(t[i]);
    return m;
}

/* Which normalisation the model has in its third layer. */
typedef enum norm_kind {
    LAYER_NORM,     // each row by itself: no coupling between ranks
    BATCH_NORM,     // nn's BatchNorm1d (the full-batch reference)
    SYNC_BATCH_NORM, // tg_sync_batch_norm
    LOCAL_BATCH_NORM, // tg_batch_norm on each rank's shard (wrong)
} norm_kind;

/* The model, float64, initialised from seed:
 * Linear -> Tanh -> norm -> Linear. */
static tg_module *model_with(uint64_t seed, norm_kind kind)
{
    tg_manual_seed(seed);
    tg_module *norm = kind == LAYER_NORM
                          ? tg_layer_norm_new(TG_SHAPE(H), 1e-5, true)
                      : kind == BATCH_NORM ? tg_batch_norm1d_new(H, NULL)
                                           : norm_new(kind == SYNC_BATCH_NORM);
    tg_module *m = TG_SEQUENTIAL(tg_linear_new(D, H, true), tg_tanh_new(),
                                 norm, tg_linear_new(H, OUT, true));
    tg_module_to_dtype(m, TG_FLOAT64);
    // the norm starts at weight 1, bias 0: make it non-trivial
    tg_generator *g = tg_generator_new(5);
    tg_no_grad_begin();
    tg_uniform_(tg_module_parameter(m, "2.weight"), 0.5, 1.5, g);
    tg_uniform_(tg_module_parameter(m, "2.bias"), -0.5, 0.5, g);
    tg_no_grad_end();
    tg_generator_free(g);
    return m;
}

static tg_module *model(uint64_t seed)
{
    return model_with(seed, LAYER_NORM);
}

/* The same data on every rank. x (N, D), y (N, OUT): new references. */
static void data(tg_tensor **x, tg_tensor **y)
{
    tg_generator *g = tg_generator_new(2024);
    *x = tg_randn_gen(g, TG_SHAPE(N, D), TG_FLOAT64);
    *y = tg_randn_gen(g, TG_SHAPE(N, OUT), TG_FLOAT64);
    tg_generator_free(g);
}

/* How many rows each rank takes, for W = 1..4 (see the header comment). */
static const int64_t with_empty[5][4] = {
    {0}, {10}, {3, 7}, {6, 0, 4}, {1, 5, 0, 4}};
static const int64_t without_empty[5][4] = {
    {0}, {10}, {3, 7}, {6, 1, 3}, {1, 5, 2, 2}};
static const int64_t two_rows_or_more[5][4] = {
    {0}, {10}, {3, 7}, {4, 3, 3}, {2, 3, 2, 3}};

/* This rank's rows of t by the table. New reference. */
static tg_tensor *my_rows(const tg_tensor *t, const int64_t counts[4])
{
    int64_t start = 0;
    for (int r = 0; r < mt_rank; r++)
        start += counts[r];
    return tg_narrow(t, 0, start, counts[mt_rank]);
}

/* sum((m(x) - y)^2) / divisor. New reference. */
static tg_tensor *loss_of(tg_module *m, const tg_tensor *x, const tg_tensor *y,
                          double divisor)
{
    tg_tensor *out = tg_module_forward(m, x);
    tg_tensor *sse = tg_mse_loss(out, y, TG_REDUCTION_SUM);
    tg_tensor *loss = tg_mul_scalar(sse, 1.0 / divisor);
    tg_release(sse);
    tg_release(out);
    return loss;
}

/* One SGD step of lr 0.1 on loss (which it releases); returns its value. */
static double step(tg_module *m, tg_optimizer *opt, tg_tensor *loss,
                   bool distributed, tg_reduce_op op)
{
    tg_optimizer_zero_grad(opt);
    double v = tg_item(loss);
    MT_CHECK(tg_backward(loss) == 0, "backward failed");
    tg_release(loss);
    if (distributed)
        MT_CHECK(tg_dist_all_reduce_grads(mt_pg, m, op) == 0,
                 "all_reduce_grads failed");
    MT_CHECK(tg_optimizer_step(opt) == 0, "step failed");
    return v;
}

/* max |a - b| over every parameter of two models of the same layout. */
static double params_diff(const tg_module *a, const tg_module *b)
{
    tg_named_tensor pa[16], pb[16];
    int n = tg_module_named_parameters(a, pa, 16);
    tg_module_named_parameters(b, pb, 16);
    double worst = 0;
    for (int i = 0; i < n; i++)
        worst = fmax(worst, mt_max_abs_diff(pa[i].tensor, pb[i].tensor));
    return worst;
}

/* FNV-1a over the bytes of every parameter, as a non-negative int64. */
static int64_t params_hash(const tg_module *m)
{
    tg_named_tensor p[16];
    int n = tg_module_named_parameters(m, p, 16);
    uint64_t h = 14695981039346656037u;
    for (int i = 0; i < n; i++) {
        const unsigned char *b = (const unsigned char *)tg_data_f64(p[i].tensor);
        for (size_t k = 0; k < (size_t)p[i].tensor->numel * sizeof(double); k++)
            h = (h ^ b[k]) * 1099511628211u;
    }
    return (int64_t)(h >> 1);
}

/* True when every rank's params_hash(m) is the same. */
static bool same_on_every_rank(const tg_module *m)
{
    tg_tensor *h = tg_full(TG_SHAPE(1), 0, TG_INT64);
    tg_data_i64(h)[0] = params_hash(m);
    tg_tensor *all = tg_all_gather(mt_pg, h);
    bool same = all != NULL;
    for (int r = 1; all && r < mt_size; r++)
        same = same && tg_data_i64(all)[r] == tg_data_i64(all)[0];
    tg_release(all);
    tg_release(h);
    return same;
}

/* Trains the distributed model and the reference side by side; returns
 * the largest difference seen (losses and parameters). With per_rank_mean,
 * the wrong recipe: loss_r = sse_r / |S_r|, gradients averaged. */
static double train_with(const int64_t counts[4], bool per_rank_mean,
                         bool check_hash, norm_kind kind, norm_kind ref_kind)
{
    tg_tensor *x, *y;
    data(&x, &y);
    tg_tensor *xr = my_rows(x, counts), *yr = my_rows(y, counts);
    tg_module *ref = model_with(1, ref_kind); // what rank 0 starts from
    tg_module *m = model_with(1 + (uint64_t)mt_rank * 7919, kind); // per rank
    MT_CHECK(tg_dist_broadcast_module(mt_pg, m, 0) == 0, "broadcast failed");
    MT_CHECK(params_diff(m, ref) == 0, "broadcast: not rank 0's model");
    tg_sgd_config cfg = {.lr = 0.1};
    tg_optimizer *opt = tg_sgd_new(m, &cfg), *ref_opt = tg_sgd_new(ref, &cfg);
    double worst = 0;
    for (int s = 0; s < STEPS; s++) {
        double div = per_rank_mean ? (double)counts[mt_rank] : N;
        double mine = step(m, opt, loss_of(m, xr, yr, div), true,
                           per_rank_mean ? TG_REDUCE_MEAN : TG_REDUCE_SUM);
        double want = step(ref, ref_opt, loss_of(ref, x, y, N), false,
                           TG_REDUCE_SUM);
        tg_tensor *l = tg_scalar(per_rank_mean ? mine * counts[mt_rank] / N
                                               : mine, TG_FLOAT64);
        tg_tensor *total = tg_all_reduce(mt_pg, l, TG_REDUCE_SUM);
        worst = fmax(worst, fabs(tg_item(total) - want));
        tg_release(total);
        tg_release(l);
        worst = fmax(worst, params_diff(m, ref));
        if (ref_kind == BATCH_NORM) // and the running statistics
            for (int k = 0; k < 2; k++) {
                const char *name = k ? "2.running_var" : "2.running_mean";
                worst = fmax(worst, mt_max_abs_diff(tg_module_buffer(m, name),
                                                    tg_module_buffer(ref, name)));
            }
        if (check_hash)
            MT_CHECK(same_on_every_rank(m),
                     "step %d: the ranks' parameters differ", s);
    }
    tg_optimizer_free(ref_opt);
    tg_optimizer_free(opt);
    tg_module_free(ref);
    tg_module_free(m);
    tg_release(yr);
    tg_release(xr);
    tg_release(y);
    tg_release(x);
    return worst;
}

static double train(const int64_t counts[4], bool per_rank_mean,
                    bool check_hash)
{
    return train_with(counts, per_rank_mean, check_hash, LAYER_NORM,
                      LAYER_NORM);
}

static void sync_batch_norm_equals_full_batch(void)
{
    if (mt_size > 4)
        return;
    double worst = train_with(with_empty[mt_size], false, true,
                              SYNC_BATCH_NORM, BATCH_NORM);
    MT_CHECK(worst <= 1e-12, "SyncBatchNorm training differs from full-batch "
             "BatchNorm training by %.3g", worst);
}

static void local_batch_norm_differs(void)
{
    if (mt_size > 4)
        return;
    double worst = train_with(two_rows_or_more[mt_size], false, false,
                              LOCAL_BATCH_NORM, BATCH_NORM);
    MT_CHECK(worst > 1e-6, "unsynchronised BatchNorm matched full-batch "
             "training (%.3g): the comparison cannot fail", worst);
}

static void equals_full_batch(void)
{
    if (mt_size > 4) {
        MT_CHECK(false, "the shard tables go up to 4 ranks");
        return;
    }
    double worst = train(with_empty[mt_size], false, true);
    MT_CHECK(worst <= 1e-12, "differs from full-batch training by %.3g",
             worst);
}

static void per_rank_means_differ(void)
{
    if (mt_size > 4)
        return;
    double worst = train(without_empty[mt_size], true, true);
    MT_CHECK(worst > 1e-6,
             "averaging per-rank means on uneven shards matched full-batch "
             "training (%.3g): the comparison cannot fail", worst);
}

static void hash_sees_one_bit(void)
{
    tg_module *m = model(1);
    MT_CHECK(same_on_every_rank(m), "the same seed, different hashes");
    if (mt_rank == mt_size - 1) {
        double *w = tg_data_f64(tg_module_parameter(m, "0.weight"));
        w[5] = nextafter(w[5], INFINITY);
    }
    MT_CHECK(!same_on_every_rank(m), "one changed bit was not seen");
    tg_module_free(m);
}

int main(int argc, char **argv)
{
    static const mt_case cases[] = {
        {"data-parallel SGD (uneven shards, an empty rank) equals full-batch SGD within 1e-12, bitwise equal ranks", equals_full_batch, 1},
        {"negative control: per-rank mean losses, gradients averaged, differ", per_rank_means_differ, 2},
        {"negative control: the hash check sees one changed bit", hash_sees_one_bit, 2},
        {"SyncBatchNorm: data-parallel SGD equals full-batch BatchNorm SGD (parameters, losses, running stats) within 1e-12", sync_batch_norm_equals_full_batch, 1},
        {"negative control: BatchNorm on each shard (no sync) differs", local_batch_norm_differs, 2},
    };
    return mt_main(argc, argv, cases, (int)(sizeof cases / sizeof *cases));
}
