/*
 * tests/autograd/test_view.c - the view ops (reshape, view, permute,
 * transpose, squeeze, unsqueeze, expand, broadcast_to, narrow, slice,
 * select) and the copy ops (contiguous, clone, to_dtype).
 *
 * What is checked: the exact shape, strides and offset of every view (the
 * numbers PyTorch 1.13 gives for the same call), that views share storage
 * and copies do not, that writes through a view reach the base, chains of
 * views on non-contiguous inputs against NumPy indexing
 * (scripts/reference/gen_view.py), 0-d and 0-size tensors, and every error
 * message. Views and copies move elements without arithmetic, so every
 * value comparison here is exact (rtol = atol = 0).
 */
#include "../common.h"

#include <math.h>
#include <stdint.h>

/* ----------------------------------------------------------------- helpers */

/* Asserts ndim, shape, strides and offset of t. */
static void check_layout(const tg_tensor *t, const int64_t *shape, int ndim,
                         const int64_t *strides, int64_t offset)
{
    cr_assert_not_null(t, "NULL tensor; last error: %s", tg_last_error());
    cr_assert_eq(t->ndim, ndim, "ndim %d, expected %d", t->ndim, ndim);
    for (int d = 0; d < ndim; d++) {
        cr_assert_eq(t->shape[d], shape[d], "shape[%d] = %lld, expected %lld",
                     d, (long long)t->shape[d], (long long)shape[d]);
        cr_assert_eq(t->strides[d], strides[d],
                     "strides[%d] = %lld, expected %lld", d,
                     (long long)t->strides[d], (long long)strides[d]);
    }
    cr_assert_eq(t->offset, offset, "offset %lld, expected %lld",
                 (long long)t->offset, (long long)offset);
}
#define CHECK_LAYOUT(t, shape, strides, offset)                             \
    check_layout((t), (const int64_t[])shape,                              \
                 (int)(sizeof((const int64_t[])shape) / sizeof(int64_t)),   \
                 (const int64_t[])strides, (offset))
#define S(...) {__VA_ARGS__}

static bool shares(const tg_tensor *a, const tg_tensor *b)
{
    return a && b && a->storage == b->storage;
}

/* arange(n) reshaped to shape, float32: element values name their flat
 * position, so any wrong re-indexing shows. */
static tg_tensor *arange_shaped(double n, const int64_t *shape, int ndim,
                                tg_dtype dtype)
{
    tg_tensor *a = tg_arange(0, n, 1, dtype);
    tg_tensor *r = tg_reshape(a, shape, ndim);
    tg_release(a);
    cr_assert_not_null(r);
    return r;
}

/* Asserts t holds exactly the given values in C order (any layout). */
static void check_values(const tg_tensor *t, const double *want, int64_t n)
{
    cr_assert_not_null(t, "NULL tensor; last error: %s", tg_last_error());
    cr_assert_eq(t->numel, n);
    double got[64];
    cr_assert(n <= 64);
    cr_assert_eq(tg_to_f64_array(t, got), 0);
    for (int64_t i = 0; i < n; i++)
        cr_assert(got[i] == want[i], "element %lld is %g, expected %g",
                  (long long)i, got[i], want[i]);
}
#define CHECK_VALUES(t, ...)                                                \
    check_values((t), (const double[]){__VA_ARGS__},                       \
                 (int64_t)(sizeof((const double[]){__VA_ARGS__}) /          \
                           sizeof(double)))

/* Compares with a NumPy fixture exactly: same elements, no arithmetic. */
static void check_ref(const tg_tensor *t, const char *name)
{
    tg_tensor *want = tg_test_load_ref(name);
    tg_assert_close(t, want, 0, 0); // exact: views do no arithmetic
    tg_release(want);
}

/* -------------------------------------------------------------- reshape */

TG_TEST(reshape, contiguous_input_gives_a_view)
{
    tg_tensor *x = tg_arange(0, 6, 1, TG_FLOAT32);
    tg_tensor *r = tg_reshape(x, TG_SHAPE(2, 3));
    CHECK_LAYOUT(r, S(2, 3), S(3, 1), 0);
    cr_assert(shares(r, x));
    CHECK_VALUES(r, 0, 1, 2, 3, 4, 5);
    /* Writing through the view writes into x. */
    cr_assert_eq(tg_set(r, (int64_t[]){1, 0}, 2, 42), 0);
    double v;
    tg_get(x, (int64_t[]){3}, 1, &v);
    cr_assert_eq(v, 42);
    tg_release(r);
    tg_release(x);
}

TG_TEST(reshape, infers_one_minus_one)
{
    tg_tensor *x = tg_arange(0, 24, 1, TG_FLOAT64);
    tg_tensor *a = tg_reshape(x, TG_SHAPE(-1, 4));
    tg_tensor *b = tg_reshape(x, TG_SHAPE(2, -1, 3));
    tg_tensor *c = tg_reshape(x, TG_SHAPE(-1));
    CHECK_LAYOUT(a, S(6, 4), S(4, 1), 0);
    CHECK_LAYOUT(b, S(2, 4, 3), S(12, 3, 1), 0);
    CHECK_LAYOUT(c, S(24), S(1), 0);
    tg_release(a);
    tg_release(b);
    tg_release(c);
    tg_release(x);
}

TG_TEST(reshape, transposed_input_copies)
{
    tg_tensor *x = arange_shaped(6, TG_SHAPE(2, 3), TG_FLOAT32);
    tg_tensor *t = tg_transpose(x, 0, 1); // (3, 2), strides (1, 3)
    tg_tensor *r = tg_reshape(t, TG_SHAPE(6));
    CHECK_LAYOUT(r, S(6), S(1), 0);
    cr_assert_not(shares(r, x));
    CHECK_VALUES(r, 0, 3, 1, 4, 2, 5);
    /* The copy is independent of x. */
    tg_set(r, (int64_t[]){0}, 1, -1);
    double v;
    tg_get(x, (int64_t[]){0, 0}, 2, &v);
    cr_assert_eq(v, 0);
    tg_release(r);
    tg_release(t);
    tg_release(x);
}

/* Splitting each dim of a transposed tensor (or adding size-1 dims) needs
 * no copy: strides exist. */
