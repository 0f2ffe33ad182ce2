/*
 * tests/dist/test_collectives.c - the collectives of dist/dist.h on real
 * MPI processes (meson runs it with 1 to 4 ranks): sums, means, gathers
 * and broadcasts in each dtype and layout, empty and 0-d tensors, and the
 * agreement step: ranks that disagree on the shape, the dtype, the call
 * or the root all fail with the same first line, and the group works
 * normally right after (no rank hangs, none is left a message behind).
 *
 * Expected values are closed forms in the rank r and the world size W
 * (sum over r of (r + 1) = W (W + 1) / 2), exact in every dtype used.
 */
#include "mpi_test.h"

#include <mpi.h>
#include <stdio.h>
#include <string.h>

/* Every element of x (any dtype) equals want(i), i the C-order index. */
static bool all_equal(const tg_tensor *x, double (*want)(int64_t i))
{
    double v[64];
    if (!x || x->numel > 64 || tg_to_f64_array(x, v) != 0)
        return false;
    for (int64_t i = 0; i < x->numel; i++)
        if (v[i] != want(i))
            return false;
    return true;
}

static double triangle(void)
{
    return mt_size * (mt_size + 1) / 2.0;
}

/* x[i] = (rank + 1) * (i + 1) in dtype, shape (2, 3). */
static tg_tensor *ramp(tg_dtype dtype)
{
    tg_tensor *a = tg_arange(1, 7, 1, dtype);
    tg_tensor *b = tg_mul_scalar(a, mt_rank + 1);
    tg_tensor *x = tg_reshape(b, TG_SHAPE(2, 3));
    tg_release(a);
    tg_release(b);
    return x;
}

static double ramp_sum(int64_t i)
{
    return (double)(i + 1) * triangle();
}

static void sum_float64(void)
{
    tg_tensor *x = ramp(TG_FLOAT64);
    tg_tensor *s = tg_all_reduce(mt_pg, x, TG_REDUCE_SUM);
    MT_CHECK(s && s->dtype == TG_FLOAT64 && s->ndim == 2 && s->shape[1] == 3,
             "wrong result tensor");
    MT_CHECK(all_equal(s, ramp_sum), "wrong sum");
    MT_CHECK(s && !s->requires_grad && !s->grad_fn, "the result has history");
    tg_tensor *again = ramp(TG_FLOAT64);
    MT_CHECK(mt_max_abs_diff(x, again) == 0, "the input was changed");
    tg_release(again);
    tg_release(s);
    tg_release(x);
}

static double ramp_sum_t(int64_t i) // the transpose (3, 2) of ramp_sum
{
    return ramp_sum((i % 2) * 3 + i / 2);
}

static void sum_float32_non_contiguous(void)
{
    tg_tensor *x = ramp(TG_FLOAT32);
    tg_tensor *t = tg_transpose(x, 0, 1); // (3, 2), not contiguous
    tg_tensor *s = tg_all_reduce(mt_pg, t, TG_REDUCE_SUM);
    MT_CHECK(s && s->dtype == TG_FLOAT32 && s->shape[0] == 3, "wrong result");
    MT_CHECK(all_equal(s, ramp_sum_t), "wrong sum of a transposed view");
    tg_release(s);
    tg_release(t);
    tg_release(x);
}

static double big_sum(int64_t i) // sum of (r + 1) * 2^40 + i over the ranks
{
    return triangle() * 1099511627776.0 + (double)(mt_size * i);
}

