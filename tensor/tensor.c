/*
 * tensor/tensor.c - reference-counted storage and tensors: lifetime,
 * creation, element access, fill and copy.
 *
 * Views and differentiable operations are elsewhere (autograd/ops/); this
 * file only makes tensors, shares storage and moves elements.
 */
#include "debug.h"
#include "internal.h"

#include <float.h>
#include <math.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

/* Atomic because every thread makes and frees tensors; relaxed because a
 * count publishes nothing (no data is read because of its value). Relaxed
 * also keeps ThreadSanitizer useful: an ordered read-modify-write for every
 * tensor made would order the threads' work and hide their races. */
static _Atomic int64_t live_tensors;
static _Atomic int64_t live_storages;
static _Atomic int64_t live_bytes, peak_bytes; // of tensor storage
#define COUNT_ADD(c, n) \
    atomic_fetch_add_explicit(&(c), (n), memory_order_relaxed)

/* Counts nbytes more (or fewer, when negative) of storage alive and raises
 * the peak when the new total is above it. */
static void bytes_add(int64_t nbytes)
{
    int64_t now = COUNT_ADD(live_bytes, nbytes) + nbytes;
    int64_t peak = atomic_load_explicit(&peak_bytes, memory_order_relaxed);
    while (now > peak &&
           !atomic_compare_exchange_weak_explicit(&peak_bytes, &peak, now,
                                                  memory_order_relaxed,
                                                  memory_order_relaxed))
        ;
}

int64_t tg_live_tensors(void)
{
    return atomic_load_explicit(&live_tensors, memory_order_relaxed);
}

int64_t tg_live_storages(void)
{
    return atomic_load_explicit(&live_storages, memory_order_relaxed);
}

int64_t tg_live_bytes(void)
{
    return atomic_load_explicit(&live_bytes, memory_order_relaxed);
}

int64_t tg_peak_bytes(void)
{
    return atomic_load_explicit(&peak_bytes, memory_order_relaxed);
}

void tg_reset_peak_bytes(void)
{
    atomic_store_explicit(&peak_bytes, tg_live_bytes(),
                          memory_order_relaxed);
}

/* A new tensor and its storage are ONE allocation, laid out as
 *
 *     [storage header | tensor header | padding | elements]
 *      STORAGE_HEAD     TENSOR_HEAD               64-byte aligned
 *
 * because a small op's cost is mostly its allocations: one malloc instead
 * of three is most of the per-op overhead saved (and plain malloc, padded
 * to align the elements by hand, costs less than aligned_alloc). The
 * block belongs to the storage. The tensor made with it holds one of the
 * storage's references like any view, and when it dies before its views
 * it only drops that reference: its header stays in the block (a few
 * hundred bytes) until the last view goes, and then the block is freed in
 * one piece. Views are tensors of their own allocation (tensor_shell). */
#define STORAGE_HEAD ((sizeof(tg_storage) + 15) / 16 * 16)
#define TENSOR_HEAD ((sizeof(tg_tensor) + 15) / 16 * 16)
#define DATA_ALIGN 64

/* The bytes of the block of a tensor of nbytes of elements: the elements
 * start at the first multiple of DATA_ALIGN after the headers
 * (DATA_ALIGN - 1 bytes of room) and take whole multiples of it. */
static size_t block_size(size_t nbytes)
{
    size_t padded = (nbytes + DATA_ALIGN - 1) / DATA_ALIGN * DATA_ALIGN;
    return STORAGE_HEAD + TENSOR_HEAD + DATA_ALIGN - 1 + padded;
}

/* Whether t is the tensor header inside its storage's block. */
static bool tensor_in_block(const tg_tensor *t)
{
    return (const char *)t == (const char *)t->storage + STORAGE_HEAD;
}

static void storage_release(tg_storage *s)
{
    if (--s->refcount > 0)
        return;
    bytes_add(-(int64_t)s->nbytes);
    tg_block_free(s, block_size(s->nbytes)); // header, tensor, elements
    COUNT_ADD(live_storages, -1);
}

/* Creation numbers, per thread: a single-threaded program numbers its
 * tensors 1, 2, 3, ... the same way on every run. */
static _Thread_local uint64_t tensors_made;

/* tensor_init writes every field of the header by name. A field added to
 * tg_tensor changes its size and stops the build here until tensor_init
 * gives it its fresh value (and tests/tensor/test_header_reuse.c checks
 * it); then update the size. Checked on LP64 targets. */
