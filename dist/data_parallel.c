/*
 * dist/data_parallel.c - the helpers of data-parallel SGD: a shard of the
 * batch per rank, the same starting model on every rank, and the
 * gradients added over the ranks in one call.
 *
 * Why adding gradients gives single-process training: with a loss that is
 * a sum over samples, L = (1/N) sum_i l_i over the full batch of N rows,
 * and rank r holding the rows S_r,
 *
 *     dL/dw = sum_r [ (1/N) sum_{i in S_r} dl_i/dw ]
 *
 * so each rank backpropagates its part, L_r = (1/N) sum_{i in S_r} l_i
 * (divided by the GLOBAL N, not by |S_r|), and an all-reduce SUM of the
 * gradients gives every rank dL/dw. Averaging per-rank means instead,
 * (1/W) sum_r (1/|S_r|) sum_{i in S_r} dl_i/dw, weighs the rows of a small
 * shard more: it equals dL/dw only when every shard has N/W rows.
 * docs/distributed.md walks through it.
 */
#include "internal.h"

#include "../tensor/internal.h"

#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------ sharding */

int tg_dist_shard_range(const tg_process_group *pg, int64_t n,
                        int64_t *start, int64_t *count)
{
    static const char *fn = "tg_dist_shard_range";
    if (!pg)
        return -1;
    if (!start || !count) {
        tg_error(fn,
                 "start or count is NULL\n"
                 "  rule: the answer is written to *start and *count\n"
                 "  hint: pass the addresses of two int64_t variables");
        return -1;
    }
    if (n < 0) {
        tg_error(fn,
                 "cannot split %lld rows\n"
                 "  rule: n >= 0",
                 (long long)n);
        return -1;
    }
    int64_t w = tg_process_group_size(pg), r = tg_process_group_rank(pg);
    int64_t base = n / w, extra = n % w;
    // the first `extra` ranks take base + 1 rows, the others base
    *count = base + (r < extra);
    *start = r * base + (r < extra ? r : extra);
    return 0;
}

tg_tensor *tg_dist_shard(const tg_process_group *pg, const tg_tensor *x)
{
    if (!pg || !x)
        return NULL;
    if (x->ndim == 0) {
        tg_error("tg_dist_shard",
                 "cannot shard a 0-d tensor\n"
                 "  rule: the rows are split along dim 0, so x needs at "
                 "least one dim\n"
                 "  hint: tg_reshape(x, (int64_t[]){1}, 1) makes it one row");
        return NULL;
    }
    int64_t start, count;
    if (tg_dist_shard_range(pg, x->shape[0], &start, &count) != 0)
        return NULL;
    return tg_narrow(x, 0, start, count);
}

/* --------------------------------------------------- the same model */

/* The module's parameters (or buffers) in a new array the caller frees;
 * *n receives how many. NULL with *n = -1 on error, or with *n = 0. */
static tg_named_tensor *list_tensors(const char *fn, const tg_module *m,
                                     bool parameters, int *n)
{
    *n = parameters ? tg_module_named_parameters(m, NULL, 0)
                    : tg_module_named_buffers(m, NULL, 0);
    if (*n <= 0)
        return NULL;
    tg_named_tensor *list = tg_malloc((size_t)*n * sizeof *list);
    if (!list) {
        tg_error(fn, "out of memory for a list of %d tensors", *n);
        *n = -1;
        return NULL;
    }
    if (parameters)
        tg_module_named_parameters(m, list, *n);
    else
        tg_module_named_buffers(m, list, *n);
    return list;
}