TG_TEST(reshape, transposed_input_views_when_strides_exist)
{
    tg_tensor *x = arange_shaped(6, TG_SHAPE(2, 3), TG_FLOAT32);
    tg_tensor *t = tg_transpose(x, 0, 1); // (3, 2), strides (1, 3)
    tg_tensor *r = tg_reshape(t, TG_SHAPE(3, 1, 2));
    CHECK_LAYOUT(r, S(3, 1, 2), S(1, 6, 3), 0); // PyTorch's strides
    cr_assert(shares(r, x));
    CHECK_VALUES(r, 0, 3, 1, 4, 2, 5);
    tg_release(r);
    tg_release(t);
    tg_release(x);
}

TG_TEST(reshape, narrowed_along_dim0_views)
{
    tg_tensor *x = arange_shaped(12, TG_SHAPE(4, 3), TG_FLOAT32);
    tg_tensor *n = tg_narrow(x, 0, 1, 2); // rows 1, 2: one block
    tg_tensor *r = tg_reshape(n, TG_SHAPE(3, 2));
    CHECK_LAYOUT(r, S(3, 2), S(2, 1), 3);
    cr_assert(shares(r, x));
    CHECK_VALUES(r, 3, 4, 5, 6, 7, 8);
    tg_release(r);
    tg_release(n);
    tg_release(x);
}

/* Columns 0..1 of a (4, 3): rows are 2-element blocks 3 apart. Keeping the
 * blocks intact is a view; merging them is a copy. */
TG_TEST(reshape, column_slice_views_or_copies)
{
    tg_tensor *x = arange_shaped(12, TG_SHAPE(4, 3), TG_FLOAT32);
    tg_tensor *c = tg_narrow(x, 1, 0, 2); // (4, 2), strides (3, 1)
    tg_tensor *v1 = tg_reshape(c, TG_SHAPE(2, 2, 2));
    tg_tensor *v2 = tg_reshape(c, TG_SHAPE(4, 2, 1));
    tg_tensor *cp = tg_reshape(c, TG_SHAPE(8));
    CHECK_LAYOUT(v1, S(2, 2, 2), S(6, 3, 1), 0);
    CHECK_LAYOUT(v2, S(4, 2, 1), S(3, 1, 1), 0);
    CHECK_LAYOUT(cp, S(8), S(1), 0);
    cr_assert(shares(v1, x));
    cr_assert(shares(v2, x));
    cr_assert_not(shares(cp, x));
    CHECK_VALUES(v1, 0, 1, 3, 4, 6, 7, 9, 10);
    CHECK_VALUES(cp, 0, 1, 3, 4, 6, 7, 9, 10);
    tg_release(v1);
    tg_release(v2);
    tg_release(cp);
    tg_release(c);
    tg_release(x);
}

/* A size-1 dim's stride is never used, so it must not split a block: here
 * the middle dim has stride 15 (x[:, ::5]) yet all 6 elements are still
 * one block. */
TG_TEST(reshape, size_one_dims_do_not_split_blocks)
{
    tg_tensor *x = arange_shaped(6, TG_SHAPE(2, 1, 3), TG_FLOAT32);
    tg_tensor *s = tg_slice(x, 1, 0, INT64_MAX, 5);
    CHECK_LAYOUT(s, S(2, 1, 3), S(3, 15, 1), 0);
    tg_tensor *a = tg_reshape(s, TG_SHAPE(6));
    tg_tensor *b = tg_view(s, TG_SHAPE(3, 2));
    CHECK_LAYOUT(a, S(6), S(1), 0);
    CHECK_LAYOUT(b, S(3, 2), S(2, 1), 0);
    cr_assert(shares(a, x) && shares(b, x));
    tg_release(a);
    tg_release(b);
    tg_release(s);
    tg_release(x);
}

TG_TEST(reshape, rows_and_columns_against_numpy)
{
    tg_tensor *x = arange_shaped(60, TG_SHAPE(6, 10), TG_FLOAT64);
    tg_tensor *rows = tg_slice(x, 0, 1, 5, 1);
    tg_tensor *rr = tg_reshape(rows, TG_SHAPE(5, 8));
    tg_tensor *cols = tg_slice(x, 1, 2, 7, 1);
    tg_tensor *cr = tg_reshape(cols, TG_SHAPE(3, 10));
    cr_assert(shares(rr, x));
    cr_assert_not(shares(cr, x));
    check_ref(rr, "view_rows_reshape");
    check_ref(cr, "view_cols_reshape");
    tg_release(rr);
    tg_release(rows);
    tg_release(cr);
    tg_release(cols);
    tg_release(x);
}

TG_TEST(reshape, errors)
{
    tg_tensor *x = arange_shaped(6, TG_SHAPE(2, 3), TG_FLOAT32);
    cr_assert_null(tg_reshape(x, TG_SHAPE(4, 2)));
    tg_assert_error("tg_reshape: cannot reshape a tensor of shape (2, 3) "
                    "(6 elements) into shape (4, 2) (8 elements)",
                    "rule: the element counts must be equal, but 6 != 8");
    cr_assert_null(tg_reshape(x, TG_SHAPE(4, -1)));
    tg_assert_error("into shape (4, -1)",
                    "rule: the sizes other than -1 multiply to 4, which "
                    "does not divide 6");
    cr_assert_null(tg_reshape(x, TG_SHAPE(-1, -1)));
    tg_assert_error("tg_reshape: shape (-1, -1) has more than one -1",
                    "rule: only one size can be inferred");
    cr_assert_null(tg_reshape(x, TG_SHAPE(-2, -3)));
    tg_assert_error("shape (-2, -3) has the invalid size -2 at dim 0",
                    "rule: sizes must be >= 0");
    cr_assert_null(tg_reshape(x, NULL, 2));
    tg_assert_error("tg_reshape: shape is NULL but ndim is 2");
    cr_assert_null(tg_reshape(x, TG_SHAPE(1, 1, 1, 1, 1, 1, 1, 2, 3)));
    tg_assert_error("tg_reshape: cannot make a shape with 9 dims",
                    "rule: ndim must be in [0, 8]");
    cr_assert_null(tg_reshape(x, (int64_t[]){-1}, -1));
    tg_assert_error("cannot make a shape with -1 dims");
    /* A product that would overflow int64 is a mismatch, not a crash. */
    int64_t huge = INT64_C(1) << 40;
    cr_assert_null(tg_reshape(x, (int64_t[]){huge, huge, huge}, 3));
    tg_assert_error("(over 2^60 elements)");
    tg_release(x);
}