static void sum_int64(void)
{
    int64_t v[3];
    for (int i = 0; i < 3; i++)
        v[i] = (int64_t)(mt_rank + 1) * (INT64_C(1) << 40) + i;
    tg_tensor *x = tg_from_array(v, TG_SHAPE(3), TG_INT64);
    tg_tensor *s = tg_all_reduce(mt_pg, x, TG_REDUCE_SUM);
    MT_CHECK(s && s->dtype == TG_INT64, "wrong dtype");
    for (int i = 0; s && i < 3; i++)
        MT_CHECK(tg_data_i64(s)[i] ==
                     (int64_t)(mt_size * (mt_size + 1) / 2) *
                             (INT64_C(1) << 40) + mt_size * i,
                 "element %d is %lld", i, (long long)tg_data_i64(s)[i]);
    MT_CHECK(all_equal(s, big_sum), "wrong sum");
    tg_release(s);
    tg_release(x);
}

static double mean_of_rank_plus_one(int64_t i)
{
    (void)i;
    return (mt_size + 1) / 2.0; // exact: a multiple of 1/2
}

static void mean_float64_and_float32(void)
{
    for (int k = 0; k < 2; k++) {
        tg_tensor *x = tg_full(TG_SHAPE(4), mt_rank + 1,
                               k ? TG_FLOAT32 : TG_FLOAT64);
        tg_tensor *m = tg_all_reduce(mt_pg, x, TG_REDUCE_MEAN);
        MT_CHECK(all_equal(m, mean_of_rank_plus_one), "wrong mean (%s)",
                 k ? "float32" : "float64");
        tg_release(m);
        tg_release(x);
    }
}

static double row_is_rank(int64_t i) // (W, 2): element i is in row i / 2
{
    return (double)(i / 2);
}

static void gather_each_dtype(void)
{
    tg_dtype dtypes[] = {TG_FLOAT32, TG_FLOAT64, TG_INT64};
    for (int k = 0; k < 3; k++) {
        tg_tensor *x = tg_full(TG_SHAPE(2), mt_rank, dtypes[k]);
        tg_tensor *g = tg_all_gather(mt_pg, x);
        MT_CHECK(g && g->dtype == dtypes[k] && g->ndim == 2 &&
                     g->shape[0] == mt_size && g->shape[1] == 2,
                 "wrong shape or dtype (%s)", tg_dtype_name(dtypes[k]));
        MT_CHECK(all_equal(g, row_is_rank), "wrong rows (%s)",
                 tg_dtype_name(dtypes[k]));
        tg_release(g);
        tg_release(x);
    }
}

static void gather_non_contiguous_and_0d(void)
{
    // pairs = [[10 r, 10 r + 1], [10 r + 2, 10 r + 3]]; x = its column 0,
    // [10 r, 10 r + 2], a view with stride 2
    tg_tensor *buf = tg_arange(0, 4, 1, TG_FLOAT64);
    tg_tensor *buf2 = tg_add_scalar(buf, 10.0 * mt_rank);
    tg_tensor *pairs = tg_reshape(buf2, TG_SHAPE(2, 2));
    tg_tensor *x = tg_select(pairs, 1, 0);
    tg_tensor *g = tg_all_gather(mt_pg, x);
    MT_CHECK(g && g->shape[0] == mt_size && g->shape[1] == 2, "wrong shape");
    for (int r = 0; g && r < mt_size; r++) {
        double a, b;
        tg_get(g, TG_SHAPE(r, 0), &a);
        tg_get(g, TG_SHAPE(r, 1), &b);
        MT_CHECK(a == 10.0 * r && b == 10.0 * r + 2, "row %d is [%g, %g]", r,
                 a, b);
    }
    tg_release(g);
    tg_release(x);
    tg_release(pairs);
    tg_release(buf2);
    tg_release(buf);

    tg_tensor *s = tg_scalar(mt_rank * 2, TG_INT64);
    tg_tensor *all = tg_all_gather(mt_pg, s);
    MT_CHECK(all && all->ndim == 1 && all->shape[0] == mt_size, "0-d gather");
    for (int r = 0; all && r < mt_size; r++)
        MT_CHECK(tg_data_i64(all)[r] == 2 * r, "0-d gather, rank %d", r);
    tg_release(all);
    tg_release(s);
}