#if UINTPTR_MAX == UINT64_MAX
_Static_assert(sizeof(tg_tensor) == 216,
               "a field was added to tg_tensor: set it in tensor_init");
#endif

/* debug: the record of a tracked header (tg_debug_header_new), else NULL. */
static void tensor_init(tg_tensor *t, tg_dtype dtype, const int64_t *shape,
                        int ndim, struct tg_tensor_debug *debug)
{
    /* Every field written once, the unused dims as zeros: a memset of the
     * whole header first compiles to a `rep stos`, whose start-up alone
     * costs more than these stores (a tensor is made about 50 times a
     * tiny MLP step). */
    t->dtype = dtype;
    t->ndim = ndim;
    /* A zero size anywhere makes numel 0 before any large product can
     * overflow, e.g. (2^40, 2^40, 0). */
    bool empty = false;
    for (int d = 0; d < TG_MAX_DIMS; d++) {
        t->shape[d] = d < ndim ? shape[d] : 0;
        t->strides[d] = 0;
        empty = empty || (d < ndim && shape[d] == 0);
    }
    int64_t numel = 1;
    for (int d = 0; d < ndim && !empty; d++)
        numel *= shape[d];
    t->offset = 0;
    t->numel = empty ? 0 : numel;
    t->storage = NULL;
    t->refcount = 1;
    t->requires_grad = false;
    t->retains_grad = false;
    t->grad = NULL;
    t->grad_fn = NULL;
    t->serial = ++tensors_made;
    t->made_by = NULL;
    t->debug = debug;
    COUNT_ADD(live_tensors, 1);
}

/* A tensor header of its own, for a view of another tensor's storage. */
static tg_tensor *tensor_shell(tg_dtype dtype, const int64_t *shape,
                               int ndim)
{
    if (tg_debug_tracking()) {
        tg_tensor *t = tg_debug_header_new();
        if (t)
            tensor_init(t, dtype, shape, ndim, t->debug);
        return t;
    }
    tg_tensor *t = tg_block_alloc(sizeof *t); // the thread's free lists
    if (t)
        tensor_init(t, dtype, shape, ndim, NULL);
    return t;
}

tg_tensor *tg_alloc(const int64_t *shape, int ndim, tg_dtype dtype)
{
    /* The element count as tensor_init computes it; callers checked that
     * it stays below TG_MAX_NUMEL, so the byte count cannot overflow. */
    size_t numel = 1;
    for (int d = 0; d < ndim; d++)
        numel = shape[d] == 0 ? 0 : numel * (size_t)shape[d];
    size_t nbytes = numel * tg_dtype_size(dtype);
    char *block = tg_block_alloc(block_size(nbytes));
    /* A tracked tensor's header is apart from the block, so that it can
     * outlive it (debug.c); its room in the block stays unused. */
    tg_tensor *head = NULL;
    if (block && tg_debug_tracking() && !(head = tg_debug_header_new())) {
        tg_block_free(block, block_size(nbytes));
        block = NULL;
    }
    if (!block) {
        char s[TG_SHAPE_STR_MAX];
        tg_error("tg_alloc",
                 "out of memory allocating a %s tensor of shape %s",
                 tg_dtype_name(dtype), tg_shape_format(shape, ndim, s));
        return NULL;
    }
    uintptr_t data = (uintptr_t)(block + STORAGE_HEAD + TENSOR_HEAD);
    data = (data + DATA_ALIGN - 1) / DATA_ALIGN * DATA_ALIGN;
    tg_storage *st = (tg_storage *)block;
    *st = (tg_storage){.data = (void *)data, .nbytes = nbytes, .refcount = 1};
    COUNT_ADD(live_storages, 1);
    bytes_add((int64_t)nbytes);
    tg_tensor *t = head ? head : (tg_tensor *)(block + STORAGE_HEAD);
    tensor_init(t, dtype, shape, ndim, head ? head->debug : NULL);
    t->storage = st;
    tg_contiguous_strides(shape, ndim, t->strides);
    return t;
}

tg_tensor *tg_alloc_from_f64(const double *v, const int64_t *shape, int ndim,
                             tg_dtype dtype)
{
    tg_tensor *t = tg_alloc(shape, ndim, dtype);
    for (int64_t i = 0; t && i < t->numel; i++)
        tg_store_contiguous(t, i, v[i]);
    return t;
}