/* ------------------------------------------------------------------ view */

TG_TEST(view, shares_storage)
{
    tg_tensor *x = arange_shaped(12, TG_SHAPE(3, 4), TG_INT64);
    tg_tensor *v = tg_view(x, TG_SHAPE(2, -1, 2));
    CHECK_LAYOUT(v, S(2, 3, 2), S(6, 2, 1), 0);
    cr_assert(shares(v, x));
    tg_set(v, (int64_t[]){1, 2, 1}, 3, 100);
    double got;
    tg_get(x, (int64_t[]){2, 3}, 2, &got);
    cr_assert_eq(got, 100);
    tg_release(v);
    tg_release(x);
}

TG_TEST(view, refuses_what_needs_a_copy)
{
    tg_tensor *x = arange_shaped(6, TG_SHAPE(2, 3), TG_FLOAT32);
    tg_tensor *t = tg_transpose(x, 0, 1);
    cr_assert_null(tg_view(t, TG_SHAPE(6)));
    tg_assert_error("tg_view: cannot view a tensor of shape (3, 2) with "
                    "strides (1, 3) as shape (6,)",
                    "\n  rule: ", "\n  hint: use tg_reshape",
                    "tg_contiguous");
    cr_assert_null(tg_view(x, TG_SHAPE(5)));
    tg_assert_error("tg_view: cannot view a tensor of shape (2, 3) (6 "
                    "elements) as shape (5,) (5 elements)");
    tg_release(t);
    tg_release(x);
}

/* ------------------------------------------------------- permute, transpose */

TG_TEST(permute, strides_follow_the_dims)
{
    tg_tensor *x = arange_shaped(24, TG_SHAPE(2, 3, 4), TG_FLOAT32);
    tg_tensor *p = tg_permute(x, TG_DIMS(2, 0, 1));
    CHECK_LAYOUT(p, S(4, 2, 3), S(1, 12, 4), 0);
    cr_assert(shares(p, x));
    double v;
    tg_get(p, (int64_t[]){3, 1, 2}, 3, &v); // x[1, 2, 3]
    cr_assert_eq(v, 23);
    tg_tensor *q = tg_permute(x, TG_DIMS(-1, -3, 1)); // negative dims
    CHECK_LAYOUT(q, S(4, 2, 3), S(1, 12, 4), 0);
    tg_release(q);
    tg_release(p);
    tg_release(x);
}

TG_TEST(permute, errors)
{
    tg_tensor *x = tg_zeros(TG_SHAPE(2, 3), TG_FLOAT32);
    cr_assert_null(tg_permute(x, TG_DIMS(0, 1, 2)));
    tg_assert_error("tg_permute: got 3 dims for a tensor of shape (2, 3)",
                    "rule: dims must list each of the tensor's 2 dims "
                    "exactly once");
    cr_assert_null(tg_permute(x, TG_DIMS(0, -2)));
    tg_assert_error("tg_permute: dims (0, -2) is not a permutation",
                    "dim 0 appears more than once");
    cr_assert_null(tg_permute(x, TG_DIMS(0, 2)));
    tg_assert_error("tg_permute: dim 2 is out of range for a tensor with 2 "
                    "dims");
    cr_assert_null(tg_permute(x, NULL, 2));
    tg_assert_error("tg_permute: dims is NULL but ndims is 2");
    tg_release(x);
}

TG_TEST(transpose, swaps_two_dims)
{
    tg_tensor *x = arange_shaped(24, TG_SHAPE(2, 3, 4), TG_FLOAT32);
    tg_tensor *t = tg_transpose(x, -1, 0);
    CHECK_LAYOUT(t, S(4, 3, 2), S(1, 4, 12), 0);
    cr_assert(shares(t, x));
    tg_tensor *same = tg_transpose(x, 1, 1);
    CHECK_LAYOUT(same, S(2, 3, 4), S(12, 4, 1), 0);
    cr_assert_null(tg_transpose(x, 0, 3));
    tg_assert_error("tg_transpose: dim 3 is out of range for a tensor with "
                    "3 dims",
                    "rule: dim must be in [-3, 2]");
    cr_assert_null(tg_transpose(x, -4, 0));
    tg_assert_error("dim -4 is out of range");
    tg_release(same);
    tg_release(t);
    tg_release(x);
}

/* ---------------------------------------------------- squeeze, unsqueeze */

TG_TEST(squeeze, one_dim_or_all)
{
    tg_tensor *x = tg_zeros(TG_SHAPE(2, 1, 3, 1), TG_FLOAT32);
    tg_tensor *a = tg_squeeze(x, 1);
    tg_tensor *b = tg_squeeze(x, -1);
    tg_tensor *c = tg_squeeze(x, 0); // size 2: unchanged, still a view
    tg_tensor *d = tg_squeeze_all(x);
    CHECK_LAYOUT(a, S(2, 3, 1), S(3, 1, 1), 0);
    CHECK_LAYOUT(b, S(2, 1, 3), S(3, 3, 1), 0);
    CHECK_LAYOUT(c, S(2, 1, 3, 1), S(3, 3, 1, 1), 0);
    CHECK_LAYOUT(d, S(2, 3), S(3, 1), 0);
    cr_assert(c != x);
    cr_assert(shares(a, x) && shares(c, x) && shares(d, x));
    cr_assert_null(tg_squeeze(x, 4));
    tg_assert_error("tg_squeeze: dim 4 is out of range for a tensor with 4 "
                    "dims");
    tg_tensor *ones = tg_zeros(TG_SHAPE(1, 1), TG_FLOAT32);
    tg_tensor *scalar = tg_squeeze_all(ones);
    cr_assert_eq(scalar->ndim, 0);
    cr_assert_eq(scalar->numel, 1);
    tg_release(scalar);
    tg_release(ones);
    tg_release(a);
    tg_release(b);
    tg_release(c);
    tg_release(d);
    tg_release(x);
}