static void broadcast_from_first_and_last(void)
{
    int roots[] = {0, mt_size - 1};
    for (int k = 0; k < 2; k++) {
        tg_tensor *x = tg_full(TG_SHAPE(3, 2), 100 + mt_rank, TG_FLOAT32);
        MT_CHECK(tg_broadcast_(mt_pg, x, roots[k]) == 0, "broadcast failed");
        for (int i = 0; i < 6; i++)
            MT_CHECK(tg_data_f32(x)[i] == 100 + roots[k],
                     "element %d is %g, root %d", i, tg_data_f32(x)[i],
                     roots[k]);
        tg_release(x);
    }
}

static void broadcast_into_a_strided_view(void)
{
    // x = the even elements of buf; the odd ones must stay as they are
    tg_tensor *buf = tg_full(TG_SHAPE(6), -1 - mt_rank, TG_INT64);
    tg_tensor *x = tg_slice(buf, 0, 0, 6, 2);
    if (mt_rank == 0)
        tg_fill_(x, 7);
    MT_CHECK(tg_broadcast_(mt_pg, x, 0) == 0, "broadcast failed");
    for (int i = 0; i < 6; i++) {
        int64_t want = i % 2 == 0 ? 7 : -1 - mt_rank;
        MT_CHECK(tg_data_i64(buf)[i] == want, "buf[%d] is %lld, not %lld", i,
                 (long long)tg_data_i64(buf)[i], (long long)want);
    }
    tg_release(x);
    tg_release(buf);
}

static void broadcast_into_a_parameter(void)
{
    tg_tensor *w = tg_full(TG_SHAPE(2), mt_rank, TG_FLOAT64);
    tg_set_requires_grad(w, true);
    // outside no-grad mode: refused on every rank, and nothing moves
    MT_CHECK(tg_broadcast_(mt_pg, w, 0) == -1, "a leaf was written");
    MT_CHECK(mt_first_line_is("tg_broadcast_: cannot write in place into a "
                              "leaf that requires grad"),
             "wrong message");
    tg_clear_error();
    tg_no_grad_begin();
    MT_CHECK(tg_broadcast_(mt_pg, w, 0) == 0, "broadcast in no-grad failed");
    tg_no_grad_end();
    MT_CHECK(tg_data_f64(w)[0] == 0 && tg_data_f64(w)[1] == 0,
             "not rank 0's values");
    tg_release(w);
}

static void empty_tensors(void)
{
    tg_tensor *x = tg_zeros(TG_SHAPE(0, 3), TG_FLOAT64);
    tg_tensor *s = tg_all_reduce(mt_pg, x, TG_REDUCE_MEAN);
    MT_CHECK(s && s->ndim == 2 && s->shape[0] == 0 && s->shape[1] == 3,
             "all_reduce of (0, 3)");
    tg_tensor *g = tg_all_gather(mt_pg, x);
    MT_CHECK(g && g->ndim == 3 && g->shape[0] == mt_size && g->shape[1] == 0,
             "all_gather of (0, 3)");
    MT_CHECK(tg_broadcast_(mt_pg, x, 0) == 0, "broadcast of (0, 3)");
    tg_release(g);
    tg_release(s);
    tg_release(x);
}

/* After a failed collective the group must still work: one sum. */
static void group_still_works(void)
{
    tg_tensor *one = tg_ones(TG_SHAPE(1), TG_FLOAT64);
    tg_tensor *n = tg_all_reduce(mt_pg, one, TG_REDUCE_SUM);
    MT_CHECK(n && tg_data_f64(n)[0] == mt_size, "the next sum is wrong");
    tg_release(n);
    tg_release(one);
}

