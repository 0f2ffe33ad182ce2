/*
 * tests/tensor/test_header_reuse.c - a tensor made in the block of one
 * just released starts with a fresh header.
 *
 * tensor.c writes each field of a new header instead of clearing the whole
 * header first, so a field it forgot would keep the value the block's last
 * tensor left there. With the free lists on (tensor/memory.c) the next
 * tensor of the same size gets exactly that block back, so these tests
 * first leave every field of a header set to something that is not its
 * fresh value, release it, make another in its place and check every
 * field. Both kinds of header: the one inside its storage's block
 * (tg_alloc, a new tensor) and a view's own (tensor_shell). Where the
 * lists are off (sanitizer builds, TG_BLOCK_CACHE=0, TG_DEBUG=1) the
 * block may not come back, and the checks hold all the same.
 */
#include "../common.h"

#include "../../tensor/internal.h"

#include <stdlib.h>
#include <string.h>

/* Every field a used tensor can have changed, changed: dims beyond its
 * ndim, strides, offset, grad, the autograd flags, made_by. */
static void dirty(tg_tensor *t)
{
    for (int d = 0; d < TG_MAX_DIMS; d++) {
        t->shape[d] = 7;
        t->strides[d] = 3;
    }
    t->offset = 5;
    t->requires_grad = true;
    t->retains_grad = true;
    t->made_by = "dirty";
}

/* The header of a tensor just made with this shape and ndim, and no
 * storage set yet (a view's storage and strides are its caller's). */
static void assert_fresh(const tg_tensor *t, const int64_t *shape, int ndim,
                         tg_dtype dtype, bool view)
{
    cr_assert_eq(t->dtype, dtype);
    cr_assert_eq(t->ndim, ndim);
    int64_t numel = 1;
    for (int d = 0; d < TG_MAX_DIMS; d++) {
        cr_assert_eq(t->shape[d], d < ndim ? shape[d] : 0,
                     "shape[%d] is %lld", d, (long long)t->shape[d]);
        if (d < ndim)
            numel *= shape[d];
        else
            cr_assert_eq(t->strides[d], 0, "strides[%d] is %lld", d,
                         (long long)t->strides[d]);
    }
    cr_assert_eq(t->numel, numel);
    if (!view)
        cr_assert_eq(t->offset, 0);
    cr_assert_eq(t->refcount, 1);
    cr_assert(!t->requires_grad);
    cr_assert(!t->retains_grad);
    cr_assert_null(t->grad);
    cr_assert_null(t->grad_fn);
    cr_assert_null(t->debug);
    cr_assert(t->serial > 0);
}

/* Whether freed small blocks come back (tensor/memory.c keeps them). */
static bool lists_on(void)
{
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
    return false;
#else
    const char *c = getenv(TG_BLOCK_CACHE), *d = getenv(TG_DEBUG);
    return !(c && strcmp(c, "0") == 0) && !(d && strcmp(d, "1") == 0);
#endif
}

TG_TEST(header_reuse, new_tensor_in_a_released_block)
{
    tg_tensor *old = tg_ones(TG_SHAPE(2, 3, 4), TG_FLOAT32);
    tg_tensor *grad = tg_zeros(TG_SHAPE(2, 3, 4), TG_FLOAT32);
    cr_assert(old && grad);
    dirty(old);
    /* What the release reads stays right: the storage, grad, grad_fn. */
    old->grad = grad; // released with old
    uint64_t serial = old->serial;
    void *where = old;
    tg_release(old);
    /* The same bytes, fewer dims: the dims beyond must read 0. */
    tg_tensor *t = tg_empty(TG_SHAPE(24), TG_FLOAT32);
    cr_assert(t);
    if (lists_on())
        cr_assert_eq((void *)t, where, "the block did not come back");
    assert_fresh(t, TG_SHAPE(24), TG_FLOAT32, false);
    cr_assert_eq(t->strides[0], 1);
    cr_assert_eq(t->offset, 0);
    cr_assert_str_eq(t->made_by, "tg_empty");
    cr_assert(t->serial > serial);
    tg_release(t);
}

TG_TEST(header_reuse, new_view_in_a_released_header)
{
    tg_tensor *base = tg_ones(TG_SHAPE(4, 6), TG_FLOAT64);
    cr_assert(base);
    tg_tensor *v = tg_transpose(base, 0, 1);
    cr_assert(v);
    /* Fields the release does not read. */
    for (int d = v->ndim; d < TG_MAX_DIMS; d++) {
        v->shape[d] = 9;
        v->strides[d] = 9;
    }
    v->requires_grad = v->retains_grad = true;
    v->made_by = "dirty";
    void *where = v;
    tg_release(v);
    tg_tensor *r = tg_reshape(base, TG_SHAPE(24));
    cr_assert(r);
    if (lists_on())
        cr_assert_eq((void *)r, where, "the header did not come back");
    assert_fresh(r, TG_SHAPE(24), TG_FLOAT64, true);
    cr_assert(!r->made_by || strcmp(r->made_by, "dirty") != 0,
              "made_by kept the old view's");
    tg_release(r);
    tg_release(base);
}