TG_TEST(unsqueeze, inserts_a_size_one_dim)
{
    tg_tensor *x = tg_zeros(TG_SHAPE(2, 3), TG_FLOAT32);
    tg_tensor *a = tg_unsqueeze(x, 0);
    tg_tensor *b = tg_unsqueeze(x, 1);
    tg_tensor *c = tg_unsqueeze(x, 2);
    tg_tensor *d = tg_unsqueeze(x, -1);
    tg_tensor *e = tg_unsqueeze(x, -3);
    /* The new dim's stride is PyTorch's: size * stride of the dim it
     * lands before, or 1 at the end. */
    CHECK_LAYOUT(a, S(1, 2, 3), S(6, 3, 1), 0);
    CHECK_LAYOUT(b, S(2, 1, 3), S(3, 3, 1), 0);
    CHECK_LAYOUT(c, S(2, 3, 1), S(3, 1, 1), 0);
    CHECK_LAYOUT(d, S(2, 3, 1), S(3, 1, 1), 0);
    CHECK_LAYOUT(e, S(1, 2, 3), S(6, 3, 1), 0);
    cr_assert(shares(a, x));
    cr_assert_null(tg_unsqueeze(x, 3));
    tg_assert_error("tg_unsqueeze: dim 3 is out of range for unsqueezing a "
                    "tensor with 2 dims",
                    "rule: dim is the new dim's position in the result, so "
                    "it must be in [-3, 2]");
    cr_assert_null(tg_unsqueeze(x, -4));
    tg_assert_error("dim -4 is out of range");
    tg_tensor *full = tg_zeros(TG_SHAPE(1, 1, 1, 1, 1, 1, 1, 2), TG_FLOAT32);
    cr_assert_null(tg_unsqueeze(full, 0));
    tg_assert_error("tg_unsqueeze: cannot add a dim to a tensor of shape "
                    "(1, 1, 1, 1, 1, 1, 1, 2)",
                    "rule: a tensor has at most 8 dims (TG_MAX_DIMS)");
    tg_release(full);
    tg_release(a);
    tg_release(b);
    tg_release(c);
    tg_release(d);
    tg_release(e);
    tg_release(x);
}

/* ------------------------------------------------- expand, broadcast_to */

TG_TEST(expand, grows_size_one_dims_with_stride_zero)
{
    tg_tensor *x = arange_shaped(3, TG_SHAPE(3, 1), TG_FLOAT32);
    tg_tensor *e = tg_expand(x, TG_SHAPE(2, -1, 4));
    CHECK_LAYOUT(e, S(2, 3, 4), S(0, 1, 0), 0);
    cr_assert(shares(e, x));
    double v;
    tg_get(e, (int64_t[]){1, 2, 3}, 3, &v);
    cr_assert_eq(v, 2);
    /* Every position of a grown dim is the same element. */
    tg_set(e, (int64_t[]){0, 1, 0}, 3, 9);
    tg_get(e, (int64_t[]){1, 1, 3}, 3, &v);
    cr_assert_eq(v, 9);
    tg_get(x, (int64_t[]){1, 0}, 2, &v);
    cr_assert_eq(v, 9);
    /* A new leading size-1 dim: PyTorch's stride, the next dim's
     * size * stride (here 0). */
    tg_tensor *f = tg_expand(x, TG_SHAPE(1, 2, 3, 4));
    CHECK_LAYOUT(f, S(1, 2, 3, 4), S(0, 0, 1, 0), 0);
    tg_release(f);
    tg_release(e);
    tg_release(x);
}

TG_TEST(expand, errors)
{
    tg_tensor *x = tg_zeros(TG_SHAPE(2, 3), TG_FLOAT32);
    cr_assert_null(tg_expand(x, TG_SHAPE(4, 3)));
    tg_assert_error("tg_expand: cannot expand a tensor of shape (2, 3) to "
                    "shape (4, 3)",
                    "rule: only size-1 dims can grow, but dim 0 has size 2 "
                    "and the target asks for 4",
                    "hint: ");
    cr_assert_null(tg_expand(x, TG_SHAPE(-1, 2, 3)));
    tg_assert_error("to shape (-1, 2, 3)",
                    "rule: -1 keeps an existing size, but dim 0 is a new "
                    "leading dim");
    cr_assert_null(tg_expand(x, TG_SHAPE(3)));
    tg_assert_error("tg_expand: cannot expand a tensor of shape (2, 3) to "
                    "shape (3,)",
                    "rule: the target needs at least as many dims as the "
                    "tensor (2), but has 1");
    cr_assert_null(tg_expand(x, TG_SHAPE(2, -2)));
    tg_assert_error("tg_expand: shape (2, -2) has the invalid size -2 at "
                    "dim 1");
    cr_assert_null(tg_expand(x, NULL, 3));
    tg_assert_error("tg_expand: shape is NULL but ndim is 3");
    /* Growing size-1 dims past the element limit is refused, not wrapped. */
    tg_tensor *one = tg_zeros(TG_SHAPE(1, 1), TG_FLOAT32);
    int64_t big = INT64_C(1) << 40;
    cr_assert_null(tg_expand(one, (int64_t[]){big, big}, 2));
    tg_assert_error("tg_expand: shape (1099511627776, 1099511627776) has "
                    "too many elements");
    tg_release(one);
    tg_release(x);
}

TG_TEST(broadcast_to, as_numpy_without_minus_one)
{
    tg_tensor *x = arange_shaped(3, TG_SHAPE(3, 1), TG_FLOAT64);
    tg_tensor *b = tg_broadcast_to(x, TG_SHAPE(2, 3, 4));
    CHECK_LAYOUT(b, S(2, 3, 4), S(0, 1, 0), 0);
    cr_assert(shares(b, x));
    cr_assert_null(tg_broadcast_to(x, TG_SHAPE(2, 4)));
    tg_assert_error("tg_broadcast_to: cannot broadcast a tensor of shape "
                    "(3, 1) to shape (2, 4)",
                    "dim 0 has size 3 and the target asks for 2");
    cr_assert_null(tg_broadcast_to(x, TG_SHAPE(-1, 4)));
    tg_assert_error("tg_broadcast_to: shape (-1, 4) has the invalid size -1 "
                    "at dim 0",
                    "(use tg_expand for -1)");
    tg_release(b);
    tg_release(x);
}

/* ------------------------------------------------ narrow, slice, select */

