/*
 * bench/tg_bench.c - tapegrad's side of the benchmarks: one persistent
 * process that sets up a workload, times it on request and writes its
 * results for the correctness check.
 *
 * It speaks a line protocol on stdin/stdout, the same as
 * bench/torch_bench.py, so that bench/run.py can alternate the contenders
 * sample by sample (docs/performance.md explains the method):
 *
 *   setup WORKLOAD THREADS SIZE MIN_SECONDS -> "ok ITERS COLD_FAULTS"
 *       | "unsupported": builds the inputs (SIZE "full": the benchmark's
 *       sizes; "small": a few elements, for the smoke test), sets the
 *       thread count, runs one iteration alone (COLD_FAULTS: the minor
 *       page faults it took, first touch included) and chooses how many
 *       iterations make one sample last MIN_SECONDS (the warm-up).
 *   run                 -> "WALL CPU FAULTS": wall and process CPU seconds
 *                          per unit (one op for tape_op_*, one workload
 *                          iteration otherwise), and minor page faults per
 *                          iteration, over ITERS
 *   calib THREADS       -> "WALL CPU": a fixed integer loop run by THREADS
 *                          threads at once (the same work on each), its
 *                          wall and CPU seconds: when the threads do not
 *                          each get a core, CPU / wall falls below THREADS
 *   check DIR           -> "ok": writes the inputs and results of one fresh
 *                          iteration as DIR/NAME.npy for the verifier
 *   mem                 -> "saved=B peak=B": bytes the graph keeps for
 *                          backward (normalisation rows) and the peak of a
 *                          training step (MLP rows); -1 where not measured
 *   quit
 *
 * Errors are reported as one line "error MESSAGE". This is not a test and
 * not a library: it measures, and the smoke test (bench/smoke_test.py)
 * only checks that every workload runs and answers.
 */
#include "tapegrad.h"

#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#ifdef _OPENMP
#include <omp.h>
#endif

/* Everything a workload holds between setup and the next setup. */
typedef struct bench {
    const struct workload *w;
    bool small;
    int threads;
    long iters;
    int64_t M, N;             // LN/BN1d rows and features; matmul n = M
    tg_tensor *x, *w_, *b, *dy, *rm, *rv; // inputs; w_ is the weight
    tg_tensor *a2, *b2;       // matmul and tape operands
    tg_module *mlp;
    tg_optimizer *opt;
    tg_tensor *mx, *my;       // MLP batch and labels
    float *src[2], *dst[2];   // copy buffers: one pair, two for copy_ws
    size_t copy_floats;
    int copy_pairs;
    int tape_chain;           // ops per unit of tape_op_bwd
    /* The sizes of a scaled workload, NAME@PARAM (bench/run.py --scaling):
     * ln_fwd_bwd@MxN, bn1d_fwd_bwd@MxN, mlp_medium_step@BATCH; 0 for the
     * default sizes. */
    int64_t scale_m, scale_n, scale_batch;
} bench;

typedef struct workload {
    const char *name;
    int (*setup)(bench *b);
    int (*iter)(bench *b);               // one iteration; 0 or -1
    int (*check)(bench *b, const char *dir);
    int units;                           // ops per iteration (tape rows)
} workload;

/* ------------------------------------------------------------- helpers */

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static double cpu_now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static long minor_faults(void)
{
    struct rusage r;
    getrusage(RUSAGE_SELF, &r);
    return r.ru_minflt;
}

static int64_t nbytes(const tg_tensor *t)
{
    return t ? t->numel * (int64_t)tg_dtype_size(t->dtype) : 0;
}

static tg_tensor *randn_grad(const int64_t *shape, int ndim, bool grad)
{
    tg_tensor *t = tg_randn(shape, ndim, TG_FLOAT32);
    if (t && grad)
        tg_set_requires_grad(t, true);
    return t;
}

static int save(const char *dir, const char *name, const tg_tensor *t)
{
    char path[8192];
    if (snprintf(path, sizeof path, "%s/%s.npy", dir, name) >=
        (int)sizeof path)
        return -1;
    return t && tg_save_npy(path, t) == 0 ? 0 : -1;
}

static void clear_grads(bench *b)
{
    tg_clear_grad(b->x);
    tg_clear_grad(b->w_);
    tg_clear_grad(b->b);
    tg_clear_grad(b->a2);
    tg_clear_grad(b->b2);
}