int tg_dist_broadcast_module(tg_process_group *pg, tg_module *m, int root)
{
    static const char *fn = "tg_dist_broadcast_module";
    if (!pg)
        return -1;
    int np = 0, nb = 0;
    tg_named_tensor *params = NULL, *buffers = NULL;
    bool ok = m != NULL;
    if (ok) {
        params = list_tensors(fn, m, true, &np);
        buffers = list_tensors(fn, m, false, &nb);
        ok = np >= 0 && nb >= 0;
    }
    if (ok && (root < 0 || root >= tg_process_group_size(pg))) {
        tg_error(fn,
                 "cannot broadcast m from root %d\n"
                 "  rule: 0 <= root < size, and the group has %d ranks\n"
                 "  hint: rank 0 is the usual root",
                 root, tg_process_group_size(pg));
        ok = false;
    }
    // the ranks first agree on how many tensors follow: (parameters, buffers)
    tg_tensor *counts = ok ? tg_empty(TG_SHAPE(np, nb, 0), TG_INT64) : NULL;
    int rc = tg_dist_agree(pg, fn, TG_DIST_MODULE, counts, root,
                           ok && counts, "m's (parameters, buffers, 0)");
    tg_release(counts);
    tg_no_grad_begin(); // parameters are leaves that require grad
    for (int i = 0; rc == 0 && i < np + nb; i++) {
        tg_tensor *t = i < np ? params[i].tensor : buffers[i - np].tensor;
        rc = tg_broadcast_(pg, t, root);
    }
    tg_no_grad_end();
    free(params);
    free(buffers);
    return rc;
}

/* ------------------------------------------------ gradients, summed */

/* flat[at : at + g.numel] = g (into_flat) or g = that slice, g of any
 * shape and layout: the slice is viewed in g's shape. 0 or -1. */
static int copy_slice(tg_tensor *flat, int64_t at, tg_tensor *g,
                      bool into_flat)
{
    tg_tensor *part = tg_narrow(flat, 0, at, g->numel);
    tg_tensor *view = tg_reshape(part, g->shape, g->ndim);
    int rc = !view ? -1 : into_flat ? tg_copy_(view, g) : tg_copy_(g, view);
    tg_release(view);
    tg_release(part);
    return rc;
}

int tg_dist_all_reduce_grads(tg_process_group *pg, tg_module *m,
                             tg_reduce_op op)
{
    static const char *fn = "tg_dist_all_reduce_grads";
    if (!pg)
        return -1;
    int np = 0;
    tg_named_tensor *params = NULL;
    bool ok = m != NULL;
    if (ok && op != TG_REDUCE_SUM && op != TG_REDUCE_MEAN) {
        tg_error(fn,
                 "unknown reduce op %d for the gradients\n"
                 "  rule: op is TG_REDUCE_SUM or TG_REDUCE_MEAN",
                 (int)op);
        ok = false;
    }
    if (ok) {
        params = list_tensors(fn, m, true, &np);
        ok = np >= 0;
    }
    // one flat buffer: float64 if any parameter is, else float32
    int64_t total = 0;
    tg_dtype dtype = TG_FLOAT32;
    for (int i = 0; ok && i < np; i++) {
        total += params[i].tensor->numel;
        if (params[i].tensor->dtype == TG_FLOAT64)
            dtype = TG_FLOAT64;
    }
    tg_tensor *flat = ok ? tg_zeros(TG_SHAPE(total), dtype) : NULL;
    // pack: flat = [g_0, g_1, ...] in the module's order, zeros for no .grad
    int64_t at = 0;
    for (int i = 0; flat && ok && i < np; i++) {
        tg_tensor *p = params[i].tensor;
        if (p->grad)
            ok = copy_slice(flat, at, p->grad, true) == 0;
        at += p->numel;
    }
    ok = ok && flat;
    int rc = tg_dist_agree(pg, fn, TG_DIST_GRADS, flat, op, ok,
                           "the gradients of m's parameters (all in one)");
    if (rc == 0)
        rc = tg_dist_sum_in_place(pg, fn, flat->storage->data, total, dtype);
    if (rc == 0 && op == TG_REDUCE_MEAN) {
        double w = tg_process_group_size(pg);
        if (dtype == TG_FLOAT32) {
            float *f = tg_data_f32(flat);
            for (int64_t i = 0; i < total; i++)
                f[i] = (float)(f[i] / w);
        } else {
            double *f = tg_data_f64(flat);
            for (int64_t i = 0; i < total; i++)
                f[i] /= w;
        }
    }
    // unpack: every .grad receives its slice of the sum
    at = 0;
    for (int i = 0; rc == 0 && i < np; i++) {
        tg_tensor *p = params[i].tensor;
        if (!p->grad && !(p->grad = tg_zeros_like(p)))
            rc = -1;
        else
            rc = copy_slice(flat, at, p->grad, false);
        at += p->numel;
    }
    tg_release(flat);
    free(params);
    return rc;
}