tg_tensor *tg_view_make(const tg_tensor *base, const int64_t *shape,
                        const int64_t *strides, int ndim, int64_t offset)
{
    tg_tensor *t = tensor_shell(base->dtype, shape, ndim);
    if (!t) {
        tg_error("tg_view", "out of memory");
        return NULL;
    }
    for (int d = 0; d < ndim; d++)
        t->strides[d] = strides[d];
    t->offset = offset;
    t->storage = base->storage;
    t->storage->refcount++;
    return t;
}

/* Set by every thread that records (always to the same static constant
 * table, so the pointer orders nothing: relaxed, as the counts above). */
static _Atomic(const tg_autograd_hooks *) autograd_hooks;

void tg_set_autograd_hooks(const tg_autograd_hooks *hooks)
{
    atomic_store_explicit(&autograd_hooks, hooks, memory_order_relaxed);
}

const tg_autograd_hooks *tg_get_autograd_hooks(void)
{
    return atomic_load_explicit(&autograd_hooks, memory_order_relaxed);
}

int tg_expanded_dim(const tg_tensor *x)
{
    for (int d = 0; d < x->ndim; d++)
        if (x->shape[d] > 1 && x->strides[d] == 0)
            return d;
    return -1;
}

bool tg_write_all_allowed(const char *fn, const tg_tensor *x)
{
    tg_check_alive(fn, x);
    /* A tensor with no elements has nothing to write twice. */
    int d = x->numel > 0 ? tg_expanded_dim(x) : -1;
    if (d >= 0) {
        char s[TG_SHAPE_STR_MAX];
        tg_error(fn,
                 "cannot write in place into an expanded tensor of shape "
                 "%s (dim %d has stride 0)\n"
                 "  rule: its %lld elements along dim %d are one memory "
                 "location, so the last write would win (PyTorch refuses "
                 "too)\n"
                 "  hint: write into a copy (tg_contiguous(x)), or into the "
                 "tensor before it was expanded",
                 tg_shape_str(x, s), d, (long long)x->shape[d], d);
        return false;
    }
    return tg_write_allowed(fn, x);
}

bool tg_write_allowed(const char *fn, const tg_tensor *x)
{
    tg_check_alive(fn, x);
    const tg_autograd_hooks *h = tg_get_autograd_hooks();
    if (!x->requires_grad || !h || !h->grad_enabled())
        return true;
    if (!x->grad_fn) {
        tg_error(fn,
                 "cannot write in place into a leaf that requires grad\n"
                 "  rule: the tape does not record in-place writes, so "
                 "gradients would no longer match the values (PyTorch "
                 "refuses too)\n"
                 "  hint: update parameters inside tg_no_grad_begin() / "
                 "tg_no_grad_end(), as an optimiser step does");
        return false;
    }
    tg_error(fn,
             "cannot write in place into a tensor made by %s\n"
             "  rule: the tape does not record in-place writes, so "
             "backward would differentiate values that are gone\n"
             "  hint: build a new tensor instead (tg_where, or tg_mul by "
             "a mask), or write into tg_detach(x) if no gradient should "
             "flow through it",
             h->grad_fn_name(x->grad_fn));
    return false;
}

tg_tensor *tg_retain(tg_tensor *t)
{
    if (t) {
        tg_check_alive("tg_retain", t);
        t->refcount++;
    }
    return t;
}

void (tg_release)(tg_tensor *t)
{
    tg_release_at(t, NULL, 0, NULL);
}

void tg_release_at(tg_tensor *t, const char *file, int line,
                   const char *func)
{
    if (!t)
        return;
    tg_check_alive("tg_release", t); // released already: a double release
    if (--t->refcount > 0)
        return;
    if (t->grad_fn && !tg_get_autograd_hooks()->tensor_freed(t)) {
        t->refcount = 1; // refused (the hook said why): the caller keeps it
        return;
    }
    tg_release(t->grad);
    COUNT_ADD(live_tensors, -1);
    if (t->debug) {
        storage_release(t->storage);
        tg_debug_header_free(t, file, line, func);
        return;
    }
    if (tensor_in_block(t)) {
        storage_release(t->storage); // frees t too when it was the last
        return;
    }
    storage_release(t->storage);
    tg_block_free(t, sizeof *t);
}

/* ------------------------------------------------------------------ create */