static void disagree_on_shape(void)
{
    // rank 0 has 2 rows, the others 3: uneven shards reduced as rows
    tg_tensor *x = tg_ones(TG_SHAPE(mt_rank == 0 ? 2 : 3, 4), TG_FLOAT64);
    MT_CHECK(tg_all_reduce(mt_pg, x, TG_REDUCE_SUM) == NULL, "no error");
    MT_CHECK(mt_first_line_is("tg_all_reduce: the ranks disagree on the "
                              "shape of x"),
             "wrong message");
    MT_CHECK(strstr(tg_last_error(), "dim 0 ranges from 2 to 3"),
             "the rule does not show the range");
    tg_release(x);
    group_still_works();
}

static void disagree_on_ndim_and_dtype(void)
{
    tg_tensor *x = mt_rank == 0 ? tg_ones(TG_SHAPE(4), TG_FLOAT64)
                                : tg_ones(TG_SHAPE(2, 2), TG_FLOAT64);
    MT_CHECK(tg_all_gather(mt_pg, x) == NULL, "no error");
    MT_CHECK(mt_first_line_is("tg_all_gather: the ranks disagree on the "
                              "number of dims of x"),
             "wrong message (ndim)");
    tg_release(x);
    tg_clear_error();
    x = tg_ones(TG_SHAPE(4), mt_rank == 1 ? TG_FLOAT32 : TG_FLOAT64);
    MT_CHECK(tg_broadcast_(mt_pg, x, 0) == -1, "no error");
    MT_CHECK(mt_first_line_is("tg_broadcast_: the ranks disagree on the dtype "
                              "of x"),
             "wrong message (dtype)");
    MT_CHECK(tg_data_f64(x) ? tg_data_f64(x)[0] == 1 : tg_data_f32(x)[0] == 1,
             "x was written");
    tg_release(x);
    group_still_works();
}

static void disagree_on_call_root_and_op(void)
{
    tg_tensor *x = tg_ones(TG_SHAPE(2), TG_FLOAT64);
    // rank 0 sums while the others gather
    tg_tensor *y = mt_rank == 0 ? tg_all_reduce(mt_pg, x, TG_REDUCE_SUM)
                                : tg_all_gather(mt_pg, x);
    MT_CHECK(y == NULL, "no error");
    MT_CHECK(mt_first_line_is(mt_rank == 0
                                  ? "tg_all_reduce: the ranks are not all "
                                    "making the same call"
                                  : "tg_all_gather: the ranks are not all "
                                    "making the same call"),
             "wrong message (call)");
    tg_clear_error();
    MT_CHECK(tg_broadcast_(mt_pg, x, mt_rank) == -1, "no error (root)");
    MT_CHECK(mt_first_line_is("tg_broadcast_: the ranks pass different roots"),
             "wrong message (root)");
    tg_clear_error();
    MT_CHECK(tg_all_reduce(mt_pg, x, mt_rank % 2 ? TG_REDUCE_MEAN
                                                 : TG_REDUCE_SUM) == NULL,
             "no error (op)");
    MT_CHECK(mt_first_line_is("tg_all_reduce: the ranks pass different "
                              "reduce ops"),
             "wrong message (op)");
    tg_release(x);
    group_still_works();
}

static void a_rank_without_a_tensor(void)
{
    // rank 0's x is NULL (an earlier call failed there): it stays silent,
    // the others are told, and nobody waits
    tg_tensor *x = mt_rank == 0 ? NULL : tg_ones(TG_SHAPE(2), TG_FLOAT32);
    MT_CHECK(tg_all_reduce(mt_pg, x, TG_REDUCE_SUM) == NULL, "no error");
    if (mt_rank == 0)
        MT_CHECK(tg_last_error()[0] == '\0', "a NULL argument reported");
    else
        MT_CHECK(mt_first_line_is("tg_all_reduce: the call failed on another "
                                  "rank"),
                 "wrong message");
    tg_release(x);
    group_still_works();
}

/* The library's MPI_Allreduce calls, counted through MPI's profiling
 * interface: this definition wins over Open MPI's, and PMPI_Allreduce is
 * the real one. */