static void teardown(bench *b)
{
    tg_release(b->x); tg_release(b->w_); tg_release(b->b);
    tg_release(b->dy); tg_release(b->rm); tg_release(b->rv);
    tg_release(b->a2); tg_release(b->b2);
    tg_release(b->mx); tg_release(b->my);
    tg_optimizer_free(b->opt);
    tg_module_free(b->mlp);
    for (int k = 0; k < 2; k++) {
        free(b->src[k]);
        free(b->dst[k]);
    }
    /* No workload inherits the blocks the previous one freed: each pays
     * its own first touch, in its own warm-up. */
    tg_empty_cache();
    int threads = b->threads;
    memset(b, 0, sizeof *b);
    b->threads = threads;
}

/* --------------------------------------------------- LayerNorm, BatchNorm */

static bool is_ln(const bench *b) { return strncmp(b->w->name, "ln", 2) == 0; }
static bool is_bn2d(const bench *b) { return strncmp(b->w->name, "bn2d", 4) == 0; }
static bool is_composed(const bench *b) { return strstr(b->w->name, "composed") != NULL; }
static bool has_bwd(const bench *b) { return strstr(b->w->name, "bwd") != NULL; }

/* x (M, N) for LayerNorm and BatchNorm1d ((4096, 768); ln_small_fwd_bwd:
 * (64, 768)), (32, 64, 32, 32) for BatchNorm2d;
 * weight, bias, a fixed dy, and running statistics for BatchNorm. */
static int setup_norm(bench *b)
{
    bool grad = has_bwd(b);
    tg_manual_seed(0);
    int64_t C;
    if (is_bn2d(b)) {
        int64_t s[4] = {32, 64, 32, 32};
        if (b->small) {
            s[0] = 3; s[1] = 5; s[2] = 4; s[3] = 3;
        }
        b->x = randn_grad(s, 4, grad);
        b->dy = tg_randn(s, 4, TG_FLOAT32);
        C = s[1];
    } else {
        bool few_rows = strcmp(b->w->name, "ln_small_fwd_bwd") == 0;
        b->M = b->small ? (few_rows ? 5 : 37) : (few_rows ? 64 : 4096);
        b->N = b->small ? 19 : 768;
        if (b->scale_m > 0) {
            b->M = b->scale_m;
            b->N = b->scale_n;
        }
        b->x = randn_grad(TG_SHAPE(b->M, b->N), grad);
        b->dy = tg_randn(TG_SHAPE(b->M, b->N), TG_FLOAT32);
        C = b->N;
    }
    b->w_ = randn_grad(TG_SHAPE(C), grad);
    b->b = randn_grad(TG_SHAPE(C), grad);
    if (!is_ln(b)) {
        b->rm = tg_zeros(TG_SHAPE(C), TG_FLOAT32);
        b->rv = tg_ones(TG_SHAPE(C), TG_FLOAT32);
    }
    return b->x && b->dy && b->w_ && b->b && (is_ln(b) || (b->rm && b->rv))
               ? 0 : -1;
}

static tg_tensor *norm_forward(bench *b)
{
    if (is_ln(b)) {
        int64_t n = b->x->shape[b->x->ndim - 1];
        return is_composed(b)
                   ? tg_layer_norm_composed(b->x, &n, 1, b->w_, b->b, 1e-5)
                   : tg_layer_norm(b->x, &n, 1, b->w_, b->b, 1e-5);
    }
    tg_batch_norm_options o = tg_batch_norm_defaults();
    return is_composed(b)
               ? tg_batch_norm_composed(b->x, b->rm, b->rv, b->w_, b->b, &o)
               : tg_batch_norm(b->x, b->rm, b->rv, b->w_, b->b, true,
                               o.momentum, o.eps);
}

/* One forward, and the backward of the fixed dy. The gradients are set to
 * none first, as torch's benchmark does (x.grad = None), so that no
 * iteration pays for accumulating into the previous one's. */
static int iter_norm(bench *b)
{
    clear_grads(b);
    tg_tensor *y = norm_forward(b);
    if (!y)
        return -1;
    int rc = 0;
    if (has_bwd(b)) {
        tg_backward_options o = {.grad = b->dy};
        rc = tg_backward_ex(y, &o);
    }
    tg_release(y);
    return rc;
}

