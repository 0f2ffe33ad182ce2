/*
 * dist/process_group.c - a process group over an MPI communicator and the
 * collectives on tensors: all-reduce, all-gather, broadcast.
 *
 * What it is: thin, checked wrappers around MPI_Allreduce, MPI_Allgather
 * and MPI_Bcast on a tensor's elements. What it is not: a differentiable
 * op (nothing is recorded on the tape), nor a transport of its own (MPI
 * moves the bytes).
 *
 * The one idea here is the agreement step. MPI trusts every process to
 * pass the same counts and types; when one rank passes a (2, 3) tensor and
 * another a (3, 3) one, MPI_Allreduce either hangs or adds unrelated
 * numbers. So before any data, every collective exchanges a signature of
 * its call:
 *
 *     sig = [ok, call, dtype, ndim, shape[0..7], root or op]
 *
 * in ONE MPI_Allreduce with MPI_MIN over [sig, -sig], which gives every
 * rank the minimum and the maximum of each field. The ranks agree iff
 * min == max everywhere; otherwise every rank reports the same first line
 * and returns, and no rank is left waiting for data. `ok` is 0 on a rank
 * whose own arguments were wrong (it reported that already), so the other
 * ranks stop too.
 */
#include "dist.h"
#include "internal.h"

#include "../tensor/internal.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

struct tg_process_group {
    MPI_Comm comm; // a duplicate, owned
    int rank, size;
};

/* ------------------------------------------------------------ the world */

static bool started_here; // tg_dist_init called MPI_Init

int tg_dist_init(int *argc, char ***argv)
{
    int running = 0;
    MPI_Initialized(&running);
    if (running)
        return 0;
    int rc = MPI_Init(argc, argv);
    if (rc != MPI_SUCCESS) {
        tg_dist_mpi_error("tg_dist_init", "MPI_Init", rc);
        return -1;
    }
    started_here = true;
    return 0;
}

int tg_dist_finalize(void)
{
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (!started_here || finalized)
        return 0;
    int rc = MPI_Finalize();
    if (rc != MPI_SUCCESS) {
        tg_dist_mpi_error("tg_dist_finalize", "MPI_Finalize", rc);
        return -1;
    }
    return 0;
}

void tg_dist_mpi_error(const char *fn, const char *call, int rc)
{
    char text[MPI_MAX_ERROR_STRING];
    int len = 0;
    if (MPI_Error_string(rc, text, &len) != MPI_SUCCESS)
        snprintf(text, sizeof text, "error code %d", rc);
    tg_error(fn,
             "%s failed: %s\n"
             "  rule: the MPI library reported an error (a process died, "
             "or the network failed)\n"
             "  hint: run the program under mpirun, and read the messages "
             "of the other ranks",
             call, text);
}

/* -------------------------------------------------------- process groups */

static tg_process_group *group_new(const char *fn, MPI_Comm comm)
{
    int running = 0, finalized = 0;
    MPI_Initialized(&running);
    MPI_Finalized(&finalized);
    if (!running || finalized) {
        tg_error(fn,
                 "MPI has not started, or has finished\n"
                 "  rule: a process group needs MPI started (MPI_Init) and "
                 "not yet finalized\n"
                 "  hint: call tg_dist_init(&argc, &argv) first, and "
                 "tg_dist_finalize() last");
        return NULL;
    }
    tg_process_group *pg = tg_malloc(sizeof *pg);
    if (!pg) {
        tg_error(fn, "out of memory for a process group");
        return NULL;
    }
    int rc = MPI_Comm_dup(comm, &pg->comm);
    if (rc != MPI_SUCCESS) {
        free(pg);
        tg_dist_mpi_error(fn, "MPI_Comm_dup", rc);
        return NULL;
    }
    // errors come back as return codes, which become tapegrad errors
    MPI_Comm_set_errhandler(pg->comm, MPI_ERRORS_RETURN);
    MPI_Comm_rank(pg->comm, &pg->rank);
    MPI_Comm_size(pg->comm, &pg->size);
    return pg;
}

tg_process_group *tg_process_group_world(void)
{
    return group_new("tg_process_group_world", MPI_COMM_WORLD);
}

tg_process_group *tg_process_group_new(MPI_Comm comm)
{
    if (comm == MPI_COMM_NULL) {
        tg_error("tg_process_group_new",
                 "comm is MPI_COMM_NULL\n"
                 "  rule: a process group is made of the processes of a "
                 "valid communicator\n"
                 "  hint: pass MPI_COMM_WORLD, or a communicator made by "
                 "MPI_Comm_split (on the ranks it includes)");
        return NULL;
    }
    return group_new("tg_process_group_new", comm);
}