static int allreduce_calls;
int MPI_Allreduce(const void *send, void *recv, int count, MPI_Datatype type,
                  MPI_Op op, MPI_Comm comm)
{
    allreduce_calls++;
    return PMPI_Allreduce(send, recv, count, type, op, comm);
}

static void gradients_in_one_call(void)
{
    // a Linear(3, 2) and a LayerNorm(2): four parameters, one has no grad
    tg_module *m = TG_SEQUENTIAL(tg_linear_new(3, 2, true),
                                 tg_layer_norm_new(TG_SHAPE(2), 1e-5, true));
    tg_module_to_dtype(m, TG_FLOAT64);
    tg_named_tensor p[4];
    MT_CHECK(tg_module_named_parameters(m, p, 4) == 4, "4 parameters");
    for (int i = 0; i < 3; i++) {
        p[i].tensor->grad = tg_full_like(p[i].tensor, (mt_rank + 1) * (i + 1));
    }
    int before = allreduce_calls;
    MT_CHECK(tg_dist_all_reduce_grads(mt_pg, m, TG_REDUCE_SUM) == 0, "failed");
    MT_CHECK(allreduce_calls - before == 2,
             "%d MPI_Allreduce calls: want the signature and ONE for the data",
             allreduce_calls - before);
    for (int i = 0; i < 4; i++) {
        tg_tensor *g = p[i].tensor->grad;
        double want = i < 3 ? triangle() * (i + 1) : 0;
        MT_CHECK(g && g->numel == p[i].tensor->numel, "grad %d missing", i);
        for (int64_t k = 0; g && k < g->numel; k++)
            MT_CHECK(tg_data_f64(g)[k] == want, "grad %d[%lld] is %g, not %g",
                     i, (long long)k, tg_data_f64(g)[k], want);
    }
    MT_CHECK(tg_dist_all_reduce_grads(mt_pg, m, TG_REDUCE_MEAN) == 0, "mean");
    double w0 = tg_data_f64(p[0].tensor->grad)[0];
    MT_CHECK(w0 == triangle() * mt_size / mt_size, "mean of equal grads: %g",
             w0);
    tg_module_free(m);
}

static void module_parameters_and_buffers(void)
{
    // a Linear and a BatchNorm1d whose every tensor differs per rank,
    // including the int64 buffer num_batches_tracked
    tg_module *m = TG_SEQUENTIAL(tg_linear_new(2, 3, true),
                                 tg_batch_norm1d_new(3, NULL));
    tg_named_tensor t[8];
    int np = tg_module_named_parameters(m, t, 4);
    int nb = tg_module_named_buffers(m, t + np, 4);
    MT_CHECK(np == 4 && nb == 3, "%d parameters, %d buffers", np, nb);
    tg_no_grad_begin();
    for (int i = 0; i < np + nb; i++)
        tg_fill_(t[i].tensor, 10 * i + mt_rank);
    tg_no_grad_end();
    MT_CHECK(tg_dist_broadcast_module(mt_pg, m, mt_size - 1) == 0, "failed");
    for (int i = 0; i < np + nb; i++) {
        double v[8];
        tg_to_f64_array(t[i].tensor, v);
        for (int64_t k = 0; k < t[i].tensor->numel; k++)
            MT_CHECK(v[k] == 10 * i + mt_size - 1, "%s[%lld] is %g",
                     t[i].name, (long long)k, v[k]);
    }
    MT_CHECK(tg_is_grad_enabled(), "left in no-grad mode");
    tg_module_free(m);
}

