/*
 * examples/ddp_train.c - data-parallel training on several processes, and
 * what BatchNorm needs there:
 *
 *     mpirun -n 4 ./build/examples/ddp_train [--epochs N] [--batch B]
 *         [--lr R] [--seed S] [--out DIR] [--no-plots]
 *
 * (as root add --allow-run-as-root; more processes than cores:
 * --oversubscribe). Every rank builds the same MLP (Linear -> norm ->
 * ReLU, twice, then Linear) in three variants and draws the same
 * mini-batches of B points of three spiral arms; each rank takes its
 * shard of every batch (tg_dist_shard: B / W rows, uneven when W does not
 * divide B), backpropagates loss_r = (sum of its rows' cross-entropies) / B
 * and the ranks add their gradients (tg_dist_all_reduce_grads) before each
 * SGD step (momentum 0.9). The variants differ in the norm layer:
 *
 *   local_bn   BatchNorm1d: each rank normalises with its own shard's
 *              statistics (B / W rows), and keeps running statistics of
 *              its own (rank 0's are evaluated);
 *   sync_bn    the same model passed through tg_sync_batch_norm_convert:
 *              statistics of the whole batch of B rows;
 *   layernorm  LayerNorm: per row, so nothing to synchronise.
 *
 * and rank 0 also trains `single`, the BatchNorm1d model on the full
 * batches in one process: what sync_bn must reproduce (up to rounding).
 * After each epoch rank 0 evaluates every model on the validation set in
 * eval mode (running statistics: no communication), prints the result,
 * and writes it to DIR/log.csv (variant,epoch,train_loss,val_loss,
 * val_acc) and the plots DIR/loss.png and DIR/accuracy.png (gnuplot, the
 * scripts scripts/plots/ddp_*.gp). DIR defaults to out/ddp_train.
 *
 * What the numbers show is in docs/distributed.md ("What the example
 * shows"), and tests/dist/check_ddp_train.py checks it on several seeds.
 * What it is not: faster here. The batches are tiny, and the point is the
 * arithmetic, not the speed (bench/ddp_bench.sh measures that).
 */
#include "tapegrad.h"

#include "demo_util.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CLASSES 3
#define POINTS_PER_CLASS 500
#define NOISE 0.03
#define VAL_FRACTION 0.2
#define WIDTH 64
#define MOMENTUM 0.9

enum { LOCAL_BN, SYNC_BN, LAYER_NORM, SINGLE, VARIANTS };
static const char *const variant_names[VARIANTS] = {"local_bn", "sync_bn",
                                                    "layernorm", "single"};

typedef struct options {
    long long epochs, batch, seed;
    double lr;
    const char *out;
    bool plots;
} options;

static void usage(FILE *f, const char *prog)
{
    fprintf(f,
            "usage: mpirun -n W %s [--epochs N] [--batch B] [--lr R] "
            "[--seed S] [--out DIR] [--no-plots]\n"
            "  B is the global batch (default 32: 8 rows per process at "
            "W = 4)\n",
            prog);
}

/* The same initial weights for every variant: one seed, one draw order.
 * 2 -> 64 -> 64 -> 3, Linear -> norm -> ReLU per hidden layer (the
 * shape of examples/train_mlp.c's net); sync_bn is converted later. */