void tg_process_group_free(tg_process_group *pg)
{
    if (!pg)
        return;
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (!finalized)
        MPI_Comm_free(&pg->comm);
    free(pg);
}

int tg_process_group_rank(const tg_process_group *pg)
{
    return pg ? pg->rank : -1;
}

int tg_process_group_size(const tg_process_group *pg)
{
    return pg ? pg->size : -1;
}

MPI_Comm tg_dist_comm(const tg_process_group *pg)
{
    return pg->comm;
}

/* ----------------------------------------------------- the agreement step */

enum { SIG_OK, SIG_CALL, SIG_DTYPE, SIG_NDIM, SIG_SHAPE,
       SIG_EXTRA = SIG_SHAPE + TG_MAX_DIMS, SIG_LEN };

static const char *const call_names[] = {
    [TG_DIST_ALL_REDUCE] = "tg_all_reduce",
    [TG_DIST_ALL_GATHER] = "tg_all_gather",
    [TG_DIST_BROADCAST] = "tg_broadcast_",
    [TG_DIST_MODULE] = "tg_dist_broadcast_module",
    [TG_DIST_GRADS] = "tg_dist_all_reduce_grads",
    [TG_DIST_SYNC_BN] = "tg_sync_batch_norm",
};

int tg_dist_agree(const tg_process_group *pg, const char *fn,
                  tg_dist_call call, const tg_tensor *x, int64_t extra,
                  bool ok, const char *what)
{
    int64_t buf[2 * SIG_LEN] = {0};
    int64_t *sig = buf;
    sig[SIG_OK] = ok && x;
    sig[SIG_CALL] = call;
    sig[SIG_EXTRA] = extra;
    if (sig[SIG_OK]) {
        sig[SIG_DTYPE] = x->dtype;
        sig[SIG_NDIM] = x->ndim;
        for (int d = 0; d < x->ndim; d++)
            sig[SIG_SHAPE + d] = x->shape[d];
    }
    for (int i = 0; i < SIG_LEN; i++)
        buf[SIG_LEN + i] = -sig[i];
    int64_t mine[SIG_LEN];
    memcpy(mine, sig, sizeof mine);
    int rc = MPI_Allreduce(MPI_IN_PLACE, buf, 2 * SIG_LEN, MPI_INT64_T,
                           MPI_MIN, pg->comm);
    if (!ok || !x) // reported already (or a NULL argument: silent)
        return -1;
    if (rc != MPI_SUCCESS) {
        tg_dist_mpi_error(fn, "MPI_Allreduce", rc);
        return -1;
    }
    const int64_t *lo = buf, *hi_neg = buf + SIG_LEN;
    if (lo[SIG_CALL] != -hi_neg[SIG_CALL]) {
        int64_t a = lo[SIG_CALL], b = -hi_neg[SIG_CALL];
        tg_error(fn,
                 "the ranks are not all making the same call\n"
                 "  rule: every rank calls the same collectives in the same "
                 "order; this rank (%d of %d) called %s, others %s\n"
                 "  hint: a collective inside an `if (rank == ...)` leaves "
                 "the other ranks behind: call it on every rank",
                 pg->rank, pg->size, fn,
                 call_names[a == (int64_t)call ? b : a]);
        return -1;
    }
    if (lo[SIG_OK] == 0) {
        tg_error(fn,
                 "the call failed on another rank\n"
                 "  rule: every rank passes valid arguments; on some rank "
                 "this call reported an error or received NULL (an earlier "
                 "call failed there), so no rank moves any data\n"
                 "  hint: read the first error of the other ranks' output");
        return -1;
    }
    if (lo[SIG_DTYPE] != -hi_neg[SIG_DTYPE]) {
        tg_error(fn,
                 "the ranks disagree on the dtype of %s\n"
                 "  rule: every rank passes the same dtype; this rank (%d of "
                 "%d) has %s, the ranks have %s to %s\n"
                 "  hint: convert with tg_to_dtype before the call",
                 what, pg->rank, pg->size, tg_dtype_name(x->dtype),
                 tg_dtype_name((tg_dtype)lo[SIG_DTYPE]),
                 tg_dtype_name((tg_dtype)-hi_neg[SIG_DTYPE]));
        return -1;
    }
    for (int i = SIG_NDIM; i < SIG_EXTRA; i++) {
        if (lo[i] == -hi_neg[i])
            continue;
        char s[TG_SHAPE_STR_MAX];
        if (i == SIG_NDIM)
            tg_error(fn,
                     "the ranks disagree on the number of dims of %s\n"
                     "  rule: every rank passes the same shape; this rank "
                     "(%d of %d) has %s, and the number of dims ranges from "
                     "%lld to %lld across the ranks\n"
                     "  hint: reduce per-rank results of a fixed shape "
                     "(sums, counts), not the rows of a shard",
                     what, pg->rank, pg->size, tg_shape_str(x, s),
                     (long long)lo[i], (long long)-hi_neg[i]);
        else
            tg_error(fn,
                     "the ranks disagree on the shape of %s\n"
                     "  rule: every rank passes the same shape; this rank "
                     "(%d of %d) has %s, and dim %d ranges from %lld to %lld "
                     "across the ranks\n"
                     "  hint: reduce per-rank results of a fixed shape "
                     "(sums, counts), not the rows of a shard",
                     what, pg->rank, pg->size, tg_shape_str(x, s),
                     i - SIG_SHAPE, (long long)lo[i], (long long)-hi_neg[i]);
        return -1;
    }
    if (lo[SIG_EXTRA] != -hi_neg[SIG_EXTRA] && call == TG_DIST_ALL_REDUCE) {
        tg_error(fn,
                 "the ranks pass different reduce ops\n"
                 "  rule: every rank passes the same op; this rank (%d of %d) "
                 "passed %lld, the ranks %lld to %lld\n"
                 "  hint: TG_REDUCE_SUM = 0, TG_REDUCE_MEAN = 1",
                 pg->rank, pg->size, (long long)mine[SIG_EXTRA],
                 (long long)lo[SIG_EXTRA], (long long)-hi_neg[SIG_EXTRA]);
        return -1;
    }
    if (lo[SIG_EXTRA] != -hi_neg[SIG_EXTRA]) {
        tg_error(fn,
                 "the ranks pass different roots\n"
                 "  rule: every rank passes the same root; this rank (%d of "
                 "%d) passed %lld, the ranks %lld to %lld\n"
                 "  hint: the root is the rank whose values every rank "
                 "receives: a constant, the same everywhere",
                 pg->rank, pg->size, (long long)mine[SIG_EXTRA],
                 (long long)lo[SIG_EXTRA], (long long)-hi_neg[SIG_EXTRA]);
        return -1;
    }
    return 0;
}