TG_TEST(narrow, offsets_into_the_base)
{
    tg_tensor *x = arange_shaped(12, TG_SHAPE(3, 4), TG_FLOAT32);
    tg_tensor *a = tg_narrow(x, 1, 1, 2);
    tg_tensor *b = tg_narrow(x, -2, -2, 2); // negative dim and start
    tg_tensor *c = tg_narrow(x, 0, 3, 0);   // start == size, empty
    CHECK_LAYOUT(a, S(3, 2), S(4, 1), 1);
    CHECK_LAYOUT(b, S(2, 4), S(4, 1), 4);
    CHECK_LAYOUT(c, S(0, 4), S(4, 1), 12);
    cr_assert(shares(a, x) && shares(b, x));
    CHECK_VALUES(a, 1, 2, 5, 6, 9, 10);
    CHECK_VALUES(b, 4, 5, 6, 7, 8, 9, 10, 11);
    cr_assert_null(tg_narrow(x, 1, 3, 2));
    tg_assert_error("tg_narrow: start 3 and length 2 do not fit in dim 1 "
                    "(size 4) of a tensor of shape (3, 4)",
                    "rule: start must be in [-4, 4]");
    cr_assert_null(tg_narrow(x, 0, 0, -1));
    tg_assert_error("start 0 and length -1 do not fit", "length >= 0");
    cr_assert_null(tg_narrow(x, 0, -4, 1));
    tg_assert_error("start -4 and length 1 do not fit");
    cr_assert_null(tg_narrow(x, 2, 0, 1));
    tg_assert_error("tg_narrow: dim 2 is out of range");
    tg_release(a);
    tg_release(b);
    tg_release(c);
    tg_release(x);
}

TG_TEST(slice, steps_multiply_strides)
{
    tg_tensor *x = arange_shaped(20, TG_SHAPE(5, 4), TG_FLOAT32);
    tg_tensor *a = tg_slice(x, 0, 1, INT64_MAX, 2); // x[1::2]
    tg_tensor *b = tg_slice(a, 1, -3, -1, 1);       // then [:, -3:-1]
    tg_tensor *c = tg_slice(x, 1, 3, 100, 7);       // one column, step 7
    CHECK_LAYOUT(a, S(2, 4), S(8, 1), 4);
    CHECK_LAYOUT(b, S(2, 2), S(8, 1), 5);
    CHECK_LAYOUT(c, S(5, 1), S(4, 7), 3); // PyTorch keeps stride * step
    cr_assert(shares(b, x));
    CHECK_VALUES(b, 5, 6, 13, 14);
    tg_set(b, (int64_t[]){1, 1}, 2, -7);
    double v;
    tg_get(x, (int64_t[]){3, 2}, 2, &v);
    cr_assert_eq(v, -7);
    tg_release(a);
    tg_release(b);
    tg_release(c);
    tg_release(x);
}

TG_TEST(slice, clamps_like_python)
{
    tg_tensor *x = tg_arange(0, 10, 1, TG_INT64);
    tg_tensor *wide = tg_slice(x, 0, -100, 100, 3);
    tg_tensor *neg = tg_slice(x, 0, 2, -2, 4);
    tg_tensor *tail = tg_slice(x, -1, -3, INT64_MAX, 1);
    tg_tensor *empty = tg_slice(x, 0, 7, 2, 1);
    tg_tensor *extreme = tg_slice(x, 0, INT64_MIN, INT64_MIN, INT64_MAX);
    check_ref(wide, "view_slice_clamp_wide");
    check_ref(neg, "view_slice_clamp_negative");
    check_ref(tail, "view_slice_clamp_tail");
    check_ref(empty, "view_slice_clamp_empty");
    CHECK_LAYOUT(empty, S(0), S(1), 7);
    /* No overflow on any extreme. With at most one element left the
     * stride is unused; a step beyond 2^59 leaves it unmultiplied (PyTorch
     * would store 1 * step), so later offsets stay small. */
    CHECK_LAYOUT(extreme, S(0), S(1), 0);
    tg_tensor *huge_step = tg_slice(x, 0, 3, INT64_MAX, INT64_MAX);
    CHECK_LAYOUT(huge_step, S(1), S(1), 3);
    CHECK_VALUES(huge_step, 3);
    tg_tensor *past_end = tg_narrow(huge_step, 0, 1, 0);
    CHECK_LAYOUT(past_end, S(0), S(1), 4);
    tg_release(past_end);
    tg_release(huge_step);
    tg_release(extreme);
    tg_release(wide);
    tg_release(neg);
    tg_release(tail);
    tg_release(empty);
    tg_release(x);
}

TG_TEST(slice, errors)
{
    tg_tensor *x = tg_zeros(TG_SHAPE(3), TG_FLOAT32);
    cr_assert_null(tg_slice(x, 0, 0, 3, 0));
    tg_assert_error("tg_slice: step 0 is not allowed",
                    "rule: step must be >= 1");
    cr_assert_null(tg_slice(x, 0, 3, 0, -1));
    tg_assert_error("tg_slice: step -1 is not allowed");
    cr_assert_null(tg_slice(x, 1, 0, 3, 1));
    tg_assert_error("tg_slice: dim 1 is out of range for a tensor with 1 "
                    "dim\n");
    tg_release(x);
}

TG_TEST(select, removes_the_dim)
{
    tg_tensor *x = arange_shaped(24, TG_SHAPE(2, 3, 4), TG_FLOAT32);
    tg_tensor *a = tg_select(x, 1, 2);
    tg_tensor *b = tg_select(x, -1, -1); // last element of the last dim
    CHECK_LAYOUT(a, S(2, 4), S(12, 1), 8);
    CHECK_LAYOUT(b, S(2, 3), S(12, 4), 3);
    cr_assert(shares(a, x));
    CHECK_VALUES(b, 3, 7, 11, 15, 19, 23);
    tg_tensor *row = tg_select(a, 0, 1);
    tg_tensor *elem = tg_select(row, 0, 3); // down to 0-d
    cr_assert_eq(elem->ndim, 0);
    cr_assert_eq(tg_item(elem), 23);
    cr_assert_null(tg_select(x, 0, 2));
    tg_assert_error("tg_select: index 2 is out of range for dim 0 (size 2) "
                    "of a tensor of shape (2, 3, 4)",
                    "rule: index must be in [-2, 1]");
    cr_assert_null(tg_select(x, 2, -5));
    tg_assert_error("index -5 is out of range for dim 2");
    cr_assert_null(tg_select(x, 3, 0));
    tg_assert_error("tg_select: dim 3 is out of range");
    tg_release(elem);
    tg_release(row);
    tg_release(a);
    tg_release(b);
    tg_release(x);
}

/* ------------------------------------------- compositions against NumPy */

