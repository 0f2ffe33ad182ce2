/*
 * tests/autograd/test_virtual_ranks.c - tg_batch_norm_virtual_ranks, the
 * single-process form of SyncBatchNorm (autograd/ops/
 * sync_batch_norm_math.c): on W = 1..5 shards, empty ones included, it
 * must equal tg_batch_norm_ex on the whole batch (output, the gradients
 * of x, weight and bias for a random upstream gradient, and the running
 * statistics over two steps), for (N, C), (N, C, L) and (N, C, H, W), in
 * float32 and float64; its backward passes gradcheck; eval uses the
 * running statistics. Needs no MPI. Its argument errors are in
 * tests/errors/catalogue_ops.c.
 *
 * The negative control: BatchNorm applied to each shard on its own (what
 * unsynchronised BatchNorm on W processes computes) fails the same
 * comparison, so the comparison can tell the two apart.
 *
 * Tolerances: both ops compute in double and round once to the dtype; they
 * differ only in the order of their additions (shards and Chan's combine
 * against one pass, or the fast kernels' blocks), ~1e-16 relative on O(1)
 * values before rounding. float64: 1e-12 relative + 1e-12 absolute
 * (measured differences ~1e-15); float32: 1e-6 relative + 1e-6 absolute,
 * about two float32 ulp of the O(1) outputs (a double difference can tip
 * one rounding). Unsynchronised BatchNorm differs by O(0.1).
 */
#include "../common.h"

#include <math.h>
#include <stdlib.h>

typedef struct bn_run {
    tg_tensor *y, *dx, *dw, *db, *rm, *rv;
} bn_run;

static void bn_run_release(bn_run *r)
{
    tg_release(r->y), tg_release(r->dx), tg_release(r->dw);
    tg_release(r->db), tg_release(r->rm), tg_release(r->rv);
}

typedef enum bn_kind { WHOLE, VIRTUAL, LOCAL_PER_SHARD } bn_kind;

/* BatchNorm of x with kind's method on W shards: in the local case each
 * shard normalised by tg_batch_norm_ex on its own and the outputs
 * concatenated (its running statistics: the last shard's update, one
 * after the other, as local BatchNorm on rank 0 would not even see). */
static tg_tensor *bn_apply(bn_kind kind, int W, tg_tensor *x, tg_tensor *rm,
                           tg_tensor *rv, tg_tensor *w, tg_tensor *b)
{
    tg_batch_norm_options o = tg_batch_norm_defaults();
    if (kind == WHOLE)
        return tg_batch_norm_ex(x, rm, rv, w, b, &o, NULL, NULL);
    if (kind == VIRTUAL)
        return tg_batch_norm_virtual_ranks(x, W, rm, rv, w, b, &o);
    int64_t N = x->shape[0], base = N / W, extra = N % W, start = 0;
    tg_tensor *parts[8];
    int k = 0;
    for (int r = 0; r < W; r++) {
        int64_t count = base + (r < extra);
        if (count == 0)
            continue;
        tg_tensor *shard = tg_narrow(x, 0, start, count);
        parts[k++] = tg_batch_norm_ex(shard, rm, rv, w, b, &o, NULL, NULL);
        tg_release(shard);
        start += count;
    }
    tg_tensor *y = tg_cat((const tg_tensor *const *)parts, k, 0);
    for (int i = 0; i < k; i++)
        tg_release(parts[i]);
    return y;
}

/* Two training steps of BatchNorm on fresh copies of the same seeded
 * inputs; the gradients are those of the second step, for the loss
 * sum(y * g) with a random g (not sum(y), whose gradient is 0 for any
 * BatchNorm). */