/* --------------------------------------------------------------- helpers */

MPI_Datatype tg_dist_mpi_type(tg_dtype dtype)
{
    switch (dtype) {
    case TG_FLOAT32: return MPI_FLOAT;
    case TG_FLOAT64: return MPI_DOUBLE;
    default: return MPI_INT64_T;
    }
}

/* MPI counts are int: large buffers go in pieces of at most 2^30. */
#define CHUNK (INT64_C(1) << 30)

int tg_dist_sum_in_place(const tg_process_group *pg, const char *fn,
                         void *data, int64_t n, tg_dtype dtype)
{
    size_t item = tg_dtype_size(dtype);
    for (int64_t at = 0; at < n; at += CHUNK) {
        int64_t len = n - at < CHUNK ? n - at : CHUNK;
        int rc = MPI_Allreduce(MPI_IN_PLACE, (char *)data + at * item,
                               (int)len, tg_dist_mpi_type(dtype), MPI_SUM,
                               pg->comm);
        if (rc != MPI_SUCCESS) {
            tg_dist_mpi_error(fn, "MPI_Allreduce", rc);
            return -1;
        }
    }
    return 0;
}

/* x's elements in a new contiguous tensor of the same shape and dtype,
 * with no history. */
static tg_tensor *plain_copy(const tg_tensor *x)
{
    tg_tensor *out = tg_empty(x->shape, x->ndim, x->dtype);
    if (out && tg_copy_(out, x) != 0) {
        tg_release(out);
        return NULL;
    }
    return out;
}

/* ------------------------------------------------------------ collectives */

