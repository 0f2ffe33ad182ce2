/*
 * tests/dist/test_sync_batch_norm.c - tg_sync_batch_norm on 1 to 4 real
 * MPI processes equals tg_batch_norm on the concatenated batch.
 *
 * A full batch X of N = 10 rows is split over the ranks, unevenly and with
 * an empty rank (3 and 4 ranks), as in test_data_parallel.c:
 *
 *     W = 1: 10    W = 2: 3 7    W = 3: 6 0 4    W = 4: 1 5 0 4
 *
 * Every rank computes the reference, tg_batch_norm on X, and its backward
 * for the loss sum(Y * G) with a fixed random G (a plain sum would have a
 * zero gradient by construction); then its own part with
 * tg_sync_batch_norm. Checked, for (N, C), (N, C, L) and (N, C, H, W):
 * the rank's rows of Y and of dL/dX, the running statistics, and the
 * weight and bias gradients summed over the ranks. float64 within 1e-12
 * (the sums run in another order: rounding only), float32 within 1e-5
 * (both round each element to float32 once from double math; 1e-5 is a
 * few ulp of values of order 1).
 *
 * Negative control: plain tg_batch_norm on each rank's shard (no
 * synchronisation) differs from the full batch by far more than that.
 * Eval mode: equal to tg_batch_norm's eval, with no MPI call at all
 * (counted through MPI's profiling interface).
 */
#include "mpi_test.h"

#include <math.h>
#include <mpi.h>
#include <stdio.h>

enum { N = 10, C = 3 };

static const int64_t with_empty[5][4] = {
    {0}, {10}, {3, 7}, {6, 0, 4}, {1, 5, 0, 4}};
static const int64_t two_or_more[5][4] = {
    {0}, {10}, {3, 7}, {4, 3, 3}, {2, 3, 2, 3}};

/* This rank's rows of t by the table. New reference (a view). */
static tg_tensor *my_rows(const tg_tensor *t, const int64_t counts[4])
{
    int64_t start = 0;
    for (int r = 0; r < mt_rank; r++)
        start += counts[r];
    return tg_narrow(t, 0, start, counts[mt_rank]);
}

/* A new leaf with t's values that requires grad. */
static tg_tensor *leaf(const tg_tensor *t)
{
    tg_tensor *c = tg_clone(t);
    tg_tensor *d = tg_detach(c);
    tg_release(c);
    tg_tensor *e = tg_contiguous(d);
    tg_release(d);
    tg_set_requires_grad(e, true);
    return e;
}

/* sum(y * g). New reference. */
static tg_tensor *weighted(const tg_tensor *y, const tg_tensor *g)
{
    tg_tensor *p = tg_mul(y, g);
    tg_tensor *s = tg_sum(p, NULL, 0, false);
    tg_release(p);
    return s;
}

static void compare(const int64_t *shape, int ndim, tg_dtype dtype,
                    const int64_t counts[4], double tol, bool synced,
                    double *worst)
{
    tg_generator *gen = tg_generator_new(99);
    tg_tensor *x0 = tg_randn_gen(gen, shape, ndim, dtype);
    tg_tensor *x_shift = tg_add_scalar(x0, 3.0); // a mean far from 0
    tg_tensor *g = tg_randn_gen(gen, shape, ndim, dtype);
    tg_tensor *w0 = tg_rand_gen(gen, TG_SHAPE(C), dtype);
    tg_tensor *b0 = tg_randn_gen(gen, TG_SHAPE(C), dtype);
    tg_generator_free(gen);

    // the reference: the full batch in one process
    tg_tensor *X = leaf(x_shift), *W = leaf(w0), *B = leaf(b0);
    tg_tensor *rm_ref = tg_zeros(TG_SHAPE(C), dtype);
    tg_tensor *rv_ref = tg_ones(TG_SHAPE(C), dtype);
    tg_tensor *Y = tg_batch_norm(X, rm_ref, rv_ref, W, B, true, 0.1, 1e-5);
    tg_tensor *L = weighted(Y, g);
    tg_backward(L);

    // this rank's part
    tg_tensor *xr_view = my_rows(x_shift, counts);
    tg_tensor *x = leaf(xr_view), *w = leaf(w0), *b = leaf(b0);
    tg_tensor *gr = my_rows(g, counts);
    tg_tensor *rm = tg_zeros(TG_SHAPE(C), dtype);
    tg_tensor *rv = tg_ones(TG_SHAPE(C), dtype);
    tg_tensor *y = synced ? tg_sync_batch_norm(mt_pg, x, rm, rv, w, b, true,
                                               0.1, 1e-5)
                          : tg_batch_norm(x, rm, rv, w, b, true, 0.1, 1e-5);
    MT_CHECK(y != NULL, "no output");
    tg_tensor *l = weighted(y, gr);
    MT_CHECK(tg_backward(l) == 0, "backward failed");
    tg_tensor *y_want = my_rows(Y, counts), *dx_want = my_rows(X->grad, counts);
    double d = fmax(mt_max_abs_diff(y, y_want), mt_max_abs_diff(x->grad, dx_want));
    d = fmax(d, fmax(mt_max_abs_diff(rm, rm_ref), mt_max_abs_diff(rv, rv_ref)));
    tg_tensor *dw = tg_all_reduce(mt_pg, w->grad, TG_REDUCE_SUM);
    tg_tensor *db = tg_all_reduce(mt_pg, b->grad, TG_REDUCE_SUM);
    d = fmax(d, fmax(mt_max_abs_diff(dw, W->grad), mt_max_abs_diff(db, B->grad)));
    if (synced)
        MT_CHECK(d <= tol, "%s, %d dims: differs by %.3g (tolerance %g)",
                 tg_dtype_name(dtype), ndim, d, tol);
    *worst = fmax(*worst, d);
    tg_release(db);
    tg_release(dw);
    tg_release(dx_want);
    tg_release(y_want);
    tg_release(l);
    tg_release(y);
    tg_release(rv);
    tg_release(rm);
    tg_release(gr);
    tg_release(b);
    tg_release(w);
    tg_release(x);
    tg_release(xr_view);
    tg_release(L);
    tg_release(Y);
    tg_release(rv_ref);
    tg_release(rm_ref);
    tg_release(B);
    tg_release(W);
    tg_release(X);
    tg_release(b0);
    tg_release(w0);
    tg_release(g);
    tg_release(x_shift);
    tg_release(x0);
}