static bool dtype_ok(const char *fn, tg_dtype dtype)
{
    if (dtype == TG_FLOAT32 || dtype == TG_FLOAT64 || dtype == TG_INT64)
        return true;
    tg_error(fn,
             "unknown dtype %d\n"
             "  rule: dtype must be TG_FLOAT32, TG_FLOAT64 or TG_INT64",
             (int)dtype);
    return false;
}

/* Whether value can be stored in a dtype element without becoming another
 * number: int64 has no NaN or infinity and holds [-2^63, 2^63); float32
 * overflows past FLT_MAX (to infinity). PyTorch refuses these too ("value
 * cannot be converted to type int64_t without overflow"). */
static bool value_fits(const char *fn, double value, tg_dtype dtype)
{
    const double two63 = 9223372036854775808.0; // 2^63, exact in double
    if (dtype == TG_INT64 && !(value >= -two63 && value < two63)) {
        tg_error(fn,
                 "cannot store %g in an int64 tensor\n"
                 "  rule: int64 holds integers in [-2^63, 2^63), and has no "
                 "NaN or infinity\n"
                 "  hint: use TG_FLOAT32 or TG_FLOAT64 for this value",
                 value);
        return false;
    }
    if (dtype == TG_FLOAT32 && isfinite(value) && fabs(value) > FLT_MAX) {
        tg_error(fn,
                 "cannot store %g in a float32 tensor\n"
                 "  rule: a finite float32 has |value| <= %g\n"
                 "  hint: use TG_FLOAT64 for this value",
                 value, (double)FLT_MAX);
        return false;
    }
    return true;
}

static tg_tensor *checked_alloc(const char *fn, const int64_t *shape,
                                int ndim, tg_dtype dtype)
{
    if (!dtype_ok(fn, dtype) || tg_shape_check(fn, shape, ndim) < 0)
        return NULL;
    tg_tensor *t = tg_alloc(shape, ndim, dtype);
    if (t)
        t->made_by = fn;
    return t;
}

/* Writes value into every element of a contiguous tensor. */
static void fill_contiguous(tg_tensor *t, double value)
{
    char *p = tg_base_ptr(t);
    switch (t->dtype) {
    case TG_FLOAT32:
        for (int64_t i = 0; i < t->numel; i++)
            ((float *)p)[i] = (float)value;
        break;
    case TG_FLOAT64:
        for (int64_t i = 0; i < t->numel; i++)
            ((double *)p)[i] = value;
        break;
    case TG_INT64:
        for (int64_t i = 0; i < t->numel; i++)
            ((int64_t *)p)[i] = tg_float_to_int64(value);
        break;
    }
}

tg_tensor *tg_empty(const int64_t *shape, int ndim, tg_dtype dtype)
{
    return checked_alloc("tg_empty", shape, ndim, dtype);
}

static tg_tensor *filled(const char *fn, const int64_t *shape, int ndim,
                         double value, tg_dtype dtype)
{
    tg_tensor *t = checked_alloc(fn, shape, ndim, dtype);
    if (t)
        fill_contiguous(t, value);
    return t;
}

tg_tensor *tg_zeros(const int64_t *shape, int ndim, tg_dtype dtype)
{
    return filled("tg_zeros", shape, ndim, 0.0, dtype);
}

tg_tensor *tg_ones(const int64_t *shape, int ndim, tg_dtype dtype)
{
    return filled("tg_ones", shape, ndim, 1.0, dtype);
}

tg_tensor *tg_full(const int64_t *shape, int ndim, double value,
                   tg_dtype dtype)
{
    if (!dtype_ok("tg_full", dtype) || !value_fits("tg_full", value, dtype))
        return NULL;
    return filled("tg_full", shape, ndim, value, dtype);
}

tg_tensor *tg_scalar(double value, tg_dtype dtype)
{
    /* As torch.tensor(value, dtype=...): a float32 past FLT_MAX becomes
     * infinity (the scalar ops rely on it), but int64 has no value for NaN
     * or infinity and is refused. */
    if (dtype == TG_INT64 && !value_fits("tg_scalar", value, dtype))
        return NULL;
    return filled("tg_scalar", NULL, 0, value, dtype);
}