/* x = arange(24).reshape(2, 3, 4); x.transpose(2, 0, 1)[1::2][:, :, -2:]
 * .reshape(4, 2): the last reshape must copy. */
TG_TEST(compose, permute_slice_reshape)
{
    tg_tensor *x = arange_shaped(24, TG_SHAPE(2, 3, 4), TG_FLOAT32);
    tg_tensor *p = tg_permute(x, TG_DIMS(2, 0, 1));
    tg_tensor *s1 = tg_slice(p, 0, 1, INT64_MAX, 2);
    tg_tensor *s2 = tg_slice(s1, 2, -2, INT64_MAX, 1);
    tg_tensor *r = tg_reshape(s2, TG_SHAPE(4, 2));
    cr_assert(shares(s2, x));
    cr_assert_not(shares(r, x));
    cr_assert(tg_is_contiguous(r));
    check_ref(r, "view_permute_slice_reshape");
    tg_release(r);
    tg_release(s2);
    tg_release(s1);
    tg_release(p);
    tg_release(x);
}

/* broadcast_to(x, (2, 3, 5, 4)).swapaxes(1, 2)[:, :, :, -1][:, 1:4] */
TG_TEST(compose, expand_transpose_select_narrow)
{
    tg_tensor *x = tg_test_load_ref("view_expand_x"); // (3, 1, 4)
    tg_tensor *e = tg_expand(x, TG_SHAPE(2, -1, 5, -1));
    tg_tensor *t = tg_transpose(e, 1, 2);
    tg_tensor *s = tg_select(t, 3, -1);
    tg_tensor *n = tg_narrow(s, 1, 1, 3);
    tg_tensor *c = tg_contiguous(n);
    CHECK_LAYOUT(n, S(2, 3, 3), S(0, 0, 4), 3);
    cr_assert(shares(n, x));
    cr_assert(tg_is_contiguous(c) && !shares(c, x));
    check_ref(n, "view_expand_transpose_select");
    check_ref(c, "view_expand_transpose_select");
    tg_release(c);
    tg_release(n);
    tg_release(s);
    tg_release(t);
    tg_release(e);
    tg_release(x);
}

/* x.squeeze()[:, :, None] broadcast to (2, 3, 4), transposed (2, 0, 1),
 * reshaped (4, 6). */
TG_TEST(compose, squeeze_unsqueeze_expand_permute_reshape)
{
    tg_tensor *x = arange_shaped(6, TG_SHAPE(1, 2, 1, 3), TG_FLOAT64);
    tg_tensor *a = tg_squeeze_all(x);
    tg_tensor *b = tg_unsqueeze(a, -1);
    tg_tensor *c = tg_expand(b, TG_SHAPE(-1, -1, 4));
    tg_tensor *d = tg_permute(c, TG_DIMS(2, 0, 1));
    tg_tensor *r = tg_reshape(d, TG_SHAPE(4, 6));
    check_ref(r, "view_squeeze_expand_permute");
    tg_tensor *rs[] = {r, d, c, b, a, x};
    for (size_t i = 0; i < sizeof rs / sizeof *rs; i++)
        tg_release(rs[i]);
}

/* x[::2, 1::2, ::3].swapaxes(-1, -2).reshape(-1) on a random (3, 4, 5). */
TG_TEST(compose, strided_slices_transpose_flatten)
{
    tg_tensor *x = tg_test_load_ref("view_strided_x");
    tg_tensor *a = tg_slice(x, 0, 0, INT64_MAX, 2);
    tg_tensor *b = tg_slice(a, 1, 1, INT64_MAX, 2);
    tg_tensor *c = tg_slice(b, 2, 0, INT64_MAX, 3);
    tg_tensor *d = tg_transpose(c, -1, -2);
    tg_tensor *f = tg_reshape(d, TG_SHAPE(-1));
    CHECK_LAYOUT(c, S(2, 2, 2), S(40, 10, 3), 5);
    check_ref(f, "view_strided_flat");
    tg_tensor *rs[] = {f, d, c, b, a, x};
    for (size_t i = 0; i < sizeof rs / sizeof *rs; i++)
        tg_release(rs[i]);
}

/* The reference compare must be able to fail: a chain with one step off
 * (start 0 instead of 1 on dim 0) is rejected. */
TG_TEST(compose, reference_compare_rejects_a_wrong_chain)
{
    tg_tensor *x = arange_shaped(24, TG_SHAPE(2, 3, 4), TG_FLOAT32);
    tg_tensor *p = tg_permute(x, TG_DIMS(2, 0, 1));
    tg_tensor *s1 = tg_slice(p, 0, 0, INT64_MAX, 2); // wrong start
    tg_tensor *s2 = tg_slice(s1, 2, -2, INT64_MAX, 1);
    tg_tensor *r = tg_reshape(s2, TG_SHAPE(4, 2));
    tg_tensor *want = tg_test_load_ref("view_permute_slice_reshape");
    char report[512];
    cr_assert_not(tg_test_close(r, want, 0, 0, true, report, sizeof report));
    tg_tensor *rs[] = {want, r, s2, s1, p, x};
    for (size_t i = 0; i < sizeof rs / sizeof *rs; i++)
        tg_release(rs[i]);
}

/* ------------------------------------------------ 0-d and 0-size tensors */