static bn_run bn_two_steps(bn_kind kind, int W, const int64_t *shape,
                           int ndim, tg_dtype dt)
{
    tg_manual_seed(7);
    int64_t C = shape[1];
    tg_tensor *x1 = tg_randn(shape, ndim, dt);
    tg_tensor *x2 = tg_randn(shape, ndim, dt);
    tg_tensor *g = tg_randn(shape, ndim, dt);
    tg_tensor *w = tg_rand(TG_SHAPE(C), dt), *b = tg_randn(TG_SHAPE(C), dt);
    tg_tensor *rm = tg_zeros(TG_SHAPE(C), dt), *rv = tg_ones(TG_SHAPE(C), dt);
    tg_set_requires_grad(x2, true);
    tg_set_requires_grad(w, true);
    tg_set_requires_grad(b, true);
    tg_tensor *y1 = bn_apply(kind, W, x1, rm, rv, w, b);
    tg_tensor *y = bn_apply(kind, W, x2, rm, rv, w, b);
    cr_assert(y1 && y, "%s", tg_last_error());
    tg_tensor *yg = tg_mul(y, g);
    tg_tensor *loss = tg_sum(yg, NULL, 0, false);
    cr_assert(tg_backward(loss) == 0, "%s", tg_last_error());
    bn_run r = {y, x2->grad, w->grad, b->grad, rm, rv};
    tg_retain(x2->grad), tg_retain(w->grad), tg_retain(b->grad);
    tg_release(loss), tg_release(yg), tg_release(y1);
    tg_release(x1), tg_release(x2), tg_release(g), tg_release(w);
    tg_release(b);
    return r;
}

/* Whether every tensor of a matches b's within the dtype's tolerance. */
static bool runs_close(const bn_run *a, const bn_run *b, tg_dtype dt)
{
    double tol = dt == TG_FLOAT64 ? 1e-12 : 1e-6;
    const tg_tensor *ta[] = {a->y, a->dx, a->dw, a->db, a->rm, a->rv};
    const tg_tensor *tb[] = {b->y, b->dx, b->dw, b->db, b->rm, b->rv};
    const char *names[] = {"y", "dx", "dw", "db", "running_mean",
                           "running_var"};
    for (int k = 0; k < 6; k++) {
        char report[512];
        if (!tg_test_close(ta[k], tb[k], tol, tol, true, report,
                           sizeof report)) {
            cr_log_info("%s: %s", names[k], report);
            return false;
        }
    }
    return true;
}

typedef struct shape_case {
    int ndim;
    int64_t shape[4];
} shape_case;

static const shape_case shapes[] = {
    {2, {7, 3}},       // BatchNorm1d on (N, C)
    {3, {5, 2, 4}},    // BatchNorm1d on (N, C, L)
    {4, {6, 2, 3, 2}}, // BatchNorm2d
    {2, {3, 4}},       // W = 4, 5: shards with no rows
    {4, {2, 3, 2, 2}}, // two rows: W >= 3 leaves most shards empty
};

TG_TEST(virtual_ranks, equals_batch_norm_on_the_whole_batch)
{
    tg_dtype dts[] = {TG_FLOAT64, TG_FLOAT32};
    for (size_t s = 0; s < sizeof shapes / sizeof *shapes; s++)
        for (int d = 0; d < 2; d++) {
            bn_run whole = bn_two_steps(WHOLE, 1, shapes[s].shape,
                                        shapes[s].ndim, dts[d]);
            for (int W = 1; W <= 5; W++) {
                bn_run v = bn_two_steps(VIRTUAL, W, shapes[s].shape,
                                        shapes[s].ndim, dts[d]);
                cr_assert(runs_close(&v, &whole, dts[d]),
                          "shape case %zu, %s, W = %d", s,
                          tg_dtype_name(dts[d]), W);
                bn_run_release(&v);
            }
            bn_run_release(&whole);
        }
}