tg_tensor *tg_from_array(const void *data, const int64_t *shape, int ndim,
                         tg_dtype dtype)
{
    tg_tensor *t = checked_alloc("tg_from_array", shape, ndim, dtype);
    if (!t)
        return NULL;
    if (!data && t->numel > 0) {
        tg_release(t);
        tg_error("tg_from_array", "data is NULL\n"
                                  "  hint: pass an array of numel elements "
                                  "of the given dtype");
        return NULL;
    }
    if (t->numel > 0)
        memcpy(t->storage->data, data,
               (size_t)t->numel * tg_dtype_size(dtype));
    return t;
}

tg_tensor *tg_arange(double start, double end, double step, tg_dtype dtype)
{
    if (!dtype_ok("tg_arange", dtype))
        return NULL;
    if (!isfinite(start) || !isfinite(end) || !isfinite(step) ||
        step == 0 || (step > 0 && end < start) ||
        (step < 0 && end > start)) {
        tg_error("tg_arange",
                 "cannot make a range from %g to %g in steps of %g\n"
                 "  rule: step must be finite, nonzero, and point from "
                 "start towards end",
                 start, end, step);
        return NULL;
    }
    double count = ceil((end - start) / step);
    if (count > 9.0e15) {
        tg_error("tg_arange", "a range from %g to %g in steps of %g has "
                              "too many elements (%g)",
                 start, end, step, count);
        return NULL;
    }
    int64_t n = (int64_t)count;
    tg_tensor *t = checked_alloc("tg_arange", &n, 1, dtype);
    if (!t)
        return NULL;
    char *p = tg_base_ptr(t);
    for (int64_t i = 0; i < n; i++) {
        double v = start + (double)i * step;
        if (dtype == TG_FLOAT32)
            ((float *)p)[i] = (float)v;
        else if (dtype == TG_FLOAT64)
            ((double *)p)[i] = v;
        else
            ((int64_t *)p)[i] = tg_float_to_int64(v);
    }
    return t;
}

tg_tensor *tg_linspace(double start, double end, int64_t steps,
                       tg_dtype dtype)
{
    if (steps < 0) {
        tg_error("tg_linspace", "steps is %lld\n"
                                "  rule: steps must be >= 0",
                 (long long)steps);
        return NULL;
    }
    tg_tensor *t = checked_alloc("tg_linspace", &steps, 1, dtype);
    if (!t)
        return NULL;
    /* As PyTorch: the first half counts up from start, the second half down
     * from end, so both ends are exact. */
    double step = steps > 1 ? (end - start) / (double)(steps - 1) : 0.0;
    int64_t half = steps / 2;
    char *p = tg_base_ptr(t);
    for (int64_t i = 0; i < steps; i++) {
        double v = (i < half || steps == 1)
                       ? start + step * (double)i
                       : end - step * (double)(steps - i - 1);
        if (dtype == TG_FLOAT32)
            ((float *)p)[i] = (float)v;
        else if (dtype == TG_FLOAT64)
            ((double *)p)[i] = v;
        else
            ((int64_t *)p)[i] = tg_float_to_int64(v);
    }
    return t;
}

tg_tensor *tg_eye(int64_t n, int64_t m, tg_dtype dtype)
{
    tg_tensor *t = filled("tg_eye", (int64_t[]){n, m}, 2, 0.0, dtype);
    if (!t)
        return NULL;
    for (int64_t i = 0; i < n && i < m; i++)
        tg_set(t, (int64_t[]){i, i}, 2, 1.0);
    return t;
}

tg_tensor *tg_empty_like(const tg_tensor *x)
{
    tg_check_alive("tg_empty_like", x);
    tg_tensor *t = x ? tg_alloc(x->shape, x->ndim, x->dtype) : NULL;
    if (t)
        t->made_by = "tg_empty_like";
    return t;
}

tg_tensor *tg_zeros_like(const tg_tensor *x)
{
    tg_check_alive("tg_zeros_like", x);
    return x ? tg_zeros(x->shape, x->ndim, x->dtype) : NULL;
}

tg_tensor *tg_ones_like(const tg_tensor *x)
{
    tg_check_alive("tg_ones_like", x);
    return x ? tg_ones(x->shape, x->ndim, x->dtype) : NULL;
}

tg_tensor *tg_full_like(const tg_tensor *x, double value)
{
    tg_check_alive("tg_full_like", x);
    if (!x || !value_fits("tg_full_like", value, x->dtype))
        return NULL;
    return tg_full(x->shape, x->ndim, value, x->dtype);
}

/* ----------------------------------------------------------------- inspect */