static int check_norm(bench *b, const char *dir)
{
    int rc = save(dir, "x", b->x) | save(dir, "weight", b->w_) |
             save(dir, "bias", b->b);
    if (b->rm)
        rc |= save(dir, "running_mean0", b->rm) |
              save(dir, "running_var0", b->rv);
    clear_grads(b);
    tg_tensor *y = norm_forward(b);
    rc |= save(dir, "y", y);
    if (y && has_bwd(b)) {
        tg_backward_options o = {.grad = b->dy};
        rc |= tg_backward_ex(y, &o);
        rc |= save(dir, "dy", b->dy) | save(dir, "dx", b->x->grad) |
              save(dir, "dweight", b->w_->grad) |
              save(dir, "dbias", b->b->grad);
    }
    if (b->rm)
        rc |= save(dir, "running_mean1", b->rm) |
              save(dir, "running_var1", b->rv);
    tg_release(y);
    clear_grads(b);
    return rc ? -1 : 0;
}

/* Bytes the graph keeps for backward: what is alive after the forward
 * that was not before, less the output itself (the inputs, weight and
 * bias were alive before). */
static int64_t saved_norm(bench *b)
{
    clear_grads(b);
    int64_t before = tg_live_bytes();
    tg_tensor *y = norm_forward(b);
    int64_t saved = tg_live_bytes() - before - nbytes(y);
    tg_backward_options o = {.grad = b->dy};
    if (!y || tg_backward_ex(y, &o) != 0)
        saved = -1;
    tg_release(y);
    clear_grads(b);
    return saved;
}

/* ------------------------------------------------------------- matmul */

static int setup_matmul(bench *b)
{
    if (strcmp(b->w->name, "matmul_portable") == 0)
        tg_set_kernels(TG_KERNELS_PORTABLE);
    tg_manual_seed(0);
    b->M = b->small ? 33 : 1024;
    b->a2 = tg_randn(TG_SHAPE(b->M, b->M), TG_FLOAT32);
    b->b2 = tg_randn(TG_SHAPE(b->M, b->M), TG_FLOAT32);
    return b->a2 && b->b2 ? 0 : -1;
}

static int iter_matmul(bench *b)
{
    tg_tensor *c = tg_matmul(b->a2, b->b2);
    tg_release(c);
    return c ? 0 : -1;
}

static int check_matmul(bench *b, const char *dir)
{
    tg_tensor *c = tg_matmul(b->a2, b->b2);
    int rc = save(dir, "a", b->a2) | save(dir, "b", b->b2) | save(dir, "c", c);
    tg_release(c);
    return rc ? -1 : 0;
}

/* ------------------------------------------------------------------ MLP */

/* Tiny: batch 32, 2 -> 32 -> 32 -> 3 with LayerNorm; medium: batch 256,
 * 2 -> 128 -> 128 -> 3 with BatchNorm1d; ReLU, cross-entropy, SGD lr 0.1. */
static int setup_mlp(bench *b)
{
    bool tiny = strcmp(b->w->name, "mlp_tiny_step") == 0;
    int64_t width = tiny ? 32 : 128, batch = tiny ? 32 : 256;
    if (b->scale_batch > 0)
        batch = b->scale_batch;
    /* The default build's kernels (never OpenBLAS), as a user of the
     * Quick start's build runs them; a bench build with OpenBLAS would
     * otherwise time its sgemm in both contenders. */
    tg_set_kernels(TG_KERNELS_PORTABLE);
    tg_manual_seed(0);
    b->mlp = tg_mlp_new(2, TG_SHAPE(width, width), 3,
                        tiny ? TG_NORM_LAYER : TG_NORM_BATCH, TG_ACT_RELU);
    tg_sgd_config c = {.lr = 0.1};
    b->opt = b->mlp ? tg_sgd_new(b->mlp, &c) : NULL;
    b->mx = tg_randn(TG_SHAPE(batch, 2), TG_FLOAT32);
    b->my = tg_randint(0, 3, TG_SHAPE(batch));
    return b->opt && b->mx && b->my ? 0 : -1;
}