TG_TEST(virtual_ranks, local_batch_norm_per_shard_does_not_pass)
{
    // the same comparison, fed unsynchronised BatchNorm: W = 1 is the
    // whole batch, so it passes; from W = 2 on it must fail
    const int64_t shape[] = {8, 3};
    bn_run whole = bn_two_steps(WHOLE, 1, shape, 2, TG_FLOAT64);
    bn_run one = bn_two_steps(LOCAL_PER_SHARD, 1, shape, 2, TG_FLOAT64);
    cr_assert(runs_close(&one, &whole, TG_FLOAT64));
    bn_run_release(&one);
    for (int W = 2; W <= 4; W++) {
        bn_run local = bn_two_steps(LOCAL_PER_SHARD, W, shape, 2, TG_FLOAT64);
        cr_assert(!runs_close(&local, &whole, TG_FLOAT64), "W = %d", W);
        bn_run_release(&local);
    }
    bn_run_release(&whole);
}

TG_TEST(virtual_ranks, records_sync_batch_norm_backward)
{
    tg_tensor *x = tg_randn(TG_SHAPE(4, 2), TG_FLOAT32);
    tg_set_requires_grad(x, true);
    tg_tensor *y = tg_batch_norm_virtual_ranks(x, 3, NULL, NULL, NULL, NULL,
                                               NULL);
    cr_assert_str_eq(tg_grad_fn_name(y), "SyncBatchNormBackward");
    cr_assert(y->dtype == TG_FLOAT32);
    tg_release(y);
    tg_release(x);
}

/* ------------------------------------------------------------ gradcheck */

static tg_tensor *virtual_bn(const tg_tensor *const *in, int n, void *ctx)
{
    (void)n;
    int W = *(const int *)ctx;
    return tg_batch_norm_virtual_ranks(in[0], W, NULL, NULL, in[1], in[2],
                                       NULL);
}

TG_TEST(virtual_ranks, gradcheck)
{
    // float64, PyTorch's tolerances; the full Jacobian, so no sum(y) trap.
    // (5, 2, 3) on 1, 3 and 7 shards (7: two of them empty)
    int worlds[] = {1, 3, 7};
    for (int k = 0; k < 3; k++) {
        tg_manual_seed(11);
        tg_tensor *in[3] = {tg_randn(TG_SHAPE(5, 2, 3), TG_FLOAT64),
                            tg_rand(TG_SHAPE(2), TG_FLOAT64),
                            tg_randn(TG_SHAPE(2), TG_FLOAT64)};
        for (int i = 0; i < 3; i++)
            tg_set_requires_grad(in[i], true);
        tg_gradcheck_result res;
        int rc = tg_gradcheck(virtual_bn, &worlds[k], in, 3, NULL, &res);
        cr_assert(rc == 1 && res.passed, "W = %d: %s %s", worlds[k],
                  res.message, tg_last_error());
        for (int i = 0; i < 3; i++)
            tg_release(in[i]);
    }
}

/* ----------------------------------------------------------------- eval */

TG_TEST(virtual_ranks, eval_uses_the_running_statistics)
{
    tg_manual_seed(3);
    tg_tensor *x = tg_randn(TG_SHAPE(6, 3, 2), TG_FLOAT64);
    tg_tensor *rm = tg_randn(TG_SHAPE(3), TG_FLOAT64);
    tg_tensor *rv = tg_rand(TG_SHAPE(3), TG_FLOAT64);
    tg_tensor *rm0 = tg_clone(rm), *rv0 = tg_clone(rv);
    tg_batch_norm_options o = tg_batch_norm_defaults();
    o.eval = true;
    tg_tensor *y = tg_batch_norm_virtual_ranks(x, 4, rm, rv, NULL, NULL, &o);
    tg_tensor *want = tg_batch_norm(x, rm, rv, NULL, NULL, false, 0.1, 1e-5);
    tg_assert_close(y, want, 0, 0);
    tg_assert_close(rm, rm0, 0, 0); // not moved
    tg_assert_close(rv, rv0, 0, 0);
    tg_release(y), tg_release(want), tg_release(x), tg_release(rm);
    tg_release(rv), tg_release(rm0), tg_release(rv0);
}