bool tg_is_contiguous(const tg_tensor *x)
{
    tg_check_alive("tg_is_contiguous", x);
    if (!x)
        return false;
    if (x->numel == 0) // nothing to lay out: any strides will do (PyTorch)
        return true;
    int64_t expected = 1;
    for (int d = x->ndim - 1; d >= 0; d--) {
        if (x->shape[d] == 1)
            continue;
        if (x->strides[d] != expected)
            return false;
        expected *= x->shape[d];
    }
    return true;
}

int64_t tg_size(const tg_tensor *x, int dim)
{
    tg_check_alive("tg_size", x);
    if (!x)
        return -1;
    int d = tg_dim_normalize("tg_size", dim, x->ndim);
    if (d < 0)
        return -1;
    return x->ndim == 0 ? 1 : x->shape[d];
}

/* Element offset (in elements from storage start) of flat C-order index i. */
static int64_t flat_offset(const tg_tensor *x, int64_t i)
{
    int64_t off = x->offset;
    for (int d = x->ndim - 1; d >= 0; d--) {
        off += (i % x->shape[d]) * x->strides[d];
        i /= x->shape[d];
    }
    return off;
}

static double read_at(const tg_tensor *x, int64_t off)
{
    const char *base = x->storage->data;
    switch (x->dtype) {
    case TG_FLOAT32: return ((const float *)base)[off];
    case TG_FLOAT64: return ((const double *)base)[off];
    case TG_INT64: return (double)((const int64_t *)base)[off];
    }
    return NAN;
}

static void write_at(tg_tensor *x, int64_t off, double v)
{
    char *base = x->storage->data;
    switch (x->dtype) {
    case TG_FLOAT32: ((float *)base)[off] = (float)v; break;
    case TG_FLOAT64: ((double *)base)[off] = v; break;
    case TG_INT64: ((int64_t *)base)[off] = tg_float_to_int64(v); break;
    }
}

double tg_read_flat(const tg_tensor *x, int64_t i)
{
    return read_at(x, flat_offset(x, i));
}

double tg_item(const tg_tensor *x)
{
    tg_check_alive("tg_item", x);
    if (!x)
        return NAN;
    if (x->numel != 1) {
        char s[TG_SHAPE_STR_MAX];
        tg_error("tg_item",
                 "a tensor of shape %s has %lld elements\n"
                 "  rule: tg_item needs exactly one element\n"
                 "  hint: reduce first (tg_sum, tg_mean) or pick one with "
                 "tg_get",
                 tg_shape_str(x, s), (long long)x->numel);
        return NAN;
    }
    return read_at(x, flat_offset(x, 0));
}

/* Element offset of a full index, or -1 with an error naming fn. */
static int64_t index_offset(const char *fn, const tg_tensor *x,
                            const int64_t *index, int nindex)
{
    char s[TG_SHAPE_STR_MAX];
    if (nindex > 0 && !index) {
        tg_error(fn,
                 "index is NULL but nindex is %d\n"
                 "  hint: pass one index per dim, e.g. (int64_t[]){0, 1}",
                 nindex);
        return -1;
    }
    if (nindex != x->ndim) {
        tg_error(fn,
                 "got %d indices for a tensor of shape %s\n"
                 "  rule: give one index per dim (%d)",
                 nindex, tg_shape_str(x, s), x->ndim);
        return -1;
    }
    int64_t off = x->offset;
    for (int d = 0; d < nindex; d++) {
        int64_t i = index[d] < 0 ? index[d] + x->shape[d] : index[d];
        if (i < 0 || i >= x->shape[d]) {
            tg_error(fn,
                     "index %lld is out of range for dim %d of a tensor of "
                     "shape %s\n"
                     "  rule: index must be in [%lld, %lld]",
                     (long long)index[d], d, tg_shape_str(x, s),
                     (long long)-x->shape[d], (long long)x->shape[d] - 1);
            return -1;
        }
        off += i * x->strides[d];
    }
    return off;
}

int tg_get(const tg_tensor *x, const int64_t *index, int nindex, double *out)
{
    tg_check_alive("tg_get", x);
    if (!x)
        return -1;
    if (!out) {
        tg_error("tg_get", "out is NULL\n"
                           "  hint: pass the address of a double: "
                           "tg_get(x, index, nindex, &v)");
        return -1;
    }
    int64_t off = index_offset("tg_get", x, index, nindex);
    if (off < 0)
        return -1;
    *out = read_at(x, off);
    return 0;
}