/* zero_grad, forward, loss, backward, step; *loss_out keeps the loss. */
static int step_mlp(bench *b, tg_tensor **loss_out)
{
    tg_optimizer_zero_grad(b->opt);
    tg_tensor *logits = tg_module_forward(b->mlp, b->mx);
    tg_tensor *loss = tg_cross_entropy(logits, b->my, TG_REDUCTION_MEAN);
    int rc = loss && tg_backward(loss) == 0 && tg_optimizer_step(b->opt) == 0
                 ? 0 : -1;
    tg_release(logits);
    if (loss_out)
        *loss_out = loss;
    else
        tg_release(loss);
    return rc;
}

static int iter_mlp(bench *b) { return step_mlp(b, NULL); }

static int save_params(bench *b, const char *dir, const char *prefix)
{
    tg_named_tensor p[64];
    int n = tg_module_named_parameters(b->mlp, p, 64);
    int rc = n < 0 || n > 64 ? -1 : 0;
    for (int i = 0; i < n && i < 64 && rc == 0; i++) {
        char name[TG_NAME_MAX + 16];
        rc = snprintf(name, sizeof name, "%s%s", prefix, p[i].name) <
                     (int)sizeof name
                 ? save(dir, name, p[i].tensor) : -1;
    }
    tg_named_tensor buf[64];
    int nb = tg_module_named_buffers(b->mlp, buf, 64);
    for (int i = 0; i < nb && i < 64 && rc == 0; i++) {
        char name[TG_NAME_MAX + 16];
        rc = snprintf(name, sizeof name, "%s%s", prefix, buf[i].name) <
                     (int)sizeof name
                 ? save(dir, name, buf[i].tensor) : -1;
    }
    return rc;
}

/* The parameters and buffers before and after one step, the batch and
 * the loss: the verifier loads the first set into its own model. */
static int check_mlp(bench *b, const char *dir)
{
    int rc = save_params(b, dir, "before.") | save(dir, "x", b->mx) |
             save(dir, "labels", b->my);
    tg_tensor *loss = NULL;
    rc |= step_mlp(b, &loss);
    rc |= save(dir, "loss", loss) | save_params(b, dir, "after.");
    tg_release(loss);
    return rc ? -1 : 0;
}

/* The peak of tensor storage during one step, above what was live
 * before it (torch.cuda.max_memory_allocated's meaning, on the CPU). */
static int64_t peak_mlp(bench *b)
{
    int64_t before = tg_live_bytes();
    tg_reset_peak_bytes();
    if (step_mlp(b, NULL) != 0)
        return -1;
    return tg_peak_bytes() - before;
}

/* ------------------------------------------------------- tape overhead */

/* Two (4,) tensors requiring grad. tape_op_fwd: one unit is one recorded
 * tg_add and the release of its result (which drops its node).
 * tape_op_bwd: a chain h = h + b of tape_chain adds, summed, and the
 * backward through it; one unit is one add, forward and backward. */
static int setup_tape(bench *b)
{
    tg_manual_seed(0);
    b->a2 = randn_grad(TG_SHAPE(4), true);
    b->b2 = randn_grad(TG_SHAPE(4), true);
    b->tape_chain = 100;
    return b->a2 && b->b2 ? 0 : -1;
}

static int iter_tape_fwd(bench *b)
{
    tg_tensor *y = tg_add(b->a2, b->b2);
    tg_release(y);
    return y ? 0 : -1;
}

static tg_tensor *tape_chain_loss(bench *b)
{
    tg_tensor *h = tg_retain(b->a2);
    for (int i = 0; i < b->tape_chain && h; i++) {
        tg_tensor *next = tg_add(h, b->b2);
        tg_release(h);
        h = next;
    }
    tg_tensor *loss = tg_sum(h, NULL, 0, false);
    tg_release(h);
    return loss;
}

static int iter_tape_bwd(bench *b)
{
    clear_grads(b);
    tg_tensor *loss = tape_chain_loss(b);
    int rc = loss && tg_backward(loss) == 0 ? 0 : -1;
    tg_release(loss);
    return rc;
}

static int check_tape(bench *b, const char *dir)
{
    clear_grads(b);
    bool bwd = strcmp(b->w->name, "tape_op_bwd") == 0;
    tg_tensor *y = bwd ? tape_chain_loss(b) : tg_add(b->a2, b->b2);
    int rc = save(dir, "a", b->a2) | save(dir, "b", b->b2) | save(dir, "y", y);
    if (bwd)
        rc |= (y ? tg_backward(y) : -1) | save(dir, "da", b->a2->grad) |
              save(dir, "db", b->b2->grad);
    tg_release(y);
    clear_grads(b);
    return rc ? -1 : 0;
}