tg_tensor *tg_all_reduce(tg_process_group *pg, const tg_tensor *x,
                         tg_reduce_op op)
{
    static const char *fn = "tg_all_reduce";
    if (!pg)
        return NULL;
    bool ok = true;
    if (x && op != TG_REDUCE_SUM && op != TG_REDUCE_MEAN) {
        tg_error(fn,
                 "unknown reduce op %d\n"
                 "  rule: op is TG_REDUCE_SUM or TG_REDUCE_MEAN",
                 (int)op);
        ok = false;
    } else if (x && op == TG_REDUCE_MEAN && !tg_dtype_is_float(x->dtype)) {
        tg_error(fn,
                 "cannot take the mean of an int64 tensor\n"
                 "  rule: TG_REDUCE_MEAN divides by the number of ranks, "
                 "which needs a float dtype\n"
                 "  hint: use TG_REDUCE_SUM, or convert x with tg_to_dtype "
                 "first");
        ok = false;
    }
    if (tg_dist_agree(pg, fn, TG_DIST_ALL_REDUCE, x, op, ok, "x") != 0)
        return NULL;
    tg_tensor *out = plain_copy(x);
    if (!out)
        return NULL;
    if (tg_dist_sum_in_place(pg, fn, out->storage->data, out->numel,
                             out->dtype) != 0) {
        tg_release(out);
        return NULL;
    }
    if (op == TG_REDUCE_MEAN) {
        int64_t n = out->numel;
        if (out->dtype == TG_FLOAT32) {
            float *p = tg_data_f32(out);
            for (int64_t i = 0; i < n; i++)
                p[i] = (float)(p[i] / (double)pg->size);
        } else {
            double *p = tg_data_f64(out);
            for (int64_t i = 0; i < n; i++)
                p[i] /= pg->size;
        }
    }
    return out;
}

tg_tensor *tg_all_gather(tg_process_group *pg, const tg_tensor *x)
{
    static const char *fn = "tg_all_gather";
    if (!pg)
        return NULL;
    bool ok = true;
    if (x && x->ndim == TG_MAX_DIMS) {
        tg_error(fn,
                 "cannot stack tensors of %d dims\n"
                 "  rule: the result has one dim more than x, at most %d",
                 x->ndim, TG_MAX_DIMS);
        ok = false;
    } else if (x && x->numel > INT_MAX) {
        tg_error(fn,
                 "x has %lld elements, more than one MPI call can move\n"
                 "  rule: at most %d elements per rank",
                 (long long)x->numel, INT_MAX);
        ok = false;
    }
    if (tg_dist_agree(pg, fn, TG_DIST_ALL_GATHER, x, 0, ok, "x") != 0)
        return NULL;
    int64_t shape[TG_MAX_DIMS];
    shape[0] = pg->size;
    memcpy(shape + 1, x->shape, (size_t)x->ndim * sizeof *shape);
    tg_tensor *out = tg_empty(shape, x->ndim + 1, x->dtype);
    tg_tensor *mine = plain_copy(x);
    if (!out || !mine) {
        tg_release(out);
        tg_release(mine);
        return NULL;
    }
    if (x->numel > 0) {
        MPI_Datatype t = tg_dist_mpi_type(x->dtype);
        int rc = MPI_Allgather(mine->storage->data, (int)x->numel, t,
                               out->storage->data, (int)x->numel, t, pg->comm);
        if (rc != MPI_SUCCESS) {
            tg_dist_mpi_error(fn, "MPI_Allgather", rc);
            tg_release(out);
            out = NULL;
        }
    }
    tg_release(mine);
    return out;
}

int tg_broadcast_(tg_process_group *pg, tg_tensor *x, int root)
{
    static const char *fn = "tg_broadcast_";
    if (!pg)
        return -1;
    bool ok = true;
    if (x && (root < 0 || root >= pg->size)) {
        tg_error(fn,
                 "root %d is not a rank of the group\n"
                 "  rule: 0 <= root < size, and the group has %d ranks",
                 root, pg->size);
        ok = false;
    } else if (x && !tg_write_all_allowed(fn, x)) {
        ok = false;
    }
    if (tg_dist_agree(pg, fn, TG_DIST_BROADCAST, x, root, ok, "x") != 0)
        return -1;
    if (x->numel == 0)
        return 0;
    tg_tensor *buf = plain_copy(x);
    if (!buf)
        return -1;
    int rc = MPI_SUCCESS;
    for (int64_t at = 0; at < buf->numel && rc == MPI_SUCCESS; at += CHUNK) {
        int64_t len = buf->numel - at < CHUNK ? buf->numel - at : CHUNK;
        rc = MPI_Bcast((char *)buf->storage->data +
                           at * (int64_t)tg_dtype_size(buf->dtype),
                       (int)len, tg_dist_mpi_type(buf->dtype), root, pg->comm);
    }
    int status = 0;
    if (rc != MPI_SUCCESS) {
        tg_dist_mpi_error(fn, "MPI_Bcast", rc);
        status = -1;
    } else if (pg->rank != root) {
        status = tg_copy_(x, buf); // bumps x's version, as any write
    }
    tg_release(buf);
    return status;
}