static tg_module *mlp(int v, uint64_t seed)
{
    const int64_t hidden[2] = {WIDTH, WIDTH};
    tg_manual_seed(seed);
    return tg_mlp_new(2, hidden, 2, CLASSES,
                      v == LAYER_NORM ? TG_NORM_LAYER : TG_NORM_BATCH,
                      TG_ACT_RELU);
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

/* Mean loss and accuracy on d in eval mode (no communication: every norm
 * layer reads its running statistics). 0 or -1. */
static int evaluate(tg_module *m, const tg_dataset *d, double *loss,
                    double *acc)
{
    tg_module_train(m, false);
    tg_no_grad_begin();
    tg_tensor *logits = tg_module_forward(m, d->x);
    tg_tensor *l = tg_cross_entropy(logits, d->y, TG_REDUCTION_MEAN);
    *loss = l ? tg_item(l) : NAN;
    *acc = logits ? tg_accuracy(logits, d->y) : NAN;
    tg_release(l);
    tg_release(logits);
    tg_no_grad_end();
    tg_module_train(m, true);
    return l ? 0 : -1;
}

/* 0 when status is 0 on every rank, else -1 on every rank. Every rank
 * makes this one all-reduce whatever happened before, so a rank that
 * failed alone (rank 0 writing the output, say) stops the others with it
 * instead of leaving them waiting for it in their next collective. */
static int all_ranks_ok(tg_process_group *pg, int status)
{
    tg_tensor *mine = tg_scalar(status != 0, TG_INT64);
    tg_tensor *failed = tg_all_reduce(pg, mine, TG_REDUCE_SUM);
    int rc = failed && tg_item(failed) == 0 ? 0 : -1;
    tg_release(failed);
    tg_release(mine);
    return rc;
}

/* One SGD step of a data-parallel variant on this rank's shard of (x, y);
 * *total receives the global loss. 0 or -1. The collectives run on every
 * rank, failed or not (a NULL loss makes every rank's all-reduce fail). */
static int dist_step(tg_process_group *pg, tg_module *m, tg_optimizer *opt,
                     const tg_tensor *x, const tg_tensor *y, double *total)
{
    int64_t b = x->shape[0]; // the last batch may be shorter
    tg_tensor *xs = tg_dist_shard(pg, x), *ys = tg_dist_shard(pg, y);
    tg_optimizer_zero_grad(opt);
    tg_tensor *loss = loss_of(m, xs, ys, b);
    tg_tensor *sum = tg_all_reduce(pg, loss, TG_REDUCE_SUM);
    int rc = loss && sum && tg_backward(loss) == 0 ? 0 : -1;
    rc = all_ranks_ok(pg, rc);
    if (rc == 0)
        rc = tg_dist_all_reduce_grads(pg, m, TG_REDUCE_SUM);
    if (rc == 0)
        rc = tg_optimizer_step(opt);
    *total = sum ? tg_item(sum) : NAN;
    tg_release(sum);
    tg_release(loss);
    tg_release(ys);
    tg_release(xs);
    return rc;
}

static int single_step(tg_module *m, tg_optimizer *opt, const tg_tensor *x,
                       const tg_tensor *y, double *total)
{
    tg_optimizer_zero_grad(opt);
    tg_tensor *loss = loss_of(m, x, y, x->shape[0]);
    int rc = loss && tg_backward(loss) == 0 && tg_optimizer_step(opt) == 0
                 ? 0
                 : -1;
    *total = loss ? tg_item(loss) : NAN;
    tg_release(loss);
    return rc;
}

static int parse(int argc, char **argv, options *o)
{
    static const char *const names[] = {"--epochs", "--batch", "--lr",
                                        "--seed",   "--out",   NULL};
    int i = 0, k;
    const char *v;
    while ((k = demo_next_option(argc, argv, &i, names, &v, &o->plots)) >=
           0) {
        bool ok = k == 0   ? demo_parse_int(v, 1, 10000, &o->epochs)
                  : k == 1 ? demo_parse_int(v, 2, 1200, &o->batch)
                  : k == 2 ? demo_parse_positive(v, &o->lr)
                  : k == 3 ? demo_parse_int(v, 0, 1000000, &o->seed)
                           : (o->out = v) != NULL;
        if (!ok) {
            fprintf(stderr, "%s: cannot use \"%s\"\n", names[k], v);
            return -1;
        }
    }
    return k == DEMO_OPT_END ? 0 : k == DEMO_OPT_HELP ? 1 : -1;
}

static void plot(const options *o, int world)
{
    char subtitle[128];
    snprintf(subtitle, sizeof subtitle,
             "%d processes, global batch %lld (%lld rows per process), "
             "seed %lld",
             world, o->batch, o->batch / world, o->seed);
    static const char *const scripts[] = {"ddp_loss.gp", "ddp_accuracy.gp"};
    const char *dir = demo_plots_dir();
    if (!demo_have_gnuplot() || !demo_scripts_readable(dir, scripts, 2))
        return;
    for (int k = 0; k < 2; k++)
        demo_run_gnuplot(dir, scripts[k], o->out, subtitle, NULL, NULL);
}

int main(int argc, char **argv)
{
    if (tg_dist_init(&argc, &argv) != 0)
        return 1;
    options o = {20, 32, 0, 0.03, "out/ddp_train", true};
    int parsed = parse(argc, argv, &o);
    if (parsed != 0) {
        tg_dist_finalize();
        return demo_usage_exit(parsed, usage, argv[0]);
    }
    tg_process_group *pg = tg_process_group_world();
    if (!pg)
        return 1;
    int rank = tg_process_group_rank(pg), size = tg_process_group_size(pg);

    // the same data, split and batches on every rank: one seed for all
    tg_dataset all = {0}, train = {0}, val = {0};
    tg_generator *g = tg_generator_new((uint64_t)o.seed);
    tg_make_spirals(POINTS_PER_CLASS, CLASSES, NOISE, g, &all);
    tg_dataset_split(&all, VAL_FRACTION, g, &train, &val);
    tg_batches *batches = tg_batches_new(&train, o.batch, true, false, g);

    tg_module *m[VARIANTS] = {0};
    tg_optimizer *opt[VARIANTS] = {0};
    tg_sgd_config sgd = {.lr = o.lr, .momentum = MOMENTUM};
    int status = 0;
    for (int v = 0; v < VARIANTS; v++) {
        if (v == SINGLE && rank != 0)
            continue;
        m[v] = mlp(v, (uint64_t)o.seed);
        if (v == SYNC_BN && tg_sync_batch_norm_convert(&m[v], pg) != 2)
            status = 1;
        if (v != SINGLE && tg_dist_broadcast_module(pg, m[v], 0) != 0)
            status = 1;
        opt[v] = tg_sgd_new(m[v], &sgd);
        if (!opt[v])
            status = 1;
    }
    // (epochs, VARIANTS, 3): train loss, val loss, val accuracy; written
    // at the end, one variant after the other (gnuplot draws a line
    // through consecutive rows)
    double *log = calloc((size_t)o.epochs * VARIANTS * 3, sizeof *log);
    if (!log)
        status = 1;
    if (rank == 0 && status == 0) {
        if (demo_make_dirs(o.out) != 0)
            status = 1;
        else
            printf("%d processes, global batch %lld (rank 0 takes %lld "
                   "rows)\nepoch  variant    train loss  val loss  val acc\n",
                   size, o.batch, o.batch / size + (o.batch % size > 0));
    }
    status = all_ranks_ok(pg, status);
    for (long long e = 1; e <= o.epochs && status == 0; e++) {
        double sum[VARIANTS] = {0};
        int64_t nb = 0;
        tg_tensor *x, *y;
        while (status == 0 && tg_batches_next(batches, &x, &y)) {
            for (int v = 0; v < VARIANTS && status == 0; v++) {
                double l = 0;
                if (v != SINGLE)
                    status = -dist_step(pg, m[v], opt[v], x, y, &l);
                else if (m[v])
                    status = -single_step(m[v], opt[v], x, y, &l);
                sum[v] += l;
            }
            status = all_ranks_ok(pg, status); // rank 0's single step too
            nb++;
            tg_release(y);
            tg_release(x);
        }
        for (int v = 0; v < VARIANTS && rank == 0 && status == 0; v++) {
            double vl, va;
            status = -evaluate(m[v], &val, &vl, &va);
            double *at = log + ((e - 1) * VARIANTS + v) * 3;
            at[0] = sum[v] / (double)nb, at[1] = vl, at[2] = va;
            if (e == 1 || e % 5 == 0 || e == o.epochs)
                printf("%5lld  %-9s  %10.5f  %8.5f  %7.4f\n", e,
                       variant_names[v], sum[v] / (double)nb, vl, va);
        }
        status = all_ranks_ok(pg, status); // rank 0 evaluates alone
    }
    FILE *csv = rank == 0 && status == 0 ? demo_open_out(o.out, "log.csv")
                                         : NULL;
    if (rank == 0 && status == 0 && !csv)
        status = 1;
    if (csv) {
        fprintf(csv, "variant,epoch,train_loss,val_loss,val_acc\n");
        for (int v = 0; v < VARIANTS; v++)
            for (long long e = 1; e <= o.epochs; e++) {
                const double *at = log + ((e - 1) * VARIANTS + v) * 3;
                fprintf(csv, "%s,%lld,%.9g,%.9g,%.9g\n", variant_names[v], e,
                        at[0], at[1], at[2]);
            }
        if (fclose(csv) != 0)
            status = 1;
    }
    free(log);
    if (rank == 0 && status == 0 && o.plots)
        plot(&o, size);
    for (int v = 0; v < VARIANTS; v++) {
        tg_optimizer_free(opt[v]);
        tg_module_free(m[v]);
    }
    tg_batches_free(batches);
    tg_generator_free(g);
    tg_dataset_free(&val);
    tg_dataset_free(&train);
    tg_dataset_free(&all);
    tg_process_group_free(pg);
    tg_dist_finalize();
    return demo_exit_status(status);
}