int tg_set(tg_tensor *x, const int64_t *index, int nindex, double value)
{
    tg_check_alive("tg_set", x);
    if (!x || !tg_write_allowed("tg_set", x) ||
        !value_fits("tg_set", value, x->dtype))
        return -1;
    int64_t off = index_offset("tg_set", x, index, nindex);
    if (off < 0)
        return -1;
    write_at(x, off, value);
    x->storage->version++;
    return 0;
}

static void *typed_data(const char *fn, const tg_tensor *x, tg_dtype want)
{
    tg_check_alive(fn, x);
    if (!x)
        return NULL;
    if (x->dtype != want) {
        tg_error(fn,
                 "the tensor is %s\n"
                 "  rule: %s reads %s tensors only\n"
                 "  hint: convert with tg_to_dtype(x, TG_%s) first",
                 tg_dtype_name(x->dtype), fn, tg_dtype_name(want),
                 want == TG_FLOAT32   ? "FLOAT32"
                 : want == TG_FLOAT64 ? "FLOAT64"
                                      : "INT64");
        return NULL;
    }
    return tg_base_ptr(x);
}

float *tg_data_f32(const tg_tensor *x)
{
    return typed_data("tg_data_f32", x, TG_FLOAT32);
}

double *tg_data_f64(const tg_tensor *x)
{
    return typed_data("tg_data_f64", x, TG_FLOAT64);
}

int64_t *tg_data_i64(const tg_tensor *x)
{
    return typed_data("tg_data_i64", x, TG_INT64);
}

int tg_to_f64_array(const tg_tensor *x, double *out)
{
    tg_check_alive("tg_to_f64_array", x);
    if (!x)
        return -1;
    if (!out) {
        tg_error("tg_to_f64_array", "out is NULL\n"
                                    "  hint: pass a double array of numel "
                                    "elements");
        return -1;
    }
    for (int64_t i = 0; i < x->numel; i++)
        out[i] = tg_read_flat(x, i);
    return 0;
}

/* ------------------------------------------------------------ fill, copy */

/* Converts one run of elements between any two dtypes. */
static void cast_loop(char **data, const int64_t *st, int64_t n, void *ctx)
{
    const tg_dtype *types = ctx; // {dst, src}
    if (types[0] == types[1] && st[0] == 1 && st[1] == 1) {
        /* A plain copy of a run. memmove: tg_copy_ lets a tensor be
         * copied onto itself (the same layout), where memcpy's arguments
         * would overlap. */
        memmove(data[0], data[1], (size_t)n * tg_dtype_size(types[0]));
        return;
    }
#define TG_CAST(TO, TI, CONVERT)                                            \
    for (int64_t i = 0; i < n; i++)                                         \
        ((TO *)data[0])[i * st[0]] = CONVERT(((const TI *)data[1])[i * st[1]]);
#define TG_PLAIN(v) (v)
#define TG_CAST_FROM(TO, FLOAT_CONVERT)                                     \
    switch (types[1]) {                                                     \
    case TG_FLOAT32: TG_CAST(TO, float, FLOAT_CONVERT) break;               \
    case TG_FLOAT64: TG_CAST(TO, double, FLOAT_CONVERT) break;              \
    case TG_INT64: TG_CAST(TO, int64_t, (TO)) break;                        \
    }
    switch (types[0]) {
    case TG_FLOAT32: TG_CAST_FROM(float, (float)) break;
    case TG_FLOAT64: TG_CAST_FROM(double, TG_PLAIN) break;
    case TG_INT64: TG_CAST_FROM(int64_t, tg_float_to_int64) break;
    }
#undef TG_PLAIN
#undef TG_CAST_FROM
#undef TG_CAST
}

/* dst <- src, src already known to broadcast to dst's shape. */
void tg_copy_unchecked(tg_tensor *dst, const tg_tensor *src)
{
    tg_iter it;
    tg_tensor *ops[2] = {dst, (tg_tensor *)src};
    tg_iter_init(&it, dst->shape, dst->ndim, 2, ops);
    tg_dtype types[2] = {dst->dtype, src->dtype};
    tg_iter_run(&it, cast_loop, types);
}