/* ---------------------------------------------------------------- copy */

/* memcpy of a buffer of the LayerNorm workload's size (4096 x 768
 * float32); with several threads each copies its own contiguous part.
 * copy_ws copies two such pairs, x -> y and dy -> dx: the four buffers
 * LayerNorm fwd+bwd streams, 50 MB, more than a 32 MB L3 cache holds,
 * where copy's two (25 MB) may stay in it. */
static int setup_copy(bench *b)
{
    b->copy_floats = b->small ? 1000 : (size_t)4096 * 768;
    b->copy_pairs = strcmp(b->w->name, "copy_ws") == 0 ? 2 : 1;
    for (int k = 0; k < b->copy_pairs; k++) {
        b->src[k] = malloc(b->copy_floats * sizeof(float));
        b->dst[k] = malloc(b->copy_floats * sizeof(float));
        if (!b->src[k] || !b->dst[k])
            return -1;
        for (size_t i = 0; i < b->copy_floats; i++) {
            b->src[k][i] = (float)((i + k) % 1000);
            b->dst[k][i] = 0.0f; // touch every page before timing
        }
    }
    return 0;
}

static int iter_copy(bench *b)
{
    int parts = b->threads;
    size_t n = b->copy_floats;
    for (int k = 0; k < b->copy_pairs; k++) {
        float *src = b->src[k], *dst = b->dst[k];
#ifdef _OPENMP
#pragma omp parallel for num_threads(parts) schedule(static)
#endif
        for (int p = 0; p < parts; p++) {
            size_t lo = n * (size_t)p / (size_t)parts;
            size_t hi = n * (size_t)(p + 1) / (size_t)parts;
            memcpy(dst + lo, src + lo, (hi - lo) * sizeof(float));
        }
    }
    return 0;
}

static int check_copy(bench *b, const char *dir)
{
    (void)dir;
    size_t bytes = b->copy_floats * sizeof(float);
    for (int k = 0; k < b->copy_pairs; k++)
        memset(b->dst[k], 0, bytes);
    iter_copy(b);
    for (int k = 0; k < b->copy_pairs; k++)
        if (memcmp(b->src[k], b->dst[k], bytes) != 0)
            return -1;
    return 0;
}

/* ------------------------------------------------------------- Conv2d */

/* A (64, 16, 8, 8) batch through a 16 -> 16 3x3 convolution with padding
 * 1, forward and the backward of a fixed dy: gradients for x, the weight
 * and the bias. */
static const tg_conv2d_options conv_opts = {.padding = {1, 1}};

static int setup_conv(bench *b)
{
    tg_set_kernels(TG_KERNELS_PORTABLE); // the default build's, as the MLPs
    tg_manual_seed(0);
    int64_t n = b->small ? 2 : 64, c = b->small ? 3 : 16;
    b->x = randn_grad(TG_SHAPE(n, c, 8, 8), true);
    b->w_ = randn_grad(TG_SHAPE(c, c, 3, 3), true);
    b->b = randn_grad(TG_SHAPE(c), true);
    b->dy = randn_grad(TG_SHAPE(n, c, 8, 8), false);
    return b->x && b->w_ && b->b && b->dy ? 0 : -1;
}

static int iter_conv(bench *b)
{
    clear_grads(b);
    tg_tensor *y = tg_conv2d(b->x, b->w_, b->b, &conv_opts);
    if (!y)
        return -1;
    tg_backward_options o = {.grad = b->dy};
    int rc = tg_backward_ex(y, &o);
    tg_release(y);
    return rc;
}

static int check_conv(bench *b, const char *dir)
{
    clear_grads(b);
    tg_tensor *y = tg_conv2d(b->x, b->w_, b->b, &conv_opts);
    tg_backward_options o = {.grad = b->dy};
    int rc = !y || tg_backward_ex(y, &o) != 0 ? -1 : 0;
    if (rc == 0)
        rc = save(dir, "x", b->x) | save(dir, "weight", b->w_) |
             save(dir, "bias", b->b) | save(dir, "dy", b->dy) |
             save(dir, "y", y) | save(dir, "dx", b->x->grad) |
             save(dir, "dweight", b->w_->grad) |
             save(dir, "dbias", b->b->grad);
    tg_release(y);
    return rc ? -1 : 0;
}