static void equals_batch_norm(void)
{
    if (mt_size > 4)
        return;
    double worst = 0;
    for (int k = 0; k < 2; k++) {
        tg_dtype dt = k ? TG_FLOAT32 : TG_FLOAT64;
        double tol = k ? 1e-5 : 1e-12;
        compare(TG_SHAPE(N, C), dt, with_empty[mt_size], tol, true, &worst);
        compare(TG_SHAPE(N, C, 4), dt, with_empty[mt_size], tol, true, &worst);
        compare(TG_SHAPE(N, C, 2, 3), dt, with_empty[mt_size], tol, true,
                &worst);
    }
}

static void local_batch_norm_differs(void)
{
    if (mt_size > 4)
        return;
    double worst = 0;
    compare(TG_SHAPE(N, C), TG_FLOAT64, two_or_more[mt_size], 0, false, &worst);
    double any = 0;
    MPI_Allreduce(&worst, &any, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    MT_CHECK(any > 1e-3, "local BatchNorm on shards matched the full batch "
             "(%.3g): the comparison cannot fail", any);
}

static void eval_does_not_communicate(void)
{
    tg_tensor *x = tg_randn(TG_SHAPE(mt_rank + 2, C, 2), TG_FLOAT64);
    tg_tensor *rm = tg_full(TG_SHAPE(C), 0.5, TG_FLOAT64);
    tg_tensor *rv = tg_full(TG_SHAPE(C), 2.0, TG_FLOAT64);
    tg_tensor *w = tg_full(TG_SHAPE(C), 1.5, TG_FLOAT64);
    tg_tensor *b = tg_full(TG_SHAPE(C), -1.0, TG_FLOAT64);
    int before = mt_mpi_calls;
    tg_tensor *y = tg_sync_batch_norm(mt_pg, x, rm, rv, w, b, false, 0.1, 1e-5);
    MT_CHECK(mt_mpi_calls == before, "%d MPI calls in eval mode",
             mt_mpi_calls - before);
    tg_tensor *want = tg_batch_norm(x, rm, rv, w, b, false, 0.1, 1e-5);
    MT_CHECK(mt_max_abs_diff(y, want) == 0, "eval differs from tg_batch_norm");
    // and training does communicate: a signature, a gather (with its own
    // signature) and nothing else in the forward
    before = mt_mpi_calls;
    tg_tensor *yt = tg_sync_batch_norm(mt_pg, x, rm, rv, w, b, true, 0.1, 1e-5);
    MT_CHECK(yt && mt_mpi_calls - before == 3, "%d MPI calls in a training forward",
             mt_mpi_calls - before);
    tg_release(yt);
    tg_release(want);
    tg_release(y);
    tg_release(b);
    tg_release(w);
    tg_release(rv);
    tg_release(rm);
    tg_release(x);
}

int main(int argc, char **argv)
{
    static const mt_case cases[] = {
        {"SyncBatchNorm equals BatchNorm on the full batch (uneven, an empty rank; 2, 3, 4 dims; float64 1e-12, float32 1e-5)", equals_batch_norm, 1},
        {"negative control: unsynchronised BatchNorm on the shards differs", local_batch_norm_differs, 2},
        {"eval mode uses the running statistics and does not communicate", eval_does_not_communicate, 1},
    };
    return mt_main(argc, argv, cases, (int)(sizeof cases / sizeof *cases));
}