int tg_fill_(tg_tensor *x, double value)
{
    tg_check_alive("tg_fill_", x);
    if (!x || !tg_write_all_allowed("tg_fill_", x) ||
        !value_fits("tg_fill_", value, x->dtype))
        return -1;
    /* A fill needs no memory, so it cannot fail when memory runs out
     * (tg_zero_grad, which cannot report, and the last step of an update
     * that must not stop half way rely on it). A contiguous x (a grad
     * being zeroed) is written directly; any other layout gets the value
     * as a 0-d tensor on the stack, broadcast by the copy. */
    if (tg_is_contiguous(x)) {
        fill_contiguous(x, value);
        x->storage->version++;
        return 0;
    }
    union { float f32; double f64; int64_t i64; } cell;
    tg_storage storage = {.data = &cell, .nbytes = sizeof cell,
                          .refcount = 1};
    tg_tensor v = {.dtype = x->dtype, .numel = 1, .storage = &storage,
                   .refcount = 1};
    fill_contiguous(&v, value);
    tg_copy_unchecked(x, &v);
    x->storage->version++;
    return 0;
}

/* The bytes [first, last] of x's storage that its elements can touch
 * (strides are never negative). */
static void byte_span(const tg_tensor *x, int64_t *first, int64_t *last)
{
    int64_t size = (int64_t)tg_dtype_size(x->dtype);
    int64_t end = x->offset;
    for (int d = 0; d < x->ndim; d++)
        end += (x->shape[d] - 1) * x->strides[d];
    *first = x->offset * size;
    *last = end * size + size - 1;
}

/* Whether writing dst element by element could change an element of src
 * not yet read: the same storage with touching byte spans, unless both
 * have the very same layout (then each element is read before it is
 * written, and only by itself). */
static bool overlaps(const tg_tensor *dst, const tg_tensor *src)
{
    if (dst->storage != src->storage || dst->numel == 0 || src->numel == 0)
        return false;
    if (dst->dtype == src->dtype && dst->offset == src->offset &&
        dst->ndim == src->ndim &&
        memcmp(dst->shape, src->shape, sizeof(int64_t) * (size_t)dst->ndim) ==
            0 &&
        memcmp(dst->strides, src->strides,
               sizeof(int64_t) * (size_t)dst->ndim) == 0)
        return false;
    int64_t d0, d1, s0, s1;
    byte_span(dst, &d0, &d1);
    byte_span(src, &s0, &s1);
    return d0 <= s1 && s0 <= d1;
}

int tg_copy_(tg_tensor *dst, const tg_tensor *src)
{
    tg_check_alive("tg_copy_", dst);
    tg_check_alive("tg_copy_", src);
    if (!dst || !src || !tg_write_all_allowed("tg_copy_", dst))
        return -1;
    int64_t shape[TG_MAX_DIMS];
    int n;
    if (tg_broadcast_shape("tg_copy_", dst->shape, dst->ndim, src->shape,
                           src->ndim, shape, &n) < 0)
        return -1;
    if (n != dst->ndim ||
        memcmp(shape, dst->shape, sizeof(int64_t) * (size_t)n) != 0) {
        char s1[TG_SHAPE_STR_MAX], s2[TG_SHAPE_STR_MAX];
        tg_error("tg_copy_",
                 "cannot copy a tensor of shape %s into one of shape %s\n"
                 "  rule: src must broadcast to dst's shape without "
                 "growing it",
                 tg_shape_str(src, s1), tg_shape_str(dst, s2));
        return -1;
    }
    /* src and dst in the same memory: copying element by element would
     * read elements already overwritten (x[1:] = x[:-1] would smear x[0]),
     * so copy src out first. PyTorch refuses partial overlaps; a copy
     * gives the answer the assignment means. */
    tg_tensor *from = NULL;
    if (overlaps(dst, src)) {
        if (!(from = tg_alloc(src->shape, src->ndim, src->dtype)))
            return -1;
        tg_copy_unchecked(from, src);
    }
    tg_copy_unchecked(dst, from ? from : src);
    tg_release(from);
    dst->storage->version++;
    return 0;
}

tg_tensor *tg_contiguous_as(const tg_tensor *x, tg_dtype dtype)
{
    if (x->dtype == dtype && tg_is_contiguous(x))
        return tg_retain((tg_tensor *)x);
    tg_tensor *out = tg_alloc(x->shape, x->ndim, dtype);
    if (out)
        tg_copy_unchecked(out, x);
    return out;
}