/* ------------------------------------------------------------ registry */

static const workload workloads[] = {
    {"ln_fwd", setup_norm, iter_norm, check_norm, 1},
    {"ln_fwd_bwd", setup_norm, iter_norm, check_norm, 1},
    {"ln_small_fwd_bwd", setup_norm, iter_norm, check_norm, 1},
    {"ln_composed_fwd_bwd", setup_norm, iter_norm, check_norm, 1},
    {"bn1d_fwd_bwd", setup_norm, iter_norm, check_norm, 1},
    {"bn1d_composed_fwd_bwd", setup_norm, iter_norm, check_norm, 1},
    {"bn2d_fwd_bwd", setup_norm, iter_norm, check_norm, 1},
    {"matmul", setup_matmul, iter_matmul, check_matmul, 1},
    {"matmul_portable", setup_matmul, iter_matmul, check_matmul, 1},
    {"mlp_tiny_step", setup_mlp, iter_mlp, check_mlp, 1},
    {"mlp_medium_step", setup_mlp, iter_mlp, check_mlp, 1},
    {"tape_op_fwd", setup_tape, iter_tape_fwd, check_tape, 1},
    {"tape_op_bwd", setup_tape, iter_tape_bwd, check_tape, 100},
    {"copy", setup_copy, iter_copy, check_copy, 1},
    {"copy_ws", setup_copy, iter_copy, check_copy, 1},
    {"conv_fwd_bwd", setup_conv, iter_conv, check_conv, 1},
};
enum { NWORKLOADS = sizeof workloads / sizeof *workloads };

/* One sample: wall and CPU seconds and minor page faults of n
 * iterations; wall is -1 when one fails. */
typedef struct sample {
    double wall, cpu;
    long faults;
} sample;

static sample time_iters(bench *b, long n)
{
    sample s = {-1, -1, 0};
    long f0 = minor_faults();
    double c0 = cpu_now(), t0 = now();
    for (long i = 0; i < n; i++)
        if (b->w->iter(b) != 0)
            return s;
    s.wall = now() - t0;
    s.cpu = cpu_now() - c0;
    s.faults = minor_faults() - f0;
    return s;
}

/* NAME@PARAM: the sizes of a scaled workload into b; false when the
 * workload has no such form or PARAM is not sizes: ASCII digits, 1 to 2^24
 * each (2 rows at least for BatchNorm), a product of at most 2^26, as
 * bench/torch_bench.py's split_scale. */
static bool parse_scale(bench *b, const char *base, const char *param)
{
    long long m = 0, n = 0;
    char end;
    const long long most = 1LL << 24;
    if (strspn(param, "0123456789x") != strlen(param)) // no sign, no space
        return false;
    /* BatchNorm in training needs two rows for a variance */
    const bool ln = strcmp(base, "ln_fwd_bwd") == 0;
    if ((ln || strcmp(base, "bn1d_fwd_bwd") == 0) &&
        sscanf(param, "%lldx%lld%c", &m, &n, &end) == 2 &&
        m >= (ln ? 1 : 2) && n >= 1 && m <= most && n <= most &&
        m * n <= most * 4) {
        b->scale_m = m;
        b->scale_n = n;
        return true;
    }
    if (strcmp(base, "mlp_medium_step") == 0 &&
        sscanf(param, "%lld%c", &m, &end) == 1 && m >= 2 && m <= most) {
        b->scale_batch = m;
        return true;
    }
    return false;
}

