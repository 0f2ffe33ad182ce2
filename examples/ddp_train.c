/*
 * examples/ddp_train.c - data-parallel training on several processes:
 *
 *     mpirun -n 4 ./build/examples/ddp_train [--epochs N] [--batch B] [--lr R]
 *
 * (as root add --allow-run-as-root; more processes than cores:
 * --oversubscribe). Every rank builds the same MLP (Linear -> Tanh ->
 * LayerNorm -> Linear) and draws the same mini-batches of three blobs;
 * each takes its shard of every batch (tg_dist_shard: uneven when B is
 * not a multiple of the number of ranks), backpropagates
 * loss_r = (sum of its rows' cross-entropies) / B, and the ranks add
 * their gradients (tg_dist_all_reduce_grads) before each Adam step. So
 * every rank makes the step one process would make on the whole batch;
 * rank 0 trains that one-process model too, on the full batches, and
 * prints both losses side by side, with the validation accuracy.
 *
 * What it is not: faster here. The batches are tiny, and the point is the
 * arithmetic, not the speed (docs/distributed.md).
 */
#include "tapegrad.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { CLASSES = 3, WIDTH = 32 };

static tg_module *mlp(void)
{
    tg_manual_seed(42);
    return TG_SEQUENTIAL(tg_linear_new(2, WIDTH, true), tg_tanh_new(),
                         tg_layer_norm_new(TG_SHAPE(WIDTH), 1e-5, true),
                         tg_linear_new(WIDTH, CLASSES, true));
}

/* (sum of the cross-entropies of the rows of x) / batch. New reference. */
static tg_tensor *loss_of(tg_module *m, const tg_tensor *x,
                          const tg_tensor *y, int64_t batch)
{
    tg_tensor *logits = tg_module_forward(m, x);
    tg_tensor *sum = tg_cross_entropy(logits, y, TG_REDUCTION_SUM);
    tg_tensor *loss = tg_mul_scalar(sum, 1.0 / (double)batch);
    tg_release(sum);
    tg_release(logits);
    return loss;
}

static double val_accuracy(tg_module *m, const tg_dataset *val)
{
    tg_no_grad_begin();
    tg_tensor *logits = tg_module_forward(m, val->x);
    double acc = tg_accuracy(logits, val->y);
    tg_release(logits);
    tg_no_grad_end();
    return acc;
}

int main(int argc, char **argv)
{
    if (tg_dist_init(&argc, &argv) != 0)
        return 1;
    int epochs = 20;
    int64_t batch = 30;
    double lr = 0.03;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (strcmp(argv[i], "--epochs") == 0)
            epochs = atoi(argv[i + 1]);
        else if (strcmp(argv[i], "--batch") == 0)
            batch = atoll(argv[i + 1]);
        else if (strcmp(argv[i], "--lr") == 0)
            lr = atof(argv[i + 1]);
    }
    tg_process_group *pg = tg_process_group_world();
    if (!pg)
        return 1;
    int rank = tg_process_group_rank(pg), size = tg_process_group_size(pg);

    // the same data, split and batches on every rank: one seed for all
    tg_dataset all = {0}, train = {0}, val = {0};
    tg_generator *g = tg_generator_new(7);
    tg_make_blobs(100, CLASSES, 1.0, g, &all);
    tg_dataset_split(&all, 0.2, g, &train, &val);
    tg_batches *batches = tg_batches_new(&train, batch, true, false, g);

    tg_module *m = mlp(), *single = rank == 0 ? mlp() : NULL;
    tg_dist_broadcast_module(pg, m, 0); // the same start, whatever the seeds
    tg_adam_config cfg = tg_adam_config_default(lr);
    tg_optimizer *opt = tg_adam_new(m, &cfg);
    tg_optimizer *opt1 = single ? tg_adam_new(single, &cfg) : NULL;

    int64_t start, count;
    tg_dist_shard_range(pg, batch, &start, &count);
    if (rank == 0)
        printf("%d processes, batches of %lld rows (rank 0 takes %lld)\n"
               "epoch  loss (%d ranks)  loss (1 process)  val acc\n",
               size, (long long)batch, (long long)count, size);
    double max_diff = 0;
    int status = 0;
    for (int e = 1; e <= epochs && status == 0; e++) {
        double sum = 0, sum1 = 0;
        int64_t nb = 0;
        tg_tensor *x, *y;
        while (status == 0 && tg_batches_next(batches, &x, &y)) {
            int64_t b = x->shape[0]; // the last batch may be shorter
            tg_tensor *xs = tg_dist_shard(pg, x), *ys = tg_dist_shard(pg, y);
            tg_optimizer_zero_grad(opt);
            tg_tensor *loss = loss_of(m, xs, ys, b);
            // the global loss: the ranks' parts added
            tg_tensor *total = tg_all_reduce(pg, loss, TG_REDUCE_SUM);
            if (!loss || !total || tg_backward(loss) != 0 ||
                tg_dist_all_reduce_grads(pg, m, TG_REDUCE_SUM) != 0 ||
                tg_optimizer_step(opt) != 0)
                status = 1;
            sum += total ? tg_item(total) : NAN;
            if (single && status == 0) {
                tg_optimizer_zero_grad(opt1);
                tg_tensor *l1 = loss_of(single, x, y, b);
                double v1 = tg_item(l1);
                if (tg_backward(l1) != 0 || tg_optimizer_step(opt1) != 0)
                    status = 1;
                sum1 += v1;
                max_diff = fmax(max_diff, fabs(v1 - tg_item(total)));
                tg_release(l1);
            }
            nb++;
            tg_release(total);
            tg_release(loss);
            tg_release(ys);
            tg_release(xs);
            tg_release(y);
            tg_release(x);
        }
        if (rank == 0 && (e == 1 || e % 10 == 0 || e == epochs))
            printf("%5d  %15.6f  %16.6f  %7.3f\n", e, sum / (double)nb,
                   sum1 / (double)nb, val_accuracy(m, &val));
    }
    if (rank == 0)
        printf("largest difference between the two losses: %.2g\n",
               max_diff);

    tg_optimizer_free(opt1);
    tg_optimizer_free(opt);
    tg_module_free(single);
    tg_module_free(m);
    tg_batches_free(batches);
    tg_generator_free(g);
    tg_dataset_free(&val);
    tg_dataset_free(&train);
    tg_dataset_free(&all);
    tg_process_group_free(pg);
    tg_dist_finalize();
    if (tg_live_tensors() != 0) {
        fprintf(stderr, "rank %d: ", rank);
        tg_print_live_tensors(stderr); // each one, with what made it
        status = 1;
    }
    return status;
}