TG_TEST(scalar, views_of_a_0d_tensor)
{
    tg_tensor *x = tg_scalar(5, TG_FLOAT32);
    tg_tensor *a = tg_reshape(x, TG_SHAPE(1, 1));
    tg_tensor *b = tg_reshape(a, NULL, 0);
    tg_tensor *c = tg_view(x, TG_SHAPE(-1));
    tg_tensor *d = tg_expand(x, TG_SHAPE(2, 3));
    tg_tensor *e = tg_unsqueeze(x, -1);
    tg_tensor *f = tg_squeeze(x, 0);
    tg_tensor *g = tg_transpose(x, 0, -1);
    tg_tensor *h = tg_permute(x, NULL, 0);
    tg_tensor *i = tg_squeeze_all(x);
    CHECK_LAYOUT(a, S(1, 1), S(1, 1), 0);
    cr_assert_eq(b->ndim, 0);
    CHECK_LAYOUT(c, S(1), S(1), 0);
    CHECK_LAYOUT(d, S(2, 3), S(0, 0), 0); // PyTorch: all strides 0
    CHECK_LAYOUT(e, S(1), S(1), 0);
    tg_tensor *zd[] = {f, g, h, i};
    for (size_t k = 0; k < 4; k++) {
        cr_assert_eq(zd[k]->ndim, 0);
        cr_assert(shares(zd[k], x));
        cr_assert_eq(tg_item(zd[k]), 5);
    }
    CHECK_VALUES(d, 5, 5, 5, 5, 5, 5);
    tg_tensor *d1 = tg_expand(x, TG_SHAPE(2, 1)); // size 1 too: stride 0
    CHECK_LAYOUT(d1, S(2, 1), S(0, 0), 0);
    tg_release(d1);
    cr_assert_null(tg_narrow(x, 0, 0, 1));
    tg_assert_error("tg_narrow: cannot narrow a 0-d tensor",
                    "hint: tg_unsqueeze(x, 0)");
    cr_assert_null(tg_slice(x, 0, 0, 1, 1));
    tg_assert_error("tg_slice: cannot slice a 0-d tensor");
    cr_assert_null(tg_select(x, 0, 0));
    tg_assert_error("tg_select: cannot select from a 0-d tensor");
    cr_assert_null(tg_expand(x, TG_SHAPE(-1)));
    tg_assert_error("-1 keeps an existing size, but dim 0 is a new leading "
                    "dim");
    cr_assert_null(tg_reshape(x, TG_SHAPE(2)));
    tg_assert_error("cannot reshape a tensor of shape () (1 elements) into "
                    "shape (2,)");
    cr_assert_null(tg_transpose(x, 0, 1));
    tg_assert_error("dim 1 is out of range for a tensor with 0 dims");
    cr_assert_null(tg_unsqueeze(x, 1));
    tg_assert_error("must be in [-1, 0]");
    tg_tensor *rs[] = {a, b, c, d, e, f, g, h, i, x};
    for (size_t k = 0; k < sizeof rs / sizeof *rs; k++)
        tg_release(rs[k]);
}

TG_TEST(empty, views_of_a_0_size_tensor)
{
    tg_tensor *x = tg_zeros(TG_SHAPE(0, 3), TG_FLOAT32);
    tg_tensor *a = tg_reshape(x, TG_SHAPE(3, 0));
    tg_tensor *b = tg_reshape(x, TG_SHAPE(-1, 3));
    tg_tensor *c = tg_reshape(x, TG_SHAPE(1, -1)); // -1 resolves to 0
    tg_tensor *d = tg_expand(x, TG_SHAPE(2, 0, 3));
    tg_tensor *e = tg_transpose(x, 0, 1);
    tg_tensor *f = tg_slice(x, 1, 1, 2, 1);
    tg_tensor *g = tg_narrow(x, 0, 0, 0);
    tg_tensor *h = tg_contiguous(e);
    tg_tensor *k = tg_clone(x);
    CHECK_LAYOUT(a, S(3, 0), S(1, 1), 0);
    CHECK_LAYOUT(b, S(0, 3), S(3, 1), 0);
    CHECK_LAYOUT(c, S(1, 0), S(1, 1), 0);
    CHECK_LAYOUT(d, S(2, 0, 3), S(0, 3, 1), 0);
    CHECK_LAYOUT(e, S(3, 0), S(1, 3), 0);
    CHECK_LAYOUT(f, S(0, 1), S(3, 1), 1);
    CHECK_LAYOUT(g, S(0, 3), S(3, 1), 0);
    CHECK_LAYOUT(h, S(3, 0), S(1, 3), 0); // empty counts as contiguous: e itself
    CHECK_LAYOUT(k, S(0, 3), S(3, 1), 0);
    cr_assert_not(shares(k, x));
    cr_assert_null(tg_reshape(x, TG_SHAPE(0, -1)));
    tg_assert_error("tg_reshape: cannot infer the -1 in shape (0, -1) for a "
                    "tensor of shape (0, 3) (0 elements)",
                    "rule: when the other sizes multiply to 0, the -1 could "
                    "be any size");
    cr_assert_null(tg_select(x, 0, 0));
    tg_assert_error("tg_select: index 0 is out of range for dim 0 of a "
                    "tensor of shape (0, 3)",
                    "rule: that dim has size 0, so no index is valid");
    /* Reshaping to the same shape keeps the strides, as NumPy and
     * PyTorch (with no elements, any strides are valid). */
    tg_tensor *z = tg_zeros(TG_SHAPE(2, 0, 3), TG_FLOAT32);
    tg_tensor *zt = tg_transpose(z, 0, 2);
    tg_tensor *zr = tg_reshape(zt, TG_SHAPE(3, -1, 2));
    CHECK_LAYOUT(zr, S(3, 0, 2), S(1, 3, 3), 0);
    tg_release(zr);
    tg_release(zt);
    tg_release(z);
    tg_tensor *one = tg_zeros(TG_SHAPE(1, 3), TG_FLOAT32);
    tg_tensor *grown = tg_expand(one, TG_SHAPE(0, 3)); // 1 -> 0 is allowed
    CHECK_LAYOUT(grown, S(0, 3), S(0, 1), 0);
    tg_tensor *rs[] = {a, b, c, d, e, f, g, h, k, one, grown, x};
    for (size_t i = 0; i < sizeof rs / sizeof *rs; i++)
        tg_release(rs[i]);
}

/* ------------------------------------------------------------- copies */

TG_TEST(contiguous, retains_or_copies)
{
    tg_tensor *x = arange_shaped(6, TG_SHAPE(2, 3), TG_FLOAT32);
    tg_tensor *same = tg_contiguous(x);
    cr_assert_eq(same, x);
    cr_assert_eq(x->refcount, 2);
    tg_tensor *t = tg_transpose(x, 0, 1);
    tg_tensor *c = tg_contiguous(t);
    CHECK_LAYOUT(c, S(3, 2), S(2, 1), 0);
    cr_assert_not(shares(c, x));
    CHECK_VALUES(c, 0, 3, 1, 4, 2, 5);
    tg_release(c);
    tg_release(t);
    tg_release(same);
    tg_release(x);
}