static void shard_ranges(void)
{
    // numpy.array_split(range(n), W) sizes, written out
    static const int64_t ten[5][4][2] = {
        {{0}},
        {{0, 10}},
        {{0, 5}, {5, 5}},
        {{0, 4}, {4, 3}, {7, 3}},
        {{0, 3}, {3, 3}, {6, 2}, {8, 2}},
    };
    static const int64_t two[5][4][2] = {
        {{0}},
        {{0, 2}},
        {{0, 1}, {1, 1}},
        {{0, 1}, {1, 1}, {2, 0}},
        {{0, 1}, {1, 1}, {2, 0}, {2, 0}},
    };
    int64_t start = -1, count = -1;
    if (mt_size <= 4) {
        MT_CHECK(tg_dist_shard_range(mt_pg, 10, &start, &count) == 0, "10");
        MT_CHECK(start == ten[mt_size][mt_rank][0] &&
                     count == ten[mt_size][mt_rank][1],
                 "10 rows: [%lld, +%lld)", (long long)start, (long long)count);
        MT_CHECK(tg_dist_shard_range(mt_pg, 2, &start, &count) == 0, "2");
        MT_CHECK(start == two[mt_size][mt_rank][0] &&
                     count == two[mt_size][mt_rank][1],
                 "2 rows: [%lld, +%lld)", (long long)start, (long long)count);
    }
    // the shards of 7 rows cover them once, in rank order
    tg_tensor *x = tg_arange(0, 14, 1, TG_FLOAT64);
    tg_tensor *rows = tg_reshape(x, TG_SHAPE(7, 2));
    tg_tensor *mine = tg_dist_shard(mt_pg, rows);
    tg_dist_shard_range(mt_pg, 7, &start, &count);
    MT_CHECK(mine && mine->shape[0] == count && mine->shape[1] == 2, "shape");
    for (int64_t i = 0; mine && i < count; i++) {
        double v;
        tg_get(mine, TG_SHAPE(i, 1), &v);
        MT_CHECK(v == 2 * (start + i) + 1, "row %lld", (long long)i);
    }
    tg_tensor *n = tg_full(TG_SHAPE(1), (double)count, TG_INT64);
    tg_tensor *total = tg_all_reduce(mt_pg, n, TG_REDUCE_SUM);
    MT_CHECK(total && tg_data_i64(total)[0] == 7, "the shards miss rows");
    tg_release(total);
    tg_release(n);
    tg_release(mine);
    tg_release(rows);
    tg_release(x);
}

int main(int argc, char **argv)
{
    static const mt_case cases[] = {
        {"all_reduce sums float64, input unchanged", sum_float64, 1},
        {"all_reduce sums a transposed float32 view", sum_float32_non_contiguous, 1},
        {"all_reduce sums int64 exactly", sum_int64, 1},
        {"all_reduce mean, float64 and float32", mean_float64_and_float32, 1},
        {"all_gather stacks in rank order, each dtype", gather_each_dtype, 1},
        {"all_gather of a strided view and of a 0-d tensor", gather_non_contiguous_and_0d, 1},
        {"broadcast_ from the first and the last rank", broadcast_from_first_and_last, 1},
        {"broadcast_ into a strided view leaves the gaps", broadcast_into_a_strided_view, 1},
        {"broadcast_ into a parameter needs no-grad mode", broadcast_into_a_parameter, 1},
        {"empty tensors", empty_tensors, 1},
        {"ranks disagreeing on the shape fail together", disagree_on_shape, 2},
        {"ranks disagreeing on ndim or dtype fail together", disagree_on_ndim_and_dtype, 2},
        {"ranks disagreeing on the call, root or op fail together", disagree_on_call_root_and_op, 2},
        {"a rank with a NULL tensor stops the others", a_rank_without_a_tensor, 2},
        {"gradients: one flat all-reduce, missing grads receive one", gradients_in_one_call, 1},
        {"broadcast_module: every parameter and buffer from the root", module_parameters_and_buffers, 1},
        {"shards: array_split sizes, empty ranks, every row once", shard_ranges, 1},
    };
    return mt_main(argc, argv, cases, (int)(sizeof cases / sizeof *cases));
}