static void cmd_setup(bench *b, const char *name, int threads,
                      const char *size, double min_seconds)
{
    teardown(b);
    tg_set_kernels(TG_KERNELS_FAST);
    char base[4096];
    snprintf(base, sizeof base, "%s", name);
    char *at = strchr(base, '@');
    if (at)
        *at = '\0';
    for (int i = 0; i < NWORKLOADS; i++)
        if (strcmp(workloads[i].name, base) == 0)
            b->w = &workloads[i];
    if (!b->w || (at && !parse_scale(b, base, at + 1))) {
        b->w = NULL;
        printf("unsupported\n");
        return;
    }
    b->small = strcmp(size, "small") == 0;
    b->threads = threads < 1 ? 1 : threads;
    tg_set_num_threads(b->threads);
    if (b->w->setup(b) != 0) {
        printf("error setup of %s failed: %s\n", name, tg_last_error());
        teardown(b);
        return;
    }
    /* Warm up, then double the count until a sample is long enough to
     * time reliably, and scale it to min_seconds. */
    long n = 1;
    sample cold = time_iters(b, 1);
    double t = cold.wall;
    while (t >= 0 && t < min_seconds / 8 && n < (1L << 30)) {
        n *= 2;
        t = time_iters(b, n).wall;
    }
    if (t < 0) {
        printf("error %s failed: %s\n", name, tg_last_error());
        teardown(b);
        return;
    }
    b->iters = t > 0 ? (long)ceil((double)n * min_seconds / t) : n;
    if (b->iters < 1)
        b->iters = 1;
    printf("ok %ld %ld\n", b->iters, cold.faults);
}

static void cmd_run(bench *b)
{
    if (!b->w) {
        printf("error run before setup\n");
        return;
    }
    sample s = time_iters(b, b->iters);
    double units = (double)b->iters * b->w->units;
    if (s.wall < 0)
        printf("error %s failed: %s\n", b->w->name, tg_last_error());
    else
        printf("%.9g %.9g %.9g\n", s.wall / units, s.cpu / units,
               (double)s.faults / (double)b->iters);
}

/* The calibration loop: the same fixed integer work (no memory traffic,
 * so no other program's cache or bandwidth use changes it) on each of
 * `threads` threads at once. On a machine where each thread has a core of
 * its own, wall time equals one thread's CPU time and CPU / wall equals
 * the thread count; a descheduled thread shows as CPU / wall below it. */
static void cmd_calib(int threads)
{
    if (threads < 1)
        threads = 1;
    uint64_t acc = 0;
    double c0 = cpu_now(), t0 = now();
#ifdef _OPENMP
#pragma omp parallel num_threads(threads) reduction(+ : acc)
#endif
    {
        uint64_t x = 88172645463325252u;
        for (long i = 0; i < 20000000; i++) { // ~20-40 ms of xorshift
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
        }
        acc += x & 1;
    }
    double wall = now() - t0, cpu = cpu_now() - c0;
    volatile uint64_t sink = acc; // the loop's result is used
    (void)sink;
    printf("%.9g %.9g\n", wall, cpu);
}

static void cmd_mem(bench *b)
{
    int64_t saved = -1, peak = -1;
    if (b->w && b->w->setup == setup_norm && has_bwd(b))
        saved = saved_norm(b);
    if (b->w && b->w->setup == setup_mlp)
        peak = peak_mlp(b);
    printf("saved=%lld peak=%lld\n", (long long)saved, (long long)peak);
}

int main(void)
{
    bench b = {0};
    b.threads = 1;
    char line[8192];
    setvbuf(stdout, NULL, _IOLBF, 0);
    tg_set_error_handler(tg_error_handler_quiet); // errors go to the reply
    while (fgets(line, sizeof line, stdin)) {
        char cmd[64] = "", a1[4096] = "", a3[64] = "full";
        int threads = 1;
        double min_seconds = 0.02;
        line[strcspn(line, "\r\n")] = '\0';
        int n = sscanf(line, "%63s %4095s %d %63s %lf", cmd, a1, &threads, a3,
                       &min_seconds);
        if (n < 1)
            continue;
        if (strcmp(cmd, "setup") == 0 && n >= 3)
            cmd_setup(&b, a1, threads, a3, min_seconds);
        else if (strcmp(cmd, "run") == 0)
            cmd_run(&b);
        else if (strcmp(cmd, "calib") == 0 && n >= 2)
            cmd_calib(atoi(a1));
        else if (strcmp(cmd, "check") == 0 && n >= 2)
            printf(b.w && b.w->check(&b, a1) == 0 ? "ok\n"
                                                  : "error check failed\n");
        else if (strcmp(cmd, "mem") == 0)
            cmd_mem(&b);
        else if (strcmp(cmd, "quit") == 0)
            break;
        else
            printf("error unknown command: %s\n", line);
    }
    teardown(&b);
    return tg_live_tensors() == 0 ? 0 : 1;
}