TG_TEST(clone, always_a_fresh_copy)
{
    tg_tensor *x = arange_shaped(6, TG_SHAPE(2, 3), TG_INT64);
    tg_tensor *k = tg_clone(x);
    cr_assert_neq(k, x);
    cr_assert_not(shares(k, x));
    CHECK_LAYOUT(k, S(2, 3), S(3, 1), 0);
    cr_assert_eq(k->dtype, TG_INT64);
    tg_set(k, (int64_t[]){0, 0}, 2, 99);
    CHECK_VALUES(x, 0, 1, 2, 3, 4, 5);
    tg_tensor *row = tg_select(x, 1, 1);          // (2,), stride 3
    tg_tensor *kr = tg_clone(row);
    CHECK_LAYOUT(kr, S(2), S(1), 0);
    CHECK_VALUES(kr, 1, 4);
    tg_tensor *s = tg_scalar(2.5, TG_FLOAT64);
    tg_tensor *ks = tg_clone(s);
    cr_assert_eq(ks->ndim, 0);
    cr_assert_eq(tg_item(ks), 2.5);
    cr_assert_not(shares(ks, s));
    tg_tensor *rs[] = {ks, s, kr, row, k, x};
    for (size_t i = 0; i < sizeof rs / sizeof *rs; i++)
        tg_release(rs[i]);
}

TG_TEST(to_dtype, same_dtype_is_retained)
{
    tg_tensor *x = tg_zeros(TG_SHAPE(2), TG_FLOAT64);
    tg_tensor *y = tg_to_dtype(x, TG_FLOAT64);
    cr_assert_eq(y, x);
    tg_release(y);
    tg_release(x);
}

TG_TEST(to_dtype, float_to_int64_truncates_toward_zero)
{
    tg_tensor *x64 = tg_test_load_ref("view_to_int64_x");
    tg_tensor *x32 = tg_test_load_ref("view_to_int64_x_f32");
    tg_tensor *y64 = tg_to_dtype(x64, TG_INT64);
    tg_tensor *y32 = tg_to_dtype(x32, TG_INT64);
    check_ref(y64, "view_to_int64");
    check_ref(y32, "view_to_int64_f32");
    tg_tensor *rs[] = {y32, y64, x32, x64};
    for (size_t i = 0; i < sizeof rs / sizeof *rs; i++)
        tg_release(rs[i]);
}

/* NaN, inf and values beyond int64 have no int64; they give INT64_MIN, as
 * PyTorch on x86 (and without undefined behaviour in C). */
TG_TEST(to_dtype, float_without_an_int64_gives_int64_min)
{
    tg_tensor *x = tg_from_array(
        (double[]){NAN, INFINITY, -INFINITY, 9.3e18, -9.3e18,
                   -9223372036854775808.0, 9223372036854774784.0},
        TG_SHAPE(7), TG_FLOAT64);
    tg_tensor *y = tg_to_dtype(x, TG_INT64);
    int64_t *p = tg_data_i64(y);
    cr_assert_not_null(p);
    for (int i = 0; i < 6; i++)
        cr_assert_eq(p[i], INT64_MIN, "element %d is %lld", i,
                     (long long)p[i]);
    cr_assert_eq(p[6], INT64_C(9223372036854774784)); // largest below 2^63
    tg_release(y);
    tg_release(x);
}

TG_TEST(to_dtype, int64_to_float_rounds_to_nearest)
{
    tg_tensor *x = tg_test_load_ref("view_int64_x");
    tg_tensor *a = tg_to_dtype(x, TG_FLOAT32);
    tg_tensor *b = tg_to_dtype(x, TG_FLOAT64);
    check_ref(a, "view_int64_to_f32");
    check_ref(b, "view_int64_to_f64");
    tg_release(a);
    tg_release(b);
    tg_release(x);
}

/* A non-contiguous input converts in its logical (C) order. */
TG_TEST(to_dtype, non_contiguous_input)
{
    tg_tensor *x = tg_test_load_ref("view_to_int64_x"); // (10,) float64
    tg_tensor *r = tg_reshape(x, TG_SHAPE(2, 5));
    tg_tensor *t = tg_transpose(r, 0, 1); // (5, 2)
    tg_tensor *i = tg_to_dtype(t, TG_INT64);
    tg_tensor *f = tg_to_dtype(t, TG_FLOAT32);
    CHECK_LAYOUT(i, S(5, 2), S(2, 1), 0);
    /* x = -2.7 -2.5 -0.5 -0.0 0.5 | 1.0 2.5 2.7 1e10 -1e10 */
    CHECK_VALUES(i, -2, 1, -2, 2, 0, 2, 0, 1e10, 0, -1e10);
    CHECK_VALUES(f, (float)-2.7, 1, -2.5, 2.5, -0.5, (float)2.7, 0, 1e10,
                 0.5, -1e10);
    cr_assert_null(tg_to_dtype(x, (tg_dtype)7));
    tg_assert_error("tg_to_dtype: unknown dtype 7",
                    "rule: dtype must be TG_FLOAT32, TG_FLOAT64 or "
                    "TG_INT64");
    tg_tensor *rs[] = {f, i, t, r, x};
    for (size_t k = 0; k < sizeof rs / sizeof *rs; k++)
        tg_release(rs[k]);
}

/* ------------------------------------------------------ NULL arguments */

/* A NULL input returns NULL and records nothing, so chains fail once. */
TG_TEST(null, every_op_returns_null_silently)
{
    tg_clear_error();
    cr_assert_null(tg_reshape(NULL, TG_SHAPE(2)));
    cr_assert_null(tg_view(NULL, TG_SHAPE(2)));
    cr_assert_null(tg_permute(NULL, TG_DIMS(0)));
    cr_assert_null(tg_transpose(NULL, 0, 1));
    cr_assert_null(tg_squeeze(NULL, 0));
    cr_assert_null(tg_squeeze_all(NULL));
    cr_assert_null(tg_unsqueeze(NULL, 0));
    cr_assert_null(tg_expand(NULL, TG_SHAPE(2)));
    cr_assert_null(tg_broadcast_to(NULL, TG_SHAPE(2)));
    cr_assert_null(tg_narrow(NULL, 0, 0, 1));
    cr_assert_null(tg_slice(NULL, 0, 0, 1, 1));
    cr_assert_null(tg_select(NULL, 0, 0));
    cr_assert_null(tg_contiguous(NULL));
    cr_assert_null(tg_clone(NULL));
    cr_assert_null(tg_to_dtype(NULL, TG_FLOAT32));
    cr_assert_str_eq(tg_last_error(), "");
}
