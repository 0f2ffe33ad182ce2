/*
 * tests/errors/catalogue_ops.c - the errors of autograd/ops.h, one ERROR_CASE per
 * row of docs/errors.md (see catalogue.h).
 *
 * Rows follow the header's sections (views, elementwise, reductions,
 * matmul, normalisation, losses) and, within a section, its functions.
 * Each function also has a row for a NULL tensor argument, which fails
 * without a new message: the call that made the NULL already reported.
 */
#include "catalogue.h"

#include <math.h>
#include <stdint.h>

/* Tensors of zeros of each dtype: F32(2, 3) is a float32 (2, 3). */
#define F32(...) tg_zeros(TG_SHAPE(__VA_ARGS__), TG_FLOAT32)
#define F64(...) tg_zeros(TG_SHAPE(__VA_ARGS__), TG_FLOAT64)
#define I64(...) tg_zeros(TG_SHAPE(__VA_ARGS__), TG_INT64)

/* True when the last error's first line starts with prefix. */
static bool last_error_starts(const char *prefix)
{
    return strncmp(tg_last_error(), prefix, strlen(prefix)) == 0;
}

/* Runs the backward of sum(op(x)) with every allocation after the first
 * n failing, for n = 0, 1, 2, ... until the message starts with prefix
 * (returns true) or the backward succeeds (returns false). x is a fresh
 * (4, 3) float64 leaf each time; op builds the forward from it. */
static bool backward_fails_with(tg_tensor *(*op)(const tg_tensor *x),
                                const char *prefix)
{
    for (int64_t n = 0; n < 200; n++) {
        tg_tensor *x = tg_randn(TG_SHAPE(4, 3), TG_FLOAT64);
        tg_set_requires_grad(x, true);
        tg_tensor *y = op(x);
        tg_tensor *loss = tg_sum(y, NULL, 0, false);
        tg_clear_error();
        tg_fail_allocations_after(n);
        int rc = tg_backward(loss);
        tg_fail_allocations_after(-1);
        tg_release(loss);
        tg_release(y);
        tg_release(x);
        if (rc == 0)
            return false;
        if (last_error_starts(prefix))
            return true;
    }
    return false;
}

/* Fails every allocation after the first n of op(x) (forward) or of the
 * backward of sum(op(x)), for n = 0, 1, 2, ... until the last error's
 * first line is first_line (returns true) or the call succeeds (returns
 * false): for messages that come after other out-of-memory messages of
 * the same op in the allocation order. x as in backward_fails_with. */
static bool oom_sweep_reaches(tg_tensor *(*op)(const tg_tensor *x),
                              bool in_backward, const char *first_line)
{
    size_t len = strlen(first_line);
    for (int64_t n = 0; n < 200; n++) {
        tg_tensor *x = tg_randn(TG_SHAPE(4, 3), TG_FLOAT64);
        tg_set_requires_grad(x, true);
        tg_clear_error();
        if (!in_backward)
            tg_fail_allocations_after(n);
        tg_tensor *y = op(x);
        tg_fail_allocations_after(-1);
        tg_tensor *loss = in_backward ? tg_sum(y, NULL, 0, false) : NULL;
        int rc = y ? 0 : -1;
        if (in_backward) {
            tg_clear_error();
            tg_fail_allocations_after(n);
            rc = tg_backward(loss);
            tg_fail_allocations_after(-1);
        }
        tg_release(loss);
        tg_release(y);
        tg_release(x);
        if (rc == 0)
            return false;
        const char *e = tg_last_error();
        if (strncmp(e, first_line, len) == 0 &&
            (e[len] == '\0' || e[len] == '\n'))
            return true;
    }
    return false;
}

/* ---- views ---- */

ERROR_CASE(tg_reshape, numel_mismatch,
           "the new shape has a different number of elements")
{
    tg_tensor *x = F32(2, 3);
    tg_tensor *y = tg_reshape(x, TG_SHAPE(4));
    EXPECT_ERROR(y == NULL,
                 "tg_reshape: cannot reshape a tensor of shape (2, 3) (6 elements) into shape (4,) (4 elements)");
    tg_release(x);
}

ERROR_CASE(tg_reshape, inferred_size_does_not_divide,
           "the sizes other than -1 do not divide the element count")
{
    tg_tensor *x = F32(2, 3);
    tg_tensor *y = tg_reshape(x, TG_SHAPE(4, -1));
    EXPECT_ERROR(y == NULL,
                 "tg_reshape: cannot reshape a tensor of shape (2, 3) (6 elements) into shape (4, -1)");
    tg_release(x);
}

ERROR_CASE(tg_reshape, two_minus_ones, "the new shape has -1 twice")
{
    tg_tensor *x = F32(2, 3);
    tg_tensor *y = tg_reshape(x, TG_SHAPE(-1, -1));
    EXPECT_ERROR(y == NULL, "tg_reshape: shape (-1, -1) has more than one -1");
    tg_release(x);
}

ERROR_CASE(tg_reshape, negative_size,
           "a size in the new shape is negative (other than -1)")
{
    tg_tensor *x = F32(2, 3);
    tg_tensor *y = tg_reshape(x, TG_SHAPE(-2, -3));
    EXPECT_ERROR(y == NULL,
                 "tg_reshape: shape (-2, -3) has the invalid size -2 at dim 0");
    tg_release(x);
}

ERROR_CASE(tg_reshape, minus_one_with_no_elements,
           "x is empty and the other sizes multiply to 0, so -1 could be anything")
{
    tg_tensor *x = F32(0, 3);
    tg_tensor *y = tg_reshape(x, TG_SHAPE(0, -1));
    EXPECT_ERROR(y == NULL,
                 "tg_reshape: cannot infer the -1 in shape (0, -1) for a tensor of shape (0, 3) (0 elements)");
    tg_release(x);
}

ERROR_CASE(tg_reshape, null_shape, "shape is NULL but ndim > 0")
{
    tg_tensor *x = F32(2, 3);
    tg_tensor *y = tg_reshape(x, NULL, 2);
    EXPECT_ERROR(y == NULL, "tg_reshape: shape is NULL but ndim is 2");
    tg_release(x);
}

ERROR_CASE(tg_reshape, too_many_dims,
           "ndim is negative or above TG_MAX_DIMS (8)")
{
    tg_tensor *x = F32(2, 3);
    int64_t shape[9] = {1, 1, 1, 1, 1, 1, 1, 2, 3};
    tg_tensor *y = tg_reshape(x, shape, 9);
    EXPECT_ERROR(y == NULL, "tg_reshape: cannot make a shape with 9 dims");
    tg_release(x);
}

ERROR_CASE(tg_reshape, too_large,
           "x is empty and the other sizes of the new shape multiply to more than 2^59")
{
    tg_tensor *x = F32(0, 3);
    tg_tensor *y = tg_reshape(x, TG_SHAPE(INT64_C(1) << 40, 0, INT64_C(1) << 40));
    EXPECT_ERROR(y == NULL,
                 "tg_reshape: shape (1099511627776, 0, 1099511627776) has too many elements");
    tg_release(x);
}

ERROR_CASE(tg_reshape, null_tensor, "x is NULL (an earlier call failed)")
{
    EXPECT_SILENT(tg_reshape(NULL, (int64_t[]){4}, 1) == NULL);
}

ERROR_CASE(tg_view, not_contiguous,
           "the strides of x cannot describe the new shape without a copy (e.g. a transposed tensor)")
{
    tg_tensor *x = F32(2, 3);
    tg_tensor *t = tg_transpose(x, 0, 1);
    tg_tensor *y = tg_view(t, TG_SHAPE(6));
    EXPECT_ERROR(y == NULL,
                 "tg_view: cannot view a tensor of shape (3, 2) with strides (1, 3) as shape (6,)");
    tg_release(t);
    tg_release(x);
}

ERROR_CASE(tg_view, numel_mismatch,
           "the new shape has a different number of elements")
{
    tg_tensor *x = F32(2, 3);
    tg_tensor *y = tg_view(x, TG_SHAPE(5));
    EXPECT_ERROR(y == NULL,
                 "tg_view: cannot view a tensor of shape (2, 3) (6 elements) as shape (5,) (5 elements)");
    tg_release(x);
}

ERROR_CASE(tg_view, inferred_size_does_not_divide,
           "the sizes other than -1 do not divide the element count")
{
    tg_tensor *x = F32(2, 3);
    tg_tensor *y = tg_view(x, TG_SHAPE(-1, 4));
    EXPECT_ERROR(y == NULL,
                 "tg_view: cannot view a tensor of shape (2, 3) (6 elements) as shape (-1, 4)");
    tg_release(x);
}

ERROR_CASE(tg_view, two_minus_ones, "the new shape has -1 twice")
{
    tg_tensor *x = F32(2, 3);
    tg_tensor *y = tg_view(x, TG_SHAPE(-1, 3, -1));
    EXPECT_ERROR(y == NULL, "tg_view: shape (-1, 3, -1) has more than one -1");
    tg_release(x);
}

ERROR_CASE(tg_view, negative_size,
           "a size in the new shape is negative (other than -1)")
{
    tg_tensor *x = F32(2, 3);
    tg_tensor *y = tg_view(x, TG_SHAPE(3, -2));
    EXPECT_ERROR(y == NULL,
                 "tg_view: shape (3, -2) has the invalid size -2 at dim 1");
    tg_release(x);
}

ERROR_CASE(tg_view, minus_one_with_no_elements,
           "x is empty and the other sizes multiply to 0, so -1 could be anything")
{
    tg_tensor *x = F32(3, 0);
    tg_tensor *y = tg_view(x, TG_SHAPE(-1, 0));
    EXPECT_ERROR(y == NULL,
                 "tg_view: cannot infer the -1 in shape (-1, 0) for a tensor of shape (3, 0) (0 elements)");
    tg_release(x);
}

ERROR_CASE(tg_view, null_shape, "shape is NULL but ndim > 0")
{
    tg_tensor *x = F32(6);
    tg_tensor *y = tg_view(x, NULL, 1);
    EXPECT_ERROR(y == NULL, "tg_view: shape is NULL but ndim is 1");
    tg_release(x);
}

ERROR_CASE(tg_view, too_large,
           "x is empty and the other sizes of the new shape multiply to more than 2^59")
{
    tg_tensor *x = F32(3, 0);
    tg_tensor *y = tg_view(x, TG_SHAPE(0, INT64_MAX, 2));
    EXPECT_ERROR(y == NULL,
                 "tg_view: shape (0, 9223372036854775807, 2) has too many elements");
    tg_release(x);
}

ERROR_CASE(tg_view, null_tensor, "x is NULL (an earlier call failed)")
{
    EXPECT_SILENT(tg_view(NULL, TG_SHAPE(6)) == NULL);
}

ERROR_CASE(tg_permute, wrong_count,
           "dims does not list as many dims as x has")
{
    tg_tensor *x = F32(2, 3, 4);
    tg_tensor *y = tg_permute(x, TG_DIMS(1, 0));
    EXPECT_ERROR(y == NULL,
                 "tg_permute: got 2 dims for a tensor of shape (2, 3, 4)");
    tg_release(x);
}

ERROR_CASE(tg_permute, one_dim_for_three,
           "dims lists one dim for a tensor of more (the count in the "
           "singular)")
{
    tg_tensor *x = F32(2, 3, 4);
    tg_tensor *y = tg_permute(x, TG_DIMS(0));
    EXPECT_ERROR(y == NULL,
                 "tg_permute: got 1 dim for a tensor of shape (2, 3, 4)");
    tg_release(x);
}

ERROR_CASE(tg_permute, repeated_dim,
           "a dim appears twice in dims (counting negative dims from the end)")
{
    tg_tensor *x = F32(2, 3, 4);
    tg_tensor *y = tg_permute(x, TG_DIMS(0, 2, -1));
    EXPECT_ERROR(y == NULL,
                 "tg_permute: dims (0, 2, -1) is not a permutation of the dims of a tensor of shape (2, 3, 4)");
    tg_release(x);
}

ERROR_CASE(tg_permute, dim_out_of_range, "a dim in dims is out of range")
{
    tg_tensor *x = F32(2, 3);
    tg_tensor *y = tg_permute(x, TG_DIMS(2, 0));
    EXPECT_ERROR(y == NULL,
                 "tg_permute: dim 2 is out of range for a tensor with 2 dims");
    tg_release(x);
}

ERROR_CASE(tg_permute, null_dims, "dims is NULL but ndims > 0")
{
    tg_tensor *x = F32(2, 3);
    tg_tensor *y = tg_permute(x, NULL, 2);
    EXPECT_ERROR(y == NULL, "tg_permute: dims is NULL but ndims is 2");
    tg_release(x);
}

ERROR_CASE(tg_permute, null_tensor, "x is NULL (an earlier call failed)")
{
    EXPECT_SILENT(tg_permute(NULL, TG_DIMS(1, 0)) == NULL);
}

ERROR_CASE(tg_transpose, dim_out_of_range, "dim0 or dim1 is out of range")
{
    tg_tensor *x = F32(2, 3);
    tg_tensor *y = tg_transpose(x, 0, 2);
    EXPECT_ERROR(y == NULL,
                 "tg_transpose: dim 2 is out of range for a tensor with 2 dims");
    tg_release(x);
}

ERROR_CASE(tg_transpose, out_of_memory,
           "memory runs out making the view")
{
    tg_tensor *x = F32(2, 3);
    tg_fail_allocations_after(0);
    tg_tensor *y = tg_transpose(x, 0, 1);
    tg_fail_allocations_after(-1);
    EXPECT_ERROR(y == NULL, "tg_view: out of memory");
    tg_release(x);
}

ERROR_CASE(tg_transpose, null_tensor, "x is NULL (an earlier call failed)")
{
    EXPECT_SILENT(tg_transpose(NULL, 0, 1) == NULL);
}

ERROR_CASE(tg_squeeze, dim_out_of_range, "dim is out of range")
{
    tg_tensor *x = F32(1, 3);
    tg_tensor *y = tg_squeeze(x, -3);
    EXPECT_ERROR(y == NULL,
                 "tg_squeeze: dim -3 is out of range for a tensor with 2 dims");
    tg_release(x);
}

ERROR_CASE(tg_squeeze, null_tensor, "x is NULL (an earlier call failed)")
{
    EXPECT_SILENT(tg_squeeze(NULL, 0) == NULL);
}

ERROR_CASE(tg_squeeze_all, null_tensor, "x is NULL (an earlier call failed)")
{
    EXPECT_SILENT(tg_squeeze_all(NULL) == NULL);
}

ERROR_CASE(tg_unsqueeze, dim_out_of_range,
           "dim is outside [-ndim-1, ndim] (a position in the result)")
{
    tg_tensor *x = F32(2, 3);
    tg_tensor *y = tg_unsqueeze(x, 3);
    EXPECT_ERROR(y == NULL,
                 "tg_unsqueeze: dim 3 is out of range for unsqueezing a tensor with 2 dims");
    tg_release(x);
}

ERROR_CASE(tg_unsqueeze, too_many_dims, "x already has TG_MAX_DIMS (8) dims")
{
    tg_tensor *x = F32(1, 1, 1, 1, 1, 1, 2, 3);
    tg_tensor *y = tg_unsqueeze(x, 0);
    EXPECT_ERROR(y == NULL,
                 "tg_unsqueeze: cannot add a dim to a tensor of shape (1, 1, 1, 1, 1, 1, 2, 3)");
    tg_release(x);
}

ERROR_CASE(tg_unsqueeze, null_tensor, "x is NULL (an earlier call failed)")
{
    EXPECT_SILENT(tg_unsqueeze(NULL, 0) == NULL);
}

ERROR_CASE(tg_expand, size_not_one,
           "a dim of x that is not 1 would have to grow")
{
    tg_tensor *x = F32(2, 3);
    tg_tensor *y = tg_expand(x, TG_SHAPE(4, 3));
    EXPECT_ERROR(y == NULL,
                 "tg_expand: cannot expand a tensor of shape (2, 3) to shape (4, 3)");
    tg_release(x);
}

ERROR_CASE(tg_expand, fewer_dims,
           "the target shape has fewer dims than x")
{
    tg_tensor *x = F32(2, 3);
    tg_tensor *y = tg_expand(x, TG_SHAPE(3));
    EXPECT_ERROR(y == NULL,
                 "tg_expand: cannot expand a tensor of shape (2, 3) to shape (3,)");
    tg_release(x);
}

ERROR_CASE(tg_expand, minus_one_new_dim,
           "-1 (keep the size) is given for a new leading dim")
{
    tg_tensor *x = F32(3);
    tg_tensor *y = tg_expand(x, TG_SHAPE(-1, 3));
    EXPECT_ERROR(y == NULL,
                 "tg_expand: cannot expand a tensor of shape (3,) to shape (-1, 3)");
    tg_release(x);
}

ERROR_CASE(tg_expand, negative_size,
           "a size in the target shape is negative (other than -1)")
{
    tg_tensor *x = F32(1, 3);
    tg_tensor *y = tg_expand(x, TG_SHAPE(-4, 3));
    EXPECT_ERROR(y == NULL,
                 "tg_expand: shape (-4, 3) has the invalid size -4 at dim 0");
    tg_release(x);
}

ERROR_CASE(tg_expand, too_many_elements,
           "the expanded shape has 2^59 elements or more")
{
    tg_tensor *x = F32(1, 1);
    tg_tensor *y = tg_expand(x, TG_SHAPE(INT64_C(1) << 30, INT64_C(1) << 30));
    EXPECT_ERROR(y == NULL,
                 "tg_expand: shape (1073741824, 1073741824) has too many elements");
    tg_release(x);
}

ERROR_CASE(tg_expand, null_shape, "shape is NULL but ndim > 0")
{
    tg_tensor *x = F32(1, 3);
    tg_tensor *y = tg_expand(x, NULL, 2);
    EXPECT_ERROR(y == NULL, "tg_expand: shape is NULL but ndim is 2");
    tg_release(x);
}

ERROR_CASE(tg_expand, null_tensor, "x is NULL (an earlier call failed)")
{
    EXPECT_SILENT(tg_expand(NULL, TG_SHAPE(2, 3)) == NULL);
}

ERROR_CASE(tg_broadcast_to, size_not_one,
           "a dim of x that is not 1 would have to grow")
{
    tg_tensor *x = F32(3);
    tg_tensor *y = tg_broadcast_to(x, TG_SHAPE(2, 4));
    EXPECT_ERROR(y == NULL,
                 "tg_broadcast_to: cannot broadcast a tensor of shape (3,) to shape (2, 4)");
    tg_release(x);
}

ERROR_CASE(tg_broadcast_to, fewer_dims,
           "the target shape has fewer dims than x")
{
    tg_tensor *x = F32(2, 3);
    tg_tensor *y = tg_broadcast_to(x, TG_SHAPE(6));
    EXPECT_ERROR(y == NULL,
                 "tg_broadcast_to: cannot broadcast a tensor of shape (2, 3) to shape (6,)");
    tg_release(x);
}

ERROR_CASE(tg_broadcast_to, negative_size,
           "a size in the target shape is negative (-1 is tg_expand's)")
{
    tg_tensor *x = F32(1, 3);
    tg_tensor *y = tg_broadcast_to(x, TG_SHAPE(2, -1));
    EXPECT_ERROR(y == NULL,
                 "tg_broadcast_to: shape (2, -1) has the invalid size -1 at dim 1");
    tg_release(x);
}

ERROR_CASE(tg_broadcast_to, null_shape, "shape is NULL but ndim > 0")
{
    tg_tensor *x = F32(3);
    tg_tensor *y = tg_broadcast_to(x, NULL, 2);
    EXPECT_ERROR(y == NULL, "tg_broadcast_to: shape is NULL but ndim is 2");
    tg_release(x);
}

ERROR_CASE(tg_broadcast_to, null_tensor, "x is NULL (an earlier call failed)")
{
    EXPECT_SILENT(tg_broadcast_to(NULL, TG_SHAPE(2, 3)) == NULL);
}

ERROR_CASE(tg_narrow, out_of_range,
           "start and length do not fit in the dim")
{
    tg_tensor *x = F32(4, 3);
    tg_tensor *y = tg_narrow(x, 0, 2, 3);
    EXPECT_ERROR(y == NULL,
                 "tg_narrow: start 2 and length 3 do not fit in dim 0 (size 4) of a tensor of shape (4, 3)");
    tg_release(x);
}

ERROR_CASE(tg_narrow, dim_out_of_range, "dim is out of range")
{
    tg_tensor *x = F32(4, 3);
    tg_tensor *y = tg_narrow(x, 2, 0, 1);
    EXPECT_ERROR(y == NULL,
                 "tg_narrow: dim 2 is out of range for a tensor with 2 dims");
    tg_release(x);
}

ERROR_CASE(tg_narrow, scalar, "x is 0-d")
{
    tg_tensor *x = tg_scalar(1.0, TG_FLOAT32);
    tg_tensor *y = tg_narrow(x, 0, 0, 1);
    EXPECT_ERROR(y == NULL, "tg_narrow: cannot narrow a 0-d tensor");
    tg_release(x);
}

ERROR_CASE(tg_narrow, null_tensor, "x is NULL (an earlier call failed)")
{
    EXPECT_SILENT(tg_narrow(NULL, 0, 0, 1) == NULL);
}

ERROR_CASE(tg_slice, step_not_positive, "step is 0 or negative")
{
    tg_tensor *x = F32(5);
    tg_tensor *y = tg_slice(x, 0, 4, 0, -1);
    EXPECT_ERROR(y == NULL, "tg_slice: step -1 is not allowed");
    tg_release(x);
}

ERROR_CASE(tg_slice, dim_out_of_range, "dim is out of range")
{
    tg_tensor *x = F32(5);
    tg_tensor *y = tg_slice(x, 1, 0, 2, 1);
    EXPECT_ERROR(y == NULL,
                 "tg_slice: dim 1 is out of range for a tensor with 1 dim");
    tg_release(x);
}

ERROR_CASE(tg_slice, scalar, "x is 0-d")
{
    tg_tensor *x = tg_scalar(1.0, TG_FLOAT32);
    tg_tensor *y = tg_slice(x, 0, 0, 1, 1);
    EXPECT_ERROR(y == NULL, "tg_slice: cannot slice a 0-d tensor");
    tg_release(x);
}

ERROR_CASE(tg_slice, null_tensor, "x is NULL (an earlier call failed)")
{
    EXPECT_SILENT(tg_slice(NULL, 0, 0, 1, 1) == NULL);
}

ERROR_CASE(tg_select, index_out_of_range, "index is out of range for the dim")
{
    tg_tensor *x = F32(2, 3);
    tg_tensor *y = tg_select(x, 1, 3);
    EXPECT_ERROR(y == NULL,
                 "tg_select: index 3 is out of range for dim 1 (size 3) of a tensor of shape (2, 3)");
    tg_release(x);
}

ERROR_CASE(tg_select, empty_dim, "the dim has size 0, so no index is valid")
{
    tg_tensor *x = F32(0, 3);
    tg_tensor *y = tg_select(x, 0, 0);
    EXPECT_ERROR(y == NULL,
                 "tg_select: index 0 is out of range for dim 0 of a tensor of shape (0, 3)");
    tg_release(x);
}

ERROR_CASE(tg_select, dim_out_of_range, "dim is out of range")
{
    tg_tensor *x = F32(2, 3);
    tg_tensor *y = tg_select(x, -3, 0);
    EXPECT_ERROR(y == NULL,
                 "tg_select: dim -3 is out of range for a tensor with 2 dims");
    tg_release(x);
}

ERROR_CASE(tg_select, scalar, "x is 0-d")
{
    tg_tensor *x = tg_scalar(1.0, TG_FLOAT32);
    tg_tensor *y = tg_select(x, 0, 0);
    EXPECT_ERROR(y == NULL, "tg_select: cannot select from a 0-d tensor");
    tg_release(x);
}

ERROR_CASE(tg_select, null_tensor, "x is NULL (an earlier call failed)")
{
    EXPECT_SILENT(tg_select(NULL, 0, 0) == NULL);
}

ERROR_CASE(tg_contiguous, null_tensor, "x is NULL (an earlier call failed)")
{
    EXPECT_SILENT(tg_contiguous(NULL) == NULL);
}

ERROR_CASE(tg_clone, null_tensor, "x is NULL (an earlier call failed)")
{
    EXPECT_SILENT(tg_clone(NULL) == NULL);
}

ERROR_CASE(tg_to_dtype, unknown_dtype, "dtype is not a tg_dtype value")
{
    tg_tensor *x = F32(2);
    tg_tensor *y = tg_to_dtype(x, (tg_dtype)7);
    EXPECT_ERROR(y == NULL, "tg_to_dtype: unknown dtype 7");
    tg_release(x);
}

ERROR_CASE(tg_to_dtype, null_tensor, "x is NULL (an earlier call failed)")
{
    EXPECT_SILENT(tg_to_dtype(NULL, TG_FLOAT64) == NULL);
}

/* ---- elementwise ---- */

ERROR_CASE(tg_add, shapes_do_not_broadcast, "the two shapes do not broadcast")
{
    tg_tensor *a = F32(2, 3), *b = F32(2);
    tg_tensor *y = tg_add(a, b);
    EXPECT_ERROR(y == NULL, "tg_add: cannot broadcast (2, 3) with (2,)");
    tg_release(a);
    tg_release(b);
}

ERROR_CASE(tg_add, result_too_large,
           "the shapes broadcast to one of more than 2^59 elements")
{
    /* Cheap operands: expanded views of one element. */
    tg_tensor *one = F32(1, 1);
    tg_tensor *a = tg_expand(one, TG_SHAPE(INT64_C(1) << 31, 1));
    tg_tensor *b = tg_expand(one, TG_SHAPE(1, INT64_C(1) << 31));
    tg_tensor *y = tg_add(a, b);
    EXPECT_ERROR(y == NULL,
                 "tg_add: shape (2147483648, 2147483648) has too many elements");
    tg_release(b);
    tg_release(a);
    tg_release(one);
}

ERROR_CASE(tg_add, out_of_memory, "memory runs out for the result")
{
    tg_tensor *a = F32(2, 3), *b = F32(2, 3);
    tg_fail_allocations_after(0);
    tg_tensor *y = tg_add(a, b);
    tg_fail_allocations_after(-1);
    EXPECT_ERROR(y == NULL,
                 "tg_alloc: out of memory allocating a float32 tensor of shape (2, 3)");
    tg_release(a);
    tg_release(b);
}

/* Every elementwise kernel has float32 and float64 loops, and an int64
 * input without an int64 loop is computed in float32: the apply
 * functions' dtype check never fires. */
ERROR_NOT_TRIGGERED(tg_add, "tg_add: not defined for %s tensors",
                    "every elementwise op has float32 and float64 kernels, "
                    "and int64 inputs of an op without an int64 kernel are "
                    "computed in float32");

/* tg_record's check that an op records one node is reported under the
 * node's name (AddBackward0 for tg_add). */
ERROR_NOT_TRIGGERED(tg_add,
                    "internal error: the output already has grad_fn %s",
                    "guards the ops' own code (an op whose forward recorded "
                    "ops of its own); any built-in op can report it under "
                    "its node's name, none does");

ERROR_CASE(tg_add, null_tensor, "a or b is NULL (an earlier call failed)")
{
    tg_tensor *a = F32(2);
    EXPECT_SILENT(tg_add(a, NULL) == NULL);
    tg_release(a);
}

ERROR_CASE(tg_sub, shapes_do_not_broadcast, "the two shapes do not broadcast")
{
    tg_tensor *a = F32(4, 1), *b = F32(3, 2);
    tg_tensor *y = tg_sub(a, b);
    EXPECT_ERROR(y == NULL, "tg_sub: cannot broadcast (4, 1) with (3, 2)");
    tg_release(a);
    tg_release(b);
}

ERROR_CASE(tg_sub, null_tensor, "a or b is NULL (an earlier call failed)")
{
    tg_tensor *b = F32(2);
    EXPECT_SILENT(tg_sub(NULL, b) == NULL);
    tg_release(b);
}

ERROR_CASE(tg_mul, shapes_do_not_broadcast, "the two shapes do not broadcast")
{
    tg_tensor *a = F32(3), *b = F32(4);
    tg_tensor *y = tg_mul(a, b);
    EXPECT_ERROR(y == NULL, "tg_mul: cannot broadcast (3,) with (4,)");
    tg_release(a);
    tg_release(b);
}

ERROR_CASE(tg_mul, null_tensor, "a or b is NULL (an earlier call failed)")
{
    tg_tensor *a = F32(2);
    EXPECT_SILENT(tg_mul(a, NULL) == NULL);
    tg_release(a);
}

ERROR_CASE(tg_div, shapes_do_not_broadcast, "the two shapes do not broadcast")
{
    tg_tensor *a = F32(2, 3), *b = F32(3, 2);
    tg_tensor *y = tg_div(a, b);
    EXPECT_ERROR(y == NULL, "tg_div: cannot broadcast (2, 3) with (3, 2)");
    tg_release(a);
    tg_release(b);
}

ERROR_CASE(tg_div, null_tensor, "a or b is NULL (an earlier call failed)")
{
    tg_tensor *a = F32(2);
    EXPECT_SILENT(tg_div(a, NULL) == NULL);
    tg_release(a);
}

ERROR_CASE(tg_pow, negative_int_power,
           "an int64 base is raised to a negative int64 exponent")
{
    tg_tensor *a = tg_full(TG_SHAPE(3), 2.0, TG_INT64);
    tg_tensor *b = tg_from_array((int64_t[]){1, -2, 3}, TG_SHAPE(3), TG_INT64);
    tg_tensor *y = tg_pow(a, b);
    EXPECT_ERROR(y == NULL,
                 "tg_pow: cannot raise an int64 tensor to the negative int64 power -2 (element 1 of b, in C order)");
    tg_release(a);
    tg_release(b);
}

ERROR_CASE(tg_pow, shapes_do_not_broadcast, "the two shapes do not broadcast")
{
    tg_tensor *a = F32(2, 3), *b = F32(2);
    tg_tensor *y = tg_pow(a, b);
    EXPECT_ERROR(y == NULL, "tg_pow: cannot broadcast (2, 3) with (2,)");
    tg_release(a);
    tg_release(b);
}

ERROR_CASE(tg_pow, null_tensor, "a or b is NULL (an earlier call failed)")
{
    tg_tensor *a = F32(2);
    EXPECT_SILENT(tg_pow(a, NULL) == NULL);
    tg_release(a);
}

ERROR_CASE(tg_maximum, shapes_do_not_broadcast,
           "the two shapes do not broadcast")
{
    tg_tensor *a = F32(2, 3), *b = F32(5);
    tg_tensor *y = tg_maximum(a, b);
    EXPECT_ERROR(y == NULL, "tg_maximum: cannot broadcast (2, 3) with (5,)");
    tg_release(a);
    tg_release(b);
}

ERROR_CASE(tg_maximum, null_tensor, "a or b is NULL (an earlier call failed)")
{
    tg_tensor *a = F32(2);
    EXPECT_SILENT(tg_maximum(a, NULL) == NULL);
    tg_release(a);
}

ERROR_CASE(tg_minimum, shapes_do_not_broadcast,
           "the two shapes do not broadcast")
{
    tg_tensor *a = F32(2, 3), *b = F32(5);
    tg_tensor *y = tg_minimum(a, b);
    EXPECT_ERROR(y == NULL, "tg_minimum: cannot broadcast (2, 3) with (5,)");
    tg_release(a);
    tg_release(b);
}

ERROR_CASE(tg_minimum, null_tensor, "a or b is NULL (an earlier call failed)")
{
    tg_tensor *a = F32(2);
    EXPECT_SILENT(tg_minimum(NULL, a) == NULL);
    tg_release(a);
}

ERROR_CASE(tg_add_scalar, null_tensor, "a is NULL (an earlier call failed)")
{
    EXPECT_SILENT(tg_add_scalar(NULL, 1.0) == NULL);
}

ERROR_CASE(tg_sub_scalar, null_tensor, "a is NULL (an earlier call failed)")
{
    EXPECT_SILENT(tg_sub_scalar(NULL, 1.0) == NULL);
}

ERROR_CASE(tg_rsub_scalar, null_tensor, "a is NULL (an earlier call failed)")
{
    EXPECT_SILENT(tg_rsub_scalar(NULL, 1.0) == NULL);
}

ERROR_CASE(tg_rdiv_scalar, null_tensor, "a is NULL (an earlier call failed)")
{
    EXPECT_SILENT(tg_rdiv_scalar(NULL, 1.0) == NULL);
}

ERROR_CASE(tg_mul_scalar, null_tensor, "a is NULL (an earlier call failed)")
{
    EXPECT_SILENT(tg_mul_scalar(NULL, 2.0) == NULL);
}

ERROR_CASE(tg_div_scalar, null_tensor, "a is NULL (an earlier call failed)")
{
    EXPECT_SILENT(tg_div_scalar(NULL, 2.0) == NULL);
}

ERROR_CASE(tg_pow_scalar, negative_int_power,
           "an int64 tensor is raised to a negative whole exponent")
{
    tg_tensor *a = tg_full(TG_SHAPE(3), 2.0, TG_INT64);
    tg_tensor *y = tg_pow_scalar(a, -1.0);
    EXPECT_ERROR(y == NULL,
                 "tg_pow_scalar: cannot raise an int64 tensor to the negative integer power -1");
    tg_release(a);
}

ERROR_CASE(tg_pow_scalar, null_tensor, "a is NULL (an earlier call failed)")
{
    EXPECT_SILENT(tg_pow_scalar(NULL, 2.0) == NULL);
}

ERROR_CASE(tg_neg, null_tensor, "x is NULL (an earlier call failed)")
{
    EXPECT_SILENT(tg_neg(NULL) == NULL);
}

ERROR_CASE(tg_exp, null_tensor, "x is NULL (an earlier call failed)")
{
    EXPECT_SILENT(tg_exp(NULL) == NULL);
}

ERROR_CASE(tg_log, null_tensor, "x is NULL (an earlier call failed)")
{
    EXPECT_SILENT(tg_log(NULL) == NULL);
}

ERROR_CASE(tg_sqrt, null_tensor, "x is NULL (an earlier call failed)")
{
    EXPECT_SILENT(tg_sqrt(NULL) == NULL);
}

ERROR_CASE(tg_rsqrt, null_tensor, "x is NULL (an earlier call failed)")
{
    EXPECT_SILENT(tg_rsqrt(NULL) == NULL);
}

ERROR_CASE(tg_abs, null_tensor, "x is NULL (an earlier call failed)")
{
    EXPECT_SILENT(tg_abs(NULL) == NULL);
}

ERROR_CASE(tg_tanh, null_tensor, "x is NULL (an earlier call failed)")
{
    EXPECT_SILENT(tg_tanh(NULL) == NULL);
}

ERROR_CASE(tg_sigmoid, null_tensor, "x is NULL (an earlier call failed)")
{
    EXPECT_SILENT(tg_sigmoid(NULL) == NULL);
}

ERROR_CASE(tg_relu, null_tensor, "x is NULL (an earlier call failed)")
{
    EXPECT_SILENT(tg_relu(NULL) == NULL);
}

ERROR_CASE(tg_gelu, unknown_approximation,
           "approx is neither TG_GELU_EXACT nor TG_GELU_TANH")
{
    tg_tensor *x = F32(3);
    tg_tensor *y = tg_gelu(x, (tg_gelu_approx)2);
    EXPECT_ERROR(y == NULL, "tg_gelu: unknown approximation 2");
    tg_release(x);
}

ERROR_CASE(tg_gelu, null_tensor, "x is NULL (an earlier call failed)")
{
    EXPECT_SILENT(tg_gelu(NULL, TG_GELU_EXACT) == NULL);
}

ERROR_CASE(tg_silu, int64_input, "x is an int64 tensor")
{
    tg_tensor *x = I64(3);
    tg_tensor *y = tg_silu(x);
    EXPECT_ERROR(y == NULL, "tg_silu: cannot take silu of an int64 tensor");
    tg_release(x);
}

ERROR_CASE(tg_silu, null_tensor, "x is NULL (an earlier call failed)")
{
    EXPECT_SILENT(tg_silu(NULL) == NULL);
}

ERROR_CASE(tg_eq, shapes_do_not_broadcast, "the two shapes do not broadcast")
{
    tg_tensor *a = F32(2, 3), *b = F32(2);
    tg_tensor *y = tg_eq(a, b);
    EXPECT_ERROR(y == NULL, "tg_eq: cannot broadcast (2, 3) with (2,)");
    tg_release(a);
    tg_release(b);
}

ERROR_CASE(tg_eq, null_tensor, "a or b is NULL (an earlier call failed)")
{
    tg_tensor *a = F32(2);
    EXPECT_SILENT(tg_eq(a, NULL) == NULL);
    tg_release(a);
}

ERROR_CASE(tg_ne, shapes_do_not_broadcast, "the two shapes do not broadcast")
{
    tg_tensor *a = F32(2, 3), *b = F32(2);
    tg_tensor *y = tg_ne(a, b);
    EXPECT_ERROR(y == NULL, "tg_ne: cannot broadcast (2, 3) with (2,)");
    tg_release(a);
    tg_release(b);
}

ERROR_CASE(tg_ne, null_tensor, "a or b is NULL (an earlier call failed)")
{
    tg_tensor *a = F32(2);
    EXPECT_SILENT(tg_ne(NULL, a) == NULL);
    tg_release(a);
}

ERROR_CASE(tg_lt, shapes_do_not_broadcast, "the two shapes do not broadcast")
{
    tg_tensor *a = F32(2, 3), *b = F32(2);
    tg_tensor *y = tg_lt(a, b);
    EXPECT_ERROR(y == NULL, "tg_lt: cannot broadcast (2, 3) with (2,)");
    tg_release(a);
    tg_release(b);
}

ERROR_CASE(tg_lt, null_tensor, "a or b is NULL (an earlier call failed)")
{
    tg_tensor *a = F32(2);
    EXPECT_SILENT(tg_lt(a, NULL) == NULL);
    tg_release(a);
}

ERROR_CASE(tg_le, shapes_do_not_broadcast, "the two shapes do not broadcast")
{
    tg_tensor *a = F32(2, 3), *b = F32(2);
    tg_tensor *y = tg_le(a, b);
    EXPECT_ERROR(y == NULL, "tg_le: cannot broadcast (2, 3) with (2,)");
    tg_release(a);
    tg_release(b);
}

ERROR_CASE(tg_le, null_tensor, "a or b is NULL (an earlier call failed)")
{
    tg_tensor *a = F32(2);
    EXPECT_SILENT(tg_le(a, NULL) == NULL);
    tg_release(a);
}

ERROR_CASE(tg_gt, shapes_do_not_broadcast, "the two shapes do not broadcast")
{
    tg_tensor *a = F32(2, 3), *b = F32(2);
    tg_tensor *y = tg_gt(a, b);
    EXPECT_ERROR(y == NULL, "tg_gt: cannot broadcast (2, 3) with (2,)");
    tg_release(a);
    tg_release(b);
}

ERROR_CASE(tg_gt, null_tensor, "a or b is NULL (an earlier call failed)")
{
    tg_tensor *a = F32(2);
    EXPECT_SILENT(tg_gt(a, NULL) == NULL);
    tg_release(a);
}

ERROR_CASE(tg_ge, shapes_do_not_broadcast, "the two shapes do not broadcast")
{
    tg_tensor *a = F32(2, 3), *b = F32(2);
    tg_tensor *y = tg_ge(a, b);
    EXPECT_ERROR(y == NULL, "tg_ge: cannot broadcast (2, 3) with (2,)");
    tg_release(a);
    tg_release(b);
}

ERROR_CASE(tg_ge, null_tensor, "a or b is NULL (an earlier call failed)")
{
    tg_tensor *a = F32(2);
    EXPECT_SILENT(tg_ge(a, NULL) == NULL);
    tg_release(a);
}

ERROR_CASE(tg_eq_scalar, null_tensor, "a is NULL (an earlier call failed)")
{
    EXPECT_SILENT(tg_eq_scalar(NULL, 0.0) == NULL);
}

ERROR_CASE(tg_ne_scalar, null_tensor, "a is NULL (an earlier call failed)")
{
    EXPECT_SILENT(tg_ne_scalar(NULL, 0.0) == NULL);
}

ERROR_CASE(tg_lt_scalar, null_tensor, "a is NULL (an earlier call failed)")
{
    EXPECT_SILENT(tg_lt_scalar(NULL, 0.0) == NULL);
}

ERROR_CASE(tg_le_scalar, null_tensor, "a is NULL (an earlier call failed)")
{
    EXPECT_SILENT(tg_le_scalar(NULL, 0.0) == NULL);
}

ERROR_CASE(tg_gt_scalar, null_tensor, "a is NULL (an earlier call failed)")
{
    EXPECT_SILENT(tg_gt_scalar(NULL, 0.0) == NULL);
}

ERROR_CASE(tg_ge_scalar, null_tensor, "a is NULL (an earlier call failed)")
{
    EXPECT_SILENT(tg_ge_scalar(NULL, 0.0) == NULL);
}

ERROR_CASE(tg_where, shapes_do_not_broadcast,
           "cond, a and b do not broadcast together")
{
    tg_tensor *c = I64(2, 3), *a = F32(3), *b = F32(2);
    tg_tensor *y = tg_where(c, a, b);
    EXPECT_ERROR(y == NULL,
                 "tg_where: cannot broadcast cond (2, 3), a (3,) and b (2,) together");
    tg_release(c);
    tg_release(a);
    tg_release(b);
}

ERROR_CASE(tg_where, result_too_large,
           "cond, a and b broadcast to a shape of more than 2^59 elements")
{
    tg_tensor *one = F32(1, 1);
    tg_tensor *a = tg_expand(one, TG_SHAPE(INT64_C(1) << 31, 1));
    tg_tensor *b = tg_expand(one, TG_SHAPE(1, INT64_C(1) << 31));
    tg_tensor *y = tg_where(one, a, b);
    EXPECT_ERROR(y == NULL,
                 "tg_where: shape (2147483648, 2147483648) has too many elements");
    tg_release(b);
    tg_release(a);
    tg_release(one);
}

ERROR_CASE(tg_where, null_tensor,
           "cond, a or b is NULL (an earlier call failed)")
{
    tg_tensor *a = F32(2), *b = F32(2);
    EXPECT_SILENT(tg_where(NULL, a, b) == NULL);
    tg_release(a);
    tg_release(b);
}

ERROR_CASE(tg_clamp, nan_bound, "lo or hi is NaN")
{
    tg_tensor *x = F32(3);
    tg_tensor *y = tg_clamp(x, NAN, 1.0);
    EXPECT_ERROR(y == NULL, "tg_clamp: cannot clamp to [nan, 1]");
    tg_release(x);
}

ERROR_CASE(tg_clamp, null_tensor, "x is NULL (an earlier call failed)")
{
    EXPECT_SILENT(tg_clamp(NULL, 0.0, 1.0) == NULL);
}

/* ---- reductions ---- */

ERROR_CASE(tg_sum, dim_out_of_range, "a dim in dims is out of range")
{
    tg_tensor *x = F32(2, 3);
    tg_tensor *y = tg_sum(x, TG_DIMS(2), false);
    EXPECT_ERROR(y == NULL,
                 "tg_sum: dim 2 is out of range for a tensor with 2 dims");
    tg_release(x);
}

ERROR_CASE(tg_sum, repeated_dim,
           "a dim is listed twice (counting negative dims from the end)")
{
    tg_tensor *x = F32(2, 3);
    tg_tensor *y = tg_sum(x, TG_DIMS(1, -1), false);
    EXPECT_ERROR(y == NULL,
                 "tg_sum: dims [1, -1] name dim 1 twice for a tensor of shape (2, 3)");
    tg_release(x);
}

ERROR_CASE(tg_sum, negative_ndims, "ndims is negative")
{
    tg_tensor *x = F32(2, 3);
    tg_tensor *y = tg_sum(x, (const int[]){0}, -1, false);
    EXPECT_ERROR(y == NULL, "tg_sum: ndims is -1");
    tg_release(x);
}

ERROR_CASE(tg_sum, null_tensor, "x is NULL (an earlier call failed)")
{
    EXPECT_SILENT(tg_sum(NULL, NULL, 0, false) == NULL);
}

ERROR_CASE(tg_mean, int64_input, "x is an int64 tensor")
{
    tg_tensor *x = I64(2, 3);
    tg_tensor *y = tg_mean(x, NULL, 0, false);
    EXPECT_ERROR(y == NULL,
                 "tg_mean: cannot take the mean of an int64 tensor");
    tg_release(x);
}

ERROR_CASE(tg_mean, dim_out_of_range, "a dim in dims is out of range")
{
    tg_tensor *x = F32(2, 3);
    tg_tensor *y = tg_mean(x, TG_DIMS(-3), false);
    EXPECT_ERROR(y == NULL,
                 "tg_mean: dim -3 is out of range for a tensor with 2 dims");
    tg_release(x);
}

ERROR_CASE(tg_mean, repeated_dim,
           "a dim is listed twice (counting negative dims from the end)")
{
    tg_tensor *x = F32(2, 3);
    tg_tensor *y = tg_mean(x, TG_DIMS(0, 0), true);
    EXPECT_ERROR(y == NULL,
                 "tg_mean: dims [0, 0] name dim 0 twice for a tensor of shape (2, 3)");
    tg_release(x);
}

ERROR_CASE(tg_mean, negative_ndims, "ndims is negative")
{
    tg_tensor *x = F32(2, 3);
    tg_tensor *y = tg_mean(x, (const int[]){0}, -2, false);
    EXPECT_ERROR(y == NULL, "tg_mean: ndims is -2");
    tg_release(x);
}

ERROR_CASE(tg_mean, null_tensor, "x is NULL (an earlier call failed)")
{
    EXPECT_SILENT(tg_mean(NULL, NULL, 0, false) == NULL);
}

ERROR_CASE(tg_var, int64_input, "x is an int64 tensor")
{
    tg_tensor *x = I64(4);
    tg_tensor *y = tg_var(x, NULL, 0, 1, false);
    EXPECT_ERROR(y == NULL,
                 "tg_var: cannot take the variance of an int64 tensor");
    tg_release(x);
}

ERROR_CASE(tg_var, dim_out_of_range, "a dim in dims is out of range")
{
    tg_tensor *x = F32(4);
    tg_tensor *y = tg_var(x, TG_DIMS(1), 1, false);
    EXPECT_ERROR(y == NULL,
                 "tg_var: dim 1 is out of range for a tensor with 1 dim");
    tg_release(x);
}

ERROR_CASE(tg_var, repeated_dim,
           "a dim is listed twice (counting negative dims from the end)")
{
    tg_tensor *x = F32(2, 3);
    tg_tensor *y = tg_var(x, TG_DIMS(0, -2), 1, false);
    EXPECT_ERROR(y == NULL,
                 "tg_var: dims [0, -2] name dim 0 twice for a tensor of shape (2, 3)");
    tg_release(x);
}

ERROR_CASE(tg_var, negative_ndims, "ndims is negative")
{
    tg_tensor *x = F32(4);
    tg_tensor *y = tg_var(x, (const int[]){0}, -1, 1, false);
    EXPECT_ERROR(y == NULL, "tg_var: ndims is -1");
    tg_release(x);
}

ERROR_CASE(tg_var, null_tensor, "x is NULL (an earlier call failed)")
{
    EXPECT_SILENT(tg_var(NULL, NULL, 0, 1, false) == NULL);
}

ERROR_CASE(tg_std, int64_input, "x is an int64 tensor")
{
    tg_tensor *x = I64(4);
    tg_tensor *y = tg_std(x, NULL, 0, 1, false);
    EXPECT_ERROR(y == NULL,
                 "tg_std: cannot take the standard deviation of an int64 tensor");
    tg_release(x);
}

ERROR_CASE(tg_std, dim_out_of_range, "a dim in dims is out of range")
{
    tg_tensor *x = F32(4);
    tg_tensor *y = tg_std(x, TG_DIMS(-2), 1, false);
    EXPECT_ERROR(y == NULL,
                 "tg_std: dim -2 is out of range for a tensor with 1 dim");
    tg_release(x);
}

ERROR_CASE(tg_std, repeated_dim,
           "a dim is listed twice (counting negative dims from the end)")
{
    tg_tensor *x = F32(2, 3);
    tg_tensor *y = tg_std(x, TG_DIMS(1, 1), 1, false);
    EXPECT_ERROR(y == NULL,
                 "tg_std: dims [1, 1] name dim 1 twice for a tensor of shape (2, 3)");
    tg_release(x);
}

ERROR_CASE(tg_std, negative_ndims, "ndims is negative")
{
    tg_tensor *x = F32(4);
    tg_tensor *y = tg_std(x, (const int[]){0}, -1, 1, false);
    EXPECT_ERROR(y == NULL, "tg_std: ndims is -1");
    tg_release(x);
}

ERROR_CASE(tg_std, null_tensor, "x is NULL (an earlier call failed)")
{
    EXPECT_SILENT(tg_std(NULL, NULL, 0, 1, false) == NULL);
}

ERROR_CASE(tg_max, empty_dim, "a reduced dim has size 0")
{
    tg_tensor *x = F32(2, 0);
    tg_tensor *y = tg_max(x, TG_DIMS(1), false);
    EXPECT_ERROR(y == NULL,
                 "tg_max: cannot reduce dim 1 of size 0 in a tensor of shape (2, 0)");
    tg_release(x);
}

ERROR_CASE(tg_max, dim_out_of_range, "a dim in dims is out of range")
{
    tg_tensor *x = F32(2, 3);
    tg_tensor *y = tg_max(x, TG_DIMS(5), false);
    EXPECT_ERROR(y == NULL,
                 "tg_max: dim 5 is out of range for a tensor with 2 dims");
    tg_release(x);
}

ERROR_CASE(tg_max, repeated_dim,
           "a dim is listed twice (counting negative dims from the end)")
{
    tg_tensor *x = F32(2, 3);
    tg_tensor *y = tg_max(x, TG_DIMS(-1, 1), false);
    EXPECT_ERROR(y == NULL,
                 "tg_max: dims [-1, 1] name dim 1 twice for a tensor of shape (2, 3)");
    tg_release(x);
}

ERROR_CASE(tg_max, negative_ndims, "ndims is negative")
{
    tg_tensor *x = F32(2, 3);
    tg_tensor *y = tg_max(x, (const int[]){0}, -1, false);
    EXPECT_ERROR(y == NULL, "tg_max: ndims is -1");
    tg_release(x);
}

ERROR_CASE(tg_max, null_tensor, "x is NULL (an earlier call failed)")
{
    EXPECT_SILENT(tg_max(NULL, NULL, 0, false) == NULL);
}

ERROR_CASE(tg_min, empty_dim, "a reduced dim has size 0")
{
    tg_tensor *x = F32(0, 3);
    tg_tensor *y = tg_min(x, NULL, 0, false);
    EXPECT_ERROR(y == NULL,
                 "tg_min: cannot reduce dim 0 of size 0 in a tensor of shape (0, 3)");
    tg_release(x);
}

ERROR_CASE(tg_min, dim_out_of_range, "a dim in dims is out of range")
{
    tg_tensor *x = F32(2, 3);
    tg_tensor *y = tg_min(x, TG_DIMS(-3), false);
    EXPECT_ERROR(y == NULL,
                 "tg_min: dim -3 is out of range for a tensor with 2 dims");
    tg_release(x);
}

ERROR_CASE(tg_min, repeated_dim,
           "a dim is listed twice (counting negative dims from the end)")
{
    tg_tensor *x = F32(2, 3);
    tg_tensor *y = tg_min(x, TG_DIMS(0, -2), false);
    EXPECT_ERROR(y == NULL,
                 "tg_min: dims [0, -2] name dim 0 twice for a tensor of shape (2, 3)");
    tg_release(x);
}

ERROR_CASE(tg_min, negative_ndims, "ndims is negative")
{
    tg_tensor *x = F32(2, 3);
    tg_tensor *y = tg_min(x, (const int[]){0}, -1, false);
    EXPECT_ERROR(y == NULL, "tg_min: ndims is -1");
    tg_release(x);
}

ERROR_CASE(tg_min, null_tensor, "x is NULL (an earlier call failed)")
{
    EXPECT_SILENT(tg_min(NULL, NULL, 0, false) == NULL);
}

ERROR_CASE(tg_argmax, empty_dim, "the dim has size 0")
{
    tg_tensor *x = F32(3, 0);
    tg_tensor *y = tg_argmax(x, 1, false);
    EXPECT_ERROR(y == NULL,
                 "tg_argmax: cannot reduce dim 1 of size 0 in a tensor of shape (3, 0)");
    tg_release(x);
}

ERROR_CASE(tg_argmax, dim_out_of_range, "dim is out of range")
{
    tg_tensor *x = F32(3, 4);
    tg_tensor *y = tg_argmax(x, 2, false);
    EXPECT_ERROR(y == NULL,
                 "tg_argmax: dim 2 is out of range for a tensor with 2 dims");
    tg_release(x);
}

ERROR_CASE(tg_argmax, null_tensor, "x is NULL (an earlier call failed)")
{
    EXPECT_SILENT(tg_argmax(NULL, 0, false) == NULL);
}

ERROR_CASE(tg_argmin, empty_dim, "the dim has size 0")
{
    tg_tensor *x = F32(0, 4);
    tg_tensor *y = tg_argmin(x, 0, true);
    EXPECT_ERROR(y == NULL,
                 "tg_argmin: cannot reduce dim 0 of size 0 in a tensor of shape (0, 4)");
    tg_release(x);
}

ERROR_CASE(tg_argmin, dim_out_of_range, "dim is out of range")
{
    tg_tensor *x = F32(3, 4);
    tg_tensor *y = tg_argmin(x, -3, false);
    EXPECT_ERROR(y == NULL,
                 "tg_argmin: dim -3 is out of range for a tensor with 2 dims");
    tg_release(x);
}

ERROR_CASE(tg_argmin, null_tensor, "x is NULL (an earlier call failed)")
{
    EXPECT_SILENT(tg_argmin(NULL, 0, false) == NULL);
}

ERROR_CASE(tg_max_dim, empty_dim, "the dim has size 0")
{
    tg_tensor *x = F32(3, 0);
    tg_tensor *indices = NULL;
    tg_tensor *y = tg_max_dim(x, -1, false, &indices);
    EXPECT_ERROR(y == NULL && indices == NULL,
                 "tg_max_dim: dim 1 of a tensor of shape (3, 0) has no elements to pick from");
    tg_release(x);
}

ERROR_CASE(tg_max_dim, dim_out_of_range, "dim is out of range")
{
    tg_tensor *x = F32(3, 4);
    tg_tensor *y = tg_max_dim(x, 2, true, NULL);
    EXPECT_ERROR(y == NULL,
                 "tg_max_dim: dim 2 is out of range for a tensor with 2 dims");
    tg_release(x);
}

ERROR_CASE(tg_max_dim, null_tensor, "x is NULL (an earlier call failed)")
{
    tg_tensor *indices = (tg_tensor *)&indices; // must become NULL
    EXPECT_SILENT(tg_max_dim(NULL, 0, false, &indices) == NULL &&
                  indices == NULL);
}

ERROR_CASE(tg_min_dim, empty_dim, "the dim has size 0")
{
    tg_tensor *x = F32(0, 4);
    tg_tensor *y = tg_min_dim(x, 0, true, NULL);
    EXPECT_ERROR(y == NULL,
                 "tg_min_dim: dim 0 of a tensor of shape (0, 4) has no elements to pick from");
    tg_release(x);
}

ERROR_CASE(tg_min_dim, dim_out_of_range, "dim is out of range")
{
    tg_tensor *x = F32(3, 4);
    tg_tensor *y = tg_min_dim(x, -3, false, NULL);
    EXPECT_ERROR(y == NULL,
                 "tg_min_dim: dim -3 is out of range for a tensor with 2 dims");
    tg_release(x);
}

ERROR_CASE(tg_min_dim, null_tensor, "x is NULL (an earlier call failed)")
{
    EXPECT_SILENT(tg_min_dim(NULL, 0, false, NULL) == NULL);
}

ERROR_CASE(tg_histogram, bins_out_of_range,
           "bins is 0 or negative (or 2^59 or more)")
{
    tg_tensor *x = F32(10);
    tg_tensor *h = tg_histogram(x, 0, false, NULL);
    EXPECT_ERROR(h == NULL, "tg_histogram: bins is 0");
    tg_release(x);
}

ERROR_CASE(tg_histogram, int64_input, "x is an int64 tensor")
{
    tg_tensor *x = I64(10);
    tg_tensor *h = tg_histogram(x, 10, false, NULL);
    EXPECT_ERROR(h == NULL, "tg_histogram: cannot bin an int64 tensor");
    tg_release(x);
}

ERROR_CASE(tg_histogram, not_finite, "x holds a NaN or an infinity")
{
    tg_tensor *x = tg_from_array((float[]){0.5f, NAN, 1.0f}, TG_SHAPE(3),
                                 TG_FLOAT32);
    tg_tensor *edges = NULL;
    tg_tensor *h = tg_histogram(x, 10, true, &edges);
    EXPECT_ERROR(h == NULL && edges == NULL,
                 "tg_histogram: element 1 of x (shape (3,)) is nan");
    tg_release(x);
}

ERROR_CASE(tg_histogram, range_overflows,
           "max(x) - min(x) is too large for a double")
{
    tg_tensor *x = tg_from_array((double[]){-1e308, 1e308}, TG_SHAPE(2),
                                 TG_FLOAT64);
    tg_tensor *h = tg_histogram(x, 10, false, NULL);
    EXPECT_ERROR(h == NULL,
                 "tg_histogram: the values of x span [-1e+308, 1e+308], wider than the largest double");
    tg_release(x);
}

ERROR_CASE(tg_histogram, bin_of_width_zero,
           "the bins are narrower than x's dtype can tell apart")
{
    tg_tensor *x = tg_full(TG_SHAPE(4), 1e8, TG_FLOAT32);
    tg_tensor *h = tg_histogram(x, 100, false, NULL);
    EXPECT_ERROR(h == NULL,
                 "tg_histogram: bin 0 of 100 over [99999999.5, 100000000] has width 0 in float32");
    tg_release(x);
}

ERROR_CASE(tg_histogram, null_tensor, "x is NULL (an earlier call failed)")
{
    tg_tensor *edges = NULL;
    EXPECT_SILENT(tg_histogram(NULL, 10, false, &edges) == NULL &&
                  edges == NULL);
}

ERROR_CASE(tg_softmax, dim_out_of_range, "dim is out of range")
{
    tg_tensor *x = F32(2, 3);
    tg_tensor *y = tg_softmax(x, 2);
    EXPECT_ERROR(y == NULL,
                 "tg_softmax: dim 2 is out of range for a tensor with 2 dims");
    tg_release(x);
}

ERROR_CASE(tg_softmax, int64_input, "x is an int64 tensor")
{
    tg_tensor *x = I64(2, 3);
    tg_tensor *y = tg_softmax(x, 1);
    EXPECT_ERROR(y == NULL,
                 "tg_softmax: cannot take the softmax of an int64 tensor");
    tg_release(x);
}

ERROR_CASE(tg_softmax, null_tensor, "x is NULL (an earlier call failed)")
{
    EXPECT_SILENT(tg_softmax(NULL, -1) == NULL);
}

ERROR_CASE(tg_log_softmax, dim_out_of_range, "dim is out of range")
{
    tg_tensor *x = F32(2, 3);
    tg_tensor *y = tg_log_softmax(x, -3);
    EXPECT_ERROR(y == NULL,
                 "tg_log_softmax: dim -3 is out of range for a tensor with 2 dims");
    tg_release(x);
}

ERROR_CASE(tg_log_softmax, int64_input, "x is an int64 tensor")
{
    tg_tensor *x = I64(2, 3);
    tg_tensor *y = tg_log_softmax(x, 1);
    EXPECT_ERROR(y == NULL,
                 "tg_log_softmax: cannot take the log-softmax of an int64 tensor");
    tg_release(x);
}

ERROR_CASE(tg_log_softmax, null_tensor, "x is NULL (an earlier call failed)")
{
    EXPECT_SILENT(tg_log_softmax(NULL, -1) == NULL);
}

/* ---- matmul ---- */

ERROR_CASE(tg_matmul, inner_dims_differ,
           "a's last dim differs from b's second-to-last (or b's only) dim")
{
    tg_tensor *a = F32(2, 3), *b = F32(4, 5);
    tg_tensor *y = tg_matmul(a, b);
    EXPECT_ERROR(y == NULL, "tg_matmul: cannot multiply (2, 3) by (4, 5)");
    tg_release(a);
    tg_release(b);
}

ERROR_CASE(tg_matmul, scalar_operand, "a or b is 0-d")
{
    tg_tensor *a = F32(2, 3), *b = tg_scalar(2.0, TG_FLOAT32);
    tg_tensor *y = tg_matmul(a, b);
    EXPECT_ERROR(y == NULL, "tg_matmul: cannot multiply (2, 3) by ()");
    tg_release(a);
    tg_release(b);
}

ERROR_CASE(tg_matmul, batch_dims_do_not_broadcast,
           "the batch dims (all but the last two) do not broadcast")
{
    tg_tensor *a = F32(2, 2, 3), *b = F32(3, 3, 4);
    tg_tensor *y = tg_matmul(a, b);
    EXPECT_ERROR(y == NULL,
                 "tg_matmul: cannot multiply (2, 2, 3) by (3, 3, 4)");
    tg_release(a);
    tg_release(b);
}

ERROR_CASE(tg_matmul, result_too_large,
           "the result would have 2^59 elements or more")
{
    tg_tensor *one = F32(1, 1);
    tg_tensor *a = tg_expand(one, TG_SHAPE(INT64_C(1) << 30, 1));
    tg_tensor *b = tg_expand(one, TG_SHAPE(1, INT64_C(1) << 30));
    tg_tensor *y = tg_matmul(a, b);
    EXPECT_ERROR(y == NULL,
                 "tg_matmul: shape (1073741824, 1073741824) has too many elements");
    tg_release(a);
    tg_release(b);
    tg_release(one);
}

ERROR_CASE(tg_matmul, out_of_memory_for_row,
           "memory runs out for the kernel's row of sums")
{
    /* int64: the float kernels need no row (and fall back to a kernel
     * without buffers when theirs cannot be had) */
    tg_tensor *a = I64(2, 3), *b = I64(3, 4);
    tg_tensor *y = NULL;
    for (int64_t n = 0; n < 50; n++) {
        tg_clear_error();
        tg_fail_allocations_after(n);
        y = tg_matmul(a, b);
        tg_fail_allocations_after(-1);
        if (y || last_error_starts("tg_matmul: out of memory"))
            break;
    }
    EXPECT_ERROR(y == NULL, "tg_matmul: out of memory for a row of 4 sums");
    tg_release(a);
    tg_release(b);
}

ERROR_CASE(tg_matmul, null_tensor, "a or b is NULL (an earlier call failed)")
{
    tg_tensor *a = F32(2, 3);
    EXPECT_SILENT(tg_matmul(a, NULL) == NULL);
    tg_release(a);
}

/* ---- linear ---- */

ERROR_CASE(tg_linear, weight_not_2d, "the weight is not 2-D")
{
    tg_tensor *x = F32(2, 3), *w = F32(3);
    tg_tensor *y = tg_linear(x, w, NULL);
    EXPECT_ERROR(y == NULL, "tg_linear: weight must be 2-D, but it is (3,)");
    tg_release(x);
    tg_release(w);
}

ERROR_CASE(tg_linear, scalar_x, "x is 0-d")
{
    tg_tensor *x = tg_scalar(1.0, TG_FLOAT32), *w = F32(3, 4);
    tg_tensor *y = tg_linear(x, w, NULL);
    EXPECT_ERROR(y == NULL,
                 "tg_linear: cannot apply a (3, 4) weight to a 0-d x");
    tg_release(x);
    tg_release(w);
}

ERROR_CASE(tg_linear, in_features_differ,
           "x's last dim differs from the weight's in_features")
{
    tg_tensor *x = F32(2, 4), *w = F32(3, 5);
    tg_tensor *y = tg_linear(x, w, NULL);
    EXPECT_ERROR(y == NULL,
                 "tg_linear: cannot apply a (3, 5) weight to x of shape "
                 "(2, 4)");
    tg_release(x);
    tg_release(w);
}

ERROR_CASE(tg_linear, weight_transposed,
           "the weight is given as (in, out) instead of (out, in)")
{
    tg_tensor *x = F32(2, 4), *w = F32(3, 4), *wt = tg_transpose(w, 0, 1);
    tg_tensor *y = tg_linear(x, wt, NULL);
    EXPECT_ERROR(y == NULL,
                 "tg_linear: cannot apply a (4, 3) weight to x of shape "
                 "(2, 4)");
    cr_assert(strstr(tg_last_error(), "looks transposed") != NULL);
    tg_release(wt);
    tg_release(x);
    tg_release(w);
}

ERROR_CASE(tg_linear, bias_shape, "the bias is not (out_features,)")
{
    tg_tensor *x = F32(2, 4), *w = F32(3, 4), *b = F32(4);
    tg_tensor *y = tg_linear(x, w, b);
    EXPECT_ERROR(y == NULL,
                 "tg_linear: bias of shape (4,) does not fit a (3, 4) "
                 "weight");
    tg_release(x);
    tg_release(w);
    tg_release(b);
}

ERROR_CASE(tg_linear, integer_x, "x is int64")
{
    tg_tensor *x = I64(2, 4), *w = I64(3, 4);
    tg_tensor *y = tg_linear(x, w, NULL);
    EXPECT_ERROR(y == NULL,
                 "tg_linear: cannot apply a linear map to an int64 x");
    tg_release(x);
    tg_release(w);
}

ERROR_CASE(tg_linear, weight_dtype, "the weight's dtype is not x's")
{
    tg_tensor *x = F32(2, 4), *w = F64(3, 4);
    tg_tensor *y = tg_linear(x, w, NULL);
    EXPECT_ERROR(y == NULL, "tg_linear: weight is float64 but x is float32");
    tg_release(x);
    tg_release(w);
}

ERROR_CASE(tg_linear, bias_dtype, "the bias's dtype is not x's")
{
    tg_tensor *x = F64(2, 4), *w = F64(3, 4), *b = F32(3);
    tg_tensor *y = tg_linear(x, w, b);
    EXPECT_ERROR(y == NULL, "tg_linear: bias is float32 but x is float64");
    tg_release(x);
    tg_release(w);
    tg_release(b);
}

ERROR_CASE(tg_linear, result_too_large,
           "the result would have 2^59 elements or more")
{
    tg_tensor *one = F32(1, 1);
    tg_tensor *x = tg_expand(one, TG_SHAPE(INT64_C(1) << 30, 1));
    tg_tensor *w = tg_expand(one, TG_SHAPE(INT64_C(1) << 30, 1));
    tg_tensor *y = tg_linear(x, w, NULL);
    EXPECT_ERROR(y == NULL,
                 "tg_linear: shape (1073741824, 1073741824) has too many "
                 "elements");
    tg_release(x);
    tg_release(w);
    tg_release(one);
}

ERROR_CASE(tg_linear, null_tensor,
           "x or weight is NULL (an earlier call failed; a NULL bias means "
           "no bias)")
{
    tg_tensor *w = F32(4, 3);
    EXPECT_SILENT(tg_linear(NULL, w, NULL) == NULL);
    tg_release(w);
}

ERROR_CASE(tg_linear, null_weight, "weight is NULL (an earlier call failed)")
{
    tg_tensor *x = F32(2, 3);
    EXPECT_SILENT(tg_linear(x, NULL, NULL) == NULL);
    tg_release(x);
}

/* ---- normalisation ---- */

ERROR_CASE(tg_layer_norm, shape_mismatch,
           "the trailing dims of x differ from normalized_shape")
{
    tg_tensor *x = F32(4, 3);
    tg_tensor *y = tg_layer_norm(x, TG_SHAPE(4), NULL, NULL, 1e-5);
    EXPECT_ERROR(y == NULL,
                 "tg_layer_norm: the input of shape (4, 3) does not end with normalized_shape (4,)");
    tg_release(x);
}

ERROR_CASE(tg_layer_norm, ndim_out_of_range,
           "normalized_shape has no dims, or more dims than x")
{
    tg_tensor *x = F32(4, 3);
    tg_tensor *y = tg_layer_norm(x, TG_SHAPE(1, 4, 3), NULL, NULL, 1e-5);
    EXPECT_ERROR(y == NULL,
                 "tg_layer_norm: normalized_shape has 3 dims but the input of shape (4, 3) has 2");
    tg_release(x);
}

ERROR_CASE(tg_layer_norm, null_normalized_shape,
           "normalized_shape is NULL but ndim > 0")
{
    tg_tensor *x = F32(4, 3);
    tg_tensor *y = tg_layer_norm(x, NULL, 1, NULL, NULL, 1e-5);
    EXPECT_ERROR(y == NULL,
                 "tg_layer_norm: normalized_shape is NULL but has 1 dim");
    tg_release(x);
}

ERROR_CASE(tg_layer_norm, weight_shape,
           "weight or bias does not have the shape normalized_shape")
{
    tg_tensor *x = F32(4, 3), *w = F32(4);
    tg_tensor *y = tg_layer_norm(x, TG_SHAPE(3), w, NULL, 1e-5);
    EXPECT_ERROR(y == NULL,
                 "tg_layer_norm: weight of shape (4,) does not match normalized_shape (3,)");
    tg_release(w);
    tg_release(x);
}

ERROR_CASE(tg_layer_norm, weight_dtype,
           "weight or bias has another dtype than x")
{
    tg_tensor *x = F32(4, 3), *b = F64(3);
    tg_tensor *y = tg_layer_norm(x, TG_SHAPE(3), NULL, b, 1e-5);
    EXPECT_ERROR(y == NULL,
                 "tg_layer_norm: bias is float64 but the input is float32");
    tg_release(b);
    tg_release(x);
}

ERROR_CASE(tg_layer_norm, bad_eps, "eps is negative, infinite or NaN")
{
    tg_tensor *x = F32(4, 3);
    tg_tensor *y = tg_layer_norm(x, TG_SHAPE(3), NULL, NULL, NAN);
    EXPECT_ERROR(y == NULL, "tg_layer_norm: eps is nan");
    tg_release(x);
}

ERROR_CASE(tg_layer_norm, int64_input, "x is an int64 tensor")
{
    tg_tensor *x = I64(4, 3);
    tg_tensor *y = tg_layer_norm(x, TG_SHAPE(3), NULL, NULL, 1e-5);
    EXPECT_ERROR(y == NULL,
                 "tg_layer_norm: cannot normalise an int64 tensor");
    tg_release(x);
}

ERROR_CASE(tg_layer_norm, scalar_input, "x is 0-d")
{
    tg_tensor *x = tg_scalar(1.0, TG_FLOAT32);
    tg_tensor *y = tg_layer_norm(x, TG_SHAPE(1), NULL, NULL, 1e-5);
    EXPECT_ERROR(y == NULL, "tg_layer_norm: cannot normalise a 0-d tensor");
    tg_release(x);
}

static tg_tensor *layer_norm_of(const tg_tensor *x)
{
    return tg_layer_norm(x, TG_SHAPE(3), NULL, NULL, 1e-5);
}

ERROR_CASE(tg_layer_norm, out_of_memory_in_backward,
           "memory runs out in the backward (reported by tg_backward)")
{
    cr_assert(backward_fails_with(layer_norm_of,
                                  "tg_layer_norm: out of memory"),
              "no allocation failure made the backward report it");
    EXPECT_ERROR(true, "tg_layer_norm: out of memory in the backward");
}

ERROR_CASE(tg_layer_norm, out_of_memory_for_backward_scratch,
           "memory runs out for the fast backward's scratch rows (reported by tg_backward)")
{
    cr_assert(oom_sweep_reaches(layer_norm_of, true,
                                "tg_layer_norm: out of memory for the "
                                "backward's scratch rows"),
              "no allocation failure made the backward report it");
    EXPECT_ERROR(true,
                 "tg_layer_norm: out of memory for the backward's scratch rows");
}

/* float32 x with a weight: the fast forward's scratch holds the weight
 * in double (float64 x and no weight need none) */
static tg_tensor *layer_norm_f32_weight_of(const tg_tensor *x)
{
    tg_tensor *x32 = tg_to_dtype(x, TG_FLOAT32);
    tg_tensor *w = tg_ones(TG_SHAPE(3), TG_FLOAT32);
    tg_tensor *y = tg_layer_norm(x32, TG_SHAPE(3), w, NULL, 1e-5);
    tg_release(w);
    tg_release(x32);
    return y;
}

ERROR_CASE(tg_layer_norm, out_of_memory_for_forward_scratch,
           "memory runs out for the fast forward's scratch rows (float32 weight and bias in double)")
{
    cr_assert(oom_sweep_reaches(layer_norm_f32_weight_of, false,
                                "tg_layer_norm: out of memory for the "
                                "forward's scratch rows"),
              "no allocation failure made the forward report it");
    EXPECT_ERROR(true,
                 "tg_layer_norm: out of memory for the forward's scratch rows");
}

ERROR_CASE(tg_layer_norm, null_tensor, "x is NULL (an earlier call failed)")
{
    EXPECT_SILENT(tg_layer_norm(NULL, TG_SHAPE(3), NULL, NULL, 1e-5) == NULL);
}

ERROR_CASE(tg_layer_norm_ex, shape_mismatch,
           "the trailing dims of x differ from normalized_shape (the checks of tg_layer_norm_ex report as tg_layer_norm)")
{
    tg_tensor *x = F32(2, 4, 3), *mean = NULL, *rstd = NULL;
    tg_tensor *y = tg_layer_norm_ex(x, TG_SHAPE(4, 4), NULL, NULL, 1e-5,
                                    &mean, &rstd);
    EXPECT_ERROR(y == NULL && mean == NULL && rstd == NULL,
                 "tg_layer_norm: the input of shape (2, 4, 3) does not end with normalized_shape (4, 4)");
    tg_release(x);
}

ERROR_CASE(tg_layer_norm_ex, bad_eps, "eps is negative, infinite or NaN")
{
    tg_tensor *x = F32(4, 3);
    tg_tensor *y = tg_layer_norm_ex(x, TG_SHAPE(3), NULL, NULL, -1.0, NULL,
                                    NULL);
    EXPECT_ERROR(y == NULL, "tg_layer_norm: eps is -1");
    tg_release(x);
}

ERROR_CASE(tg_layer_norm_ex, null_tensor,
           "x is NULL (an earlier call failed)")
{
    tg_tensor *mean = NULL, *rstd = NULL;
    EXPECT_SILENT(tg_layer_norm_ex(NULL, TG_SHAPE(3), NULL, NULL, 1e-5,
                                   &mean, &rstd) == NULL &&
                  mean == NULL && rstd == NULL);
}

ERROR_CASE(tg_layer_norm_composed, shape_mismatch,
           "the trailing dims of x differ from normalized_shape")
{
    tg_tensor *x = F32(4, 3);
    tg_tensor *y = tg_layer_norm_composed(x, TG_SHAPE(4), NULL, NULL, 1e-5);
    EXPECT_ERROR(y == NULL,
                 "tg_layer_norm_composed: the input of shape (4, 3) does not end with normalized_shape (4,)");
    tg_release(x);
}

ERROR_CASE(tg_layer_norm_composed, ndim_out_of_range,
           "normalized_shape has no dims, or more dims than x")
{
    tg_tensor *x = F32(4, 3);
    tg_tensor *y = tg_layer_norm_composed(x, NULL, 0, NULL, NULL, 1e-5);
    EXPECT_ERROR(y == NULL,
                 "tg_layer_norm_composed: normalized_shape has 0 dims but the input of shape (4, 3) has 2");
    tg_release(x);
}

ERROR_CASE(tg_layer_norm_composed, null_normalized_shape,
           "normalized_shape is NULL but ndim > 0")
{
    tg_tensor *x = F32(4, 3);
    tg_tensor *y = tg_layer_norm_composed(x, NULL, 2, NULL, NULL, 1e-5);
    EXPECT_ERROR(y == NULL,
                 "tg_layer_norm_composed: normalized_shape is NULL but has 2 dims");
    tg_release(x);
}

ERROR_CASE(tg_layer_norm_composed, weight_shape,
           "weight or bias does not have the shape normalized_shape")
{
    tg_tensor *x = F32(4, 3), *b = F32(1, 3);
    tg_tensor *y = tg_layer_norm_composed(x, TG_SHAPE(3), NULL, b, 1e-5);
    EXPECT_ERROR(y == NULL,
                 "tg_layer_norm_composed: bias of shape (1, 3) does not match normalized_shape (3,)");
    tg_release(b);
    tg_release(x);
}

ERROR_CASE(tg_layer_norm_composed, weight_dtype,
           "weight or bias has another dtype than x")
{
    tg_tensor *x = F64(4, 3), *w = F32(3);
    tg_tensor *y = tg_layer_norm_composed(x, TG_SHAPE(3), w, NULL, 1e-5);
    EXPECT_ERROR(y == NULL,
                 "tg_layer_norm_composed: weight is float32 but the input is float64");
    tg_release(w);
    tg_release(x);
}

ERROR_CASE(tg_layer_norm_composed, bad_eps,
           "eps is negative, infinite or NaN")
{
    tg_tensor *x = F32(4, 3);
    tg_tensor *y = tg_layer_norm_composed(x, TG_SHAPE(3), NULL, NULL,
                                          INFINITY);
    EXPECT_ERROR(y == NULL, "tg_layer_norm_composed: eps is inf");
    tg_release(x);
}

ERROR_CASE(tg_layer_norm_composed, int64_input, "x is an int64 tensor")
{
    tg_tensor *x = I64(4, 3);
    tg_tensor *y = tg_layer_norm_composed(x, TG_SHAPE(3), NULL, NULL, 1e-5);
    EXPECT_ERROR(y == NULL,
                 "tg_layer_norm_composed: cannot normalise an int64 tensor");
    tg_release(x);
}

ERROR_CASE(tg_layer_norm_composed, scalar_input, "x is 0-d")
{
    tg_tensor *x = tg_scalar(1.0, TG_FLOAT32);
    tg_tensor *y = tg_layer_norm_composed(x, TG_SHAPE(1), NULL, NULL, 1e-5);
    EXPECT_ERROR(y == NULL,
                 "tg_layer_norm_composed: cannot normalise a 0-d tensor");
    tg_release(x);
}

ERROR_CASE(tg_layer_norm_composed, null_tensor,
           "x is NULL (an earlier call failed)")
{
    EXPECT_SILENT(tg_layer_norm_composed(NULL, TG_SHAPE(3), NULL, NULL,
                                         1e-5) == NULL);
}

NEVER_FAILS(tg_batch_norm_defaults, "returns a struct of default values");

ERROR_CASE(tg_batch_norm, one_value_per_channel,
           "training with one value per channel (e.g. a batch of one (1, C) sample)")
{
    tg_tensor *x = F32(1, 3);
    tg_tensor *y = tg_batch_norm(x, NULL, NULL, NULL, NULL, true, 0.1, 1e-5);
    EXPECT_ERROR(y == NULL,
                 "tg_batch_norm: expected more than 1 value per channel when training, got input of shape (1, 3)");
    tg_release(x);
}

ERROR_CASE(tg_batch_norm, channel_param_shape,
           "running_mean, running_var, weight or bias is not (C,) with C = x.shape[1]")
{
    tg_tensor *x = F32(4, 3), *rm = F32(4), *rv = tg_ones(TG_SHAPE(4),
                                                          TG_FLOAT32);
    tg_tensor *y = tg_batch_norm(x, rm, rv, NULL, NULL, true, 0.1, 1e-5);
    EXPECT_ERROR(y == NULL,
                 "tg_batch_norm: running_mean of shape (4,) does not match the 3 channels of the input of shape (4, 3)");
    tg_release(rv);
    tg_release(rm);
    tg_release(x);
}

ERROR_CASE(tg_batch_norm, channel_param_dtype,
           "running_mean, running_var, weight or bias has another dtype than x")
{
    tg_tensor *x = F32(4, 3), *rm = I64(3), *rv = I64(3);
    tg_tensor *y = tg_batch_norm(x, rm, rv, NULL, NULL, true, 0.1, 1e-5);
    EXPECT_ERROR(y == NULL,
                 "tg_batch_norm: running_mean is int64 but the input is float32");
    tg_assert_error("hint: make running_mean with x's dtype: "
                    "tg_to_dtype(running_mean, TG_FLOAT32)");
    tg_release(rv);
    tg_release(rm);
    tg_release(x);
}

ERROR_CASE(tg_batch_norm, running_stat_requires_grad,
           "running_mean or running_var, written in place, requires grad (a parameter, or made by a recorded op)")
{
    tg_tensor *x = F32(4, 3), *rm = F32(3), *p = tg_ones(TG_SHAPE(3),
                                                         TG_FLOAT32);
    tg_set_requires_grad(p, true);
    tg_tensor *rv = tg_mul_scalar(p, 1.0); // made by a recorded op
    tg_tensor *y = tg_batch_norm(x, rm, rv, NULL, NULL, true, 0.1, 1e-5);
    EXPECT_ERROR(y == NULL, "tg_batch_norm: running_var requires grad");
    tg_release(rv);
    tg_release(p);
    tg_release(rm);
    tg_release(x);
}

ERROR_CASE(tg_batch_norm, one_running_stat,
           "only one of running_mean and running_var is given")
{
    tg_tensor *x = F32(4, 3), *rm = F32(3);
    tg_tensor *y = tg_batch_norm(x, rm, NULL, NULL, NULL, true, 0.1, 1e-5);
    EXPECT_ERROR(y == NULL,
                 "tg_batch_norm: running_mean is given but running_var is NULL");
    tg_release(rm);
    tg_release(x);
}

ERROR_CASE(tg_batch_norm, eval_without_running_stats,
           "eval mode (training false) without running statistics")
{
    tg_tensor *x = F32(4, 3);
    tg_tensor *y = tg_batch_norm(x, NULL, NULL, NULL, NULL, false, 0.1,
                                 1e-5);
    EXPECT_ERROR(y == NULL,
                 "tg_batch_norm: eval mode needs running statistics, but running_mean and running_var are NULL");
    tg_release(x);
}

ERROR_CASE(tg_batch_norm, bad_momentum, "momentum is outside [0, 1] or NaN")
{
    tg_tensor *x = F32(4, 3);
    tg_tensor *y = tg_batch_norm(x, NULL, NULL, NULL, NULL, true, 1.5, 1e-5);
    EXPECT_ERROR(y == NULL, "tg_batch_norm: momentum is 1.5");
    tg_release(x);
}

ERROR_CASE(tg_batch_norm, bad_eps, "eps is negative, infinite or NaN")
{
    tg_tensor *x = F32(4, 3);
    tg_tensor *y = tg_batch_norm(x, NULL, NULL, NULL, NULL, true, 0.1, -1e-5);
    EXPECT_ERROR(y == NULL, "tg_batch_norm: eps is -1e-05");
    tg_release(x);
}

ERROR_CASE(tg_batch_norm, too_few_dims, "x has fewer than 2 dims")
{
    tg_tensor *x = F32(4);
    tg_tensor *y = tg_batch_norm(x, NULL, NULL, NULL, NULL, true, 0.1, 1e-5);
    EXPECT_ERROR(y == NULL, "tg_batch_norm: the input of shape (4,) has 1 dim");
    tg_release(x);
}

ERROR_CASE(tg_batch_norm, int64_input, "x is an int64 tensor")
{
    tg_tensor *x = I64(4, 3);
    tg_tensor *y = tg_batch_norm(x, NULL, NULL, NULL, NULL, true, 0.1, 1e-5);
    EXPECT_ERROR(y == NULL,
                 "tg_batch_norm: cannot normalise an int64 tensor");
    tg_release(x);
}

static tg_tensor *batch_norm_of(const tg_tensor *x)
{
    return tg_batch_norm(x, NULL, NULL, NULL, NULL, true, 0.1, 1e-5);
}

ERROR_CASE(tg_batch_norm, out_of_memory_in_backward,
           "memory runs out in the backward (reported by tg_backward)")
{
    cr_assert(backward_fails_with(batch_norm_of,
                                  "tg_batch_norm: out of memory"),
              "no allocation failure made the backward report it");
    EXPECT_ERROR(true, "tg_batch_norm: out of memory in the backward");
}

ERROR_CASE(tg_batch_norm, out_of_memory_for_forward_scratch,
           "memory runs out for the fast forward's scratch")
{
    cr_assert(oom_sweep_reaches(batch_norm_of, false,
                                "tg_batch_norm: out of memory for the "
                                "forward's scratch"),
              "no allocation failure made the forward report it");
    EXPECT_ERROR(true, "tg_batch_norm: out of memory for the forward's scratch");
}

ERROR_CASE(tg_batch_norm, null_tensor, "x is NULL (an earlier call failed)")
{
    EXPECT_SILENT(tg_batch_norm(NULL, NULL, NULL, NULL, NULL, true, 0.1,
                                1e-5) == NULL);
}

ERROR_CASE(tg_batch_norm_ex, bad_correction,
           "correction is neither 0 nor 1 (the checks of tg_batch_norm_ex report as tg_batch_norm)")
{
    tg_tensor *x = F32(4, 3), *mean = NULL, *invstd = NULL;
    tg_batch_norm_options o = tg_batch_norm_defaults();
    o.correction = 2;
    tg_tensor *y = tg_batch_norm_ex(x, NULL, NULL, NULL, NULL, &o, &mean,
                                    &invstd);
    EXPECT_ERROR(y == NULL && mean == NULL && invstd == NULL,
                 "tg_batch_norm: correction is 2");
    tg_release(x);
}

ERROR_CASE(tg_batch_norm_ex, one_value_per_channel,
           "training with one value per channel")
{
    tg_tensor *x = F32(1, 3, 1);
    tg_tensor *y = tg_batch_norm_ex(x, NULL, NULL, NULL, NULL, NULL, NULL,
                                    NULL);
    EXPECT_ERROR(y == NULL,
                 "tg_batch_norm: expected more than 1 value per channel when training, got input of shape (1, 3, 1)");
    tg_release(x);
}

ERROR_CASE(tg_batch_norm_ex, null_tensor,
           "x is NULL (an earlier call failed)")
{
    tg_tensor *mean = NULL, *invstd = NULL;
    EXPECT_SILENT(tg_batch_norm_ex(NULL, NULL, NULL, NULL, NULL, NULL, &mean,
                                   &invstd) == NULL &&
                  mean == NULL && invstd == NULL);
}

ERROR_CASE(tg_batch_norm_composed, one_value_per_channel,
           "training with one value per channel")
{
    tg_tensor *x = F32(1, 3);
    tg_tensor *y = tg_batch_norm_composed(x, NULL, NULL, NULL, NULL, NULL);
    EXPECT_ERROR(y == NULL,
                 "tg_batch_norm_composed: expected more than 1 value per channel when training, got input of shape (1, 3)");
    tg_release(x);
}

ERROR_CASE(tg_batch_norm_composed, channel_param_shape,
           "running_mean, running_var, weight or bias is not (C,) with C = x.shape[1]")
{
    tg_tensor *x = F32(4, 3), *w = tg_ones(TG_SHAPE(1, 3), TG_FLOAT32);
    tg_tensor *y = tg_batch_norm_composed(x, NULL, NULL, w, NULL, NULL);
    EXPECT_ERROR(y == NULL,
                 "tg_batch_norm_composed: weight of shape (1, 3) does not match the 3 channels of the input of shape (4, 3)");
    tg_release(w);
    tg_release(x);
}

ERROR_CASE(tg_batch_norm_composed, channel_param_dtype,
           "running_mean, running_var, weight or bias has another dtype than x")
{
    tg_tensor *x = F32(4, 3), *b = F64(3);
    tg_tensor *y = tg_batch_norm_composed(x, NULL, NULL, NULL, b, NULL);
    EXPECT_ERROR(y == NULL,
                 "tg_batch_norm_composed: bias is float64 but the input is float32");
    tg_release(b);
    tg_release(x);
}

ERROR_CASE(tg_batch_norm_composed, running_stat_requires_grad,
           "running_mean or running_var requires grad")
{
    tg_tensor *x = F32(4, 3), *rm = F32(3), *rv = tg_ones(TG_SHAPE(3),
                                                          TG_FLOAT32);
    tg_set_requires_grad(rm, true);
    tg_tensor *y = tg_batch_norm_composed(x, rm, rv, NULL, NULL, NULL);
    EXPECT_ERROR(y == NULL,
                 "tg_batch_norm_composed: running_mean requires grad");
    tg_release(rv);
    tg_release(rm);
    tg_release(x);
}

ERROR_CASE(tg_batch_norm_composed, one_running_stat,
           "only one of running_mean and running_var is given")
{
    tg_tensor *x = F32(4, 3), *rv = tg_ones(TG_SHAPE(3), TG_FLOAT32);
    tg_tensor *y = tg_batch_norm_composed(x, NULL, rv, NULL, NULL, NULL);
    EXPECT_ERROR(y == NULL,
                 "tg_batch_norm_composed: running_var is given but running_mean is NULL");
    tg_release(rv);
    tg_release(x);
}

ERROR_CASE(tg_batch_norm_composed, eval_without_running_stats,
           "eval mode (training false) without running statistics")
{
    tg_tensor *x = F32(4, 3);
    tg_batch_norm_options o = tg_batch_norm_defaults();
    o.eval = true;
    tg_tensor *y = tg_batch_norm_composed(x, NULL, NULL, NULL, NULL, &o);
    EXPECT_ERROR(y == NULL,
                 "tg_batch_norm_composed: eval mode needs running statistics, but running_mean and running_var are NULL");
    tg_release(x);
}

ERROR_CASE(tg_batch_norm_composed, bad_momentum,
           "momentum is outside [0, 1] or NaN")
{
    tg_tensor *x = F32(4, 3);
    tg_batch_norm_options o = tg_batch_norm_defaults();
    o.momentum = NAN;
    tg_tensor *y = tg_batch_norm_composed(x, NULL, NULL, NULL, NULL, &o);
    EXPECT_ERROR(y == NULL, "tg_batch_norm_composed: momentum is nan");
    tg_release(x);
}

ERROR_CASE(tg_batch_norm_composed, bad_eps,
           "eps is negative, infinite or NaN")
{
    tg_tensor *x = F32(4, 3);
    tg_batch_norm_options o = tg_batch_norm_defaults();
    o.eps = -INFINITY;
    tg_tensor *y = tg_batch_norm_composed(x, NULL, NULL, NULL, NULL, &o);
    EXPECT_ERROR(y == NULL, "tg_batch_norm_composed: eps is -inf");
    tg_release(x);
}

ERROR_CASE(tg_batch_norm_composed, bad_correction,
           "correction is neither 0 nor 1")
{
    tg_tensor *x = F32(4, 3);
    tg_batch_norm_options o = tg_batch_norm_defaults();
    o.correction = -1;
    tg_tensor *y = tg_batch_norm_composed(x, NULL, NULL, NULL, NULL, &o);
    EXPECT_ERROR(y == NULL, "tg_batch_norm_composed: correction is -1");
    tg_release(x);
}

ERROR_CASE(tg_batch_norm_composed, too_few_dims, "x has fewer than 2 dims")
{
    tg_tensor *x = tg_scalar(1.0, TG_FLOAT32);
    tg_tensor *y = tg_batch_norm_composed(x, NULL, NULL, NULL, NULL, NULL);
    EXPECT_ERROR(y == NULL,
                 "tg_batch_norm_composed: the input of shape () has 0 dims");
    tg_release(x);
}

ERROR_CASE(tg_batch_norm_composed, int64_input, "x is an int64 tensor")
{
    tg_tensor *x = I64(4, 3);
    tg_tensor *y = tg_batch_norm_composed(x, NULL, NULL, NULL, NULL, NULL);
    EXPECT_ERROR(y == NULL,
                 "tg_batch_norm_composed: cannot normalise an int64 tensor");
    tg_release(x);
}

ERROR_CASE(tg_batch_norm_composed, null_tensor,
           "x is NULL (an earlier call failed)")
{
    EXPECT_SILENT(tg_batch_norm_composed(NULL, NULL, NULL, NULL, NULL,
                                         NULL) == NULL);
}

/* ---- losses ---- */

ERROR_CASE(tg_mse_loss, shape_mismatch,
           "input and target have different shapes, e.g. (N, 1) against (N,) (PyTorch would broadcast them to (N, N))")
{
    tg_tensor *x = F32(4, 1), *t = F32(4);
    tg_tensor *y = tg_mse_loss(x, t, TG_REDUCTION_MEAN);
    EXPECT_ERROR(y == NULL,
                 "tg_mse_loss: input of shape (4, 1) and target of shape (4,) differ");
    tg_release(t);
    tg_release(x);
}

ERROR_CASE(tg_mse_loss, size_mismatch,
           "input and target have different shapes and sizes, e.g. (N, 2) "
           "against (N,)")
{
    tg_tensor *x = F32(4, 2), *t = F32(4);
    tg_tensor *y = tg_mse_loss(x, t, TG_REDUCTION_MEAN);
    EXPECT_ERROR(y == NULL,
                 "tg_mse_loss: input of shape (4, 2) and target of shape (4,) differ");
    tg_release(t);
    tg_release(x);
}

ERROR_CASE(tg_mse_loss, dtype_mismatch,
           "input and target have different dtypes")
{
    tg_tensor *x = F32(4), *t = F64(4);
    tg_tensor *y = tg_mse_loss(x, t, TG_REDUCTION_MEAN);
    EXPECT_ERROR(y == NULL,
                 "tg_mse_loss: input is float32 but target is float64");
    tg_release(t);
    tg_release(x);
}

ERROR_CASE(tg_mse_loss, int64_input, "input is an int64 tensor")
{
    tg_tensor *x = I64(4), *t = I64(4);
    tg_tensor *y = tg_mse_loss(x, t, TG_REDUCTION_MEAN);
    EXPECT_ERROR(y == NULL,
                 "tg_mse_loss: cannot take the mse_loss of an int64 tensor (input)");
    tg_release(t);
    tg_release(x);
}

ERROR_CASE(tg_mse_loss, bad_reduction, "reduction is not a tg_reduction value")
{
    tg_tensor *x = F32(4), *t = F32(4);
    tg_tensor *y = tg_mse_loss(x, t, (tg_reduction)3);
    EXPECT_ERROR(y == NULL, "tg_mse_loss: reduction is 3");
    tg_release(t);
    tg_release(x);
}

ERROR_CASE(tg_mse_loss, null_tensor,
           "input or target is NULL (an earlier call failed)")
{
    tg_tensor *x = F32(4);
    EXPECT_SILENT(tg_mse_loss(x, NULL, TG_REDUCTION_MEAN) == NULL);
    tg_release(x);
}

ERROR_CASE(tg_nll_loss, label_out_of_range,
           "a label is outside [0, C) (there is no ignore_index)")
{
    tg_tensor *logp = F32(2, 3);
    tg_tensor *labels = tg_from_array((int64_t[]){0, 3}, TG_SHAPE(2),
                                      TG_INT64);
    tg_tensor *y = tg_nll_loss(logp, labels, TG_REDUCTION_MEAN);
    EXPECT_ERROR(y == NULL,
                 "tg_nll_loss: labels[1] is 3 but logp of shape (2, 3) has 3 classes");
    tg_release(labels);
    tg_release(logp);
}

ERROR_CASE(tg_nll_loss, labels_not_int64, "labels are not int64")
{
    tg_tensor *logp = F32(2, 3), *labels = F32(2);
    tg_tensor *y = tg_nll_loss(logp, labels, TG_REDUCTION_MEAN);
    EXPECT_ERROR(y == NULL, "tg_nll_loss: labels are float32");
    tg_release(labels);
    tg_release(logp);
}

ERROR_CASE(tg_nll_loss, row_count_mismatch,
           "labels have another length than logp has rows")
{
    tg_tensor *logp = F32(2, 3), *labels = I64(3);
    tg_tensor *y = tg_nll_loss(logp, labels, TG_REDUCTION_MEAN);
    EXPECT_ERROR(y == NULL,
                 "tg_nll_loss: logp of shape (2, 3) has 2 rows but labels of shape (3,) have 3");
    tg_release(labels);
    tg_release(logp);
}

ERROR_CASE(tg_nll_loss, labels_not_1d, "labels are not (N,) for logp (N, C)")
{
    tg_tensor *logp = F32(2, 3), *labels = I64(2, 1);
    tg_tensor *y = tg_nll_loss(logp, labels, TG_REDUCTION_MEAN);
    EXPECT_ERROR(y == NULL,
                 "tg_nll_loss: logp of shape (2, 3) needs labels of shape (2,), not (2, 1)");
    tg_release(labels);
    tg_release(logp);
}

ERROR_CASE(tg_nll_loss, one_sample_with_labels,
           "logp is (C,), one sample, but labels are not 0-d")
{
    tg_tensor *logp = F32(3), *labels = I64(1);
    tg_tensor *y = tg_nll_loss(logp, labels, TG_REDUCTION_MEAN);
    EXPECT_ERROR(y == NULL,
                 "tg_nll_loss: logp of shape (3,) is one sample, but labels have shape (1,)");
    tg_release(labels);
    tg_release(logp);
}

ERROR_CASE(tg_nll_loss, logp_not_2d, "logp is neither (N, C) nor (C,)")
{
    tg_tensor *logp = F32(2, 3, 4), *labels = I64(2);
    tg_tensor *y = tg_nll_loss(logp, labels, TG_REDUCTION_MEAN);
    EXPECT_ERROR(y == NULL, "tg_nll_loss: logp has shape (2, 3, 4)");
    tg_release(labels);
    tg_release(logp);
}

ERROR_CASE(tg_nll_loss, int64_logp, "logp is an int64 tensor")
{
    tg_tensor *logp = I64(2, 3), *labels = I64(2);
    tg_tensor *y = tg_nll_loss(logp, labels, TG_REDUCTION_MEAN);
    EXPECT_ERROR(y == NULL,
                 "tg_nll_loss: cannot take the nll_loss of an int64 tensor (logp)");
    tg_release(labels);
    tg_release(logp);
}

ERROR_CASE(tg_nll_loss, bad_reduction, "reduction is not a tg_reduction value")
{
    tg_tensor *logp = F32(2, 3), *labels = I64(2);
    tg_tensor *y = tg_nll_loss(logp, labels, (tg_reduction)-1);
    EXPECT_ERROR(y == NULL, "tg_nll_loss: reduction is -1");
    tg_release(labels);
    tg_release(logp);
}

ERROR_CASE(tg_nll_loss, null_tensor,
           "logp or labels is NULL (an earlier call failed)")
{
    tg_tensor *logp = F32(2, 3);
    EXPECT_SILENT(tg_nll_loss(logp, NULL, TG_REDUCTION_MEAN) == NULL);
    tg_release(logp);
}

ERROR_CASE(tg_cross_entropy, label_out_of_range,
           "a label is outside [0, C) (there is no ignore_index)")
{
    tg_tensor *logits = F32(3);
    tg_tensor *label = tg_scalar(-100.0, TG_INT64);
    tg_tensor *y = tg_cross_entropy(logits, label, TG_REDUCTION_MEAN);
    EXPECT_ERROR(y == NULL,
                 "tg_cross_entropy: the label is -100 but logits of shape (3,) has 3 classes");
    tg_release(label);
    tg_release(logits);
}

ERROR_CASE(tg_cross_entropy, labels_not_int64, "labels are not int64")
{
    tg_tensor *logits = F32(2, 3), *labels = F64(2);
    tg_tensor *y = tg_cross_entropy(logits, labels, TG_REDUCTION_MEAN);
    EXPECT_ERROR(y == NULL, "tg_cross_entropy: labels are float64");
    tg_release(labels);
    tg_release(logits);
}

ERROR_CASE(tg_cross_entropy, row_count_mismatch,
           "labels have another length than logits has rows (here one "
           "row: the count in the singular)")
{
    tg_tensor *logits = F32(1, 3), *labels = I64(3);
    tg_tensor *y = tg_cross_entropy(logits, labels, TG_REDUCTION_MEAN);
    EXPECT_ERROR(y == NULL,
                 "tg_cross_entropy: logits of shape (1, 3) has 1 row but labels of shape (3,) have 3");
    tg_release(labels);
    tg_release(logits);
}

ERROR_CASE(tg_cross_entropy, labels_not_1d,
           "labels are not (N,) for logits (N, C)")
{
    tg_tensor *logits = F32(4, 3), *labels = tg_scalar(1.0, TG_INT64);
    tg_tensor *y = tg_cross_entropy(logits, labels, TG_REDUCTION_MEAN);
    EXPECT_ERROR(y == NULL,
                 "tg_cross_entropy: logits of shape (4, 3) needs labels of shape (4,), not ()");
    tg_release(labels);
    tg_release(logits);
}

ERROR_CASE(tg_cross_entropy, one_sample_with_labels,
           "logits is (C,), one sample, but labels are not 0-d")
{
    tg_tensor *logits = F32(3), *labels = I64(3);
    tg_tensor *y = tg_cross_entropy(logits, labels, TG_REDUCTION_MEAN);
    EXPECT_ERROR(y == NULL,
                 "tg_cross_entropy: logits of shape (3,) is one sample, but labels have shape (3,)");
    tg_release(labels);
    tg_release(logits);
}

ERROR_CASE(tg_cross_entropy, logits_not_2d,
           "logits are neither (N, C) nor (C,)")
{
    tg_tensor *logits = F32(2, 3, 4), *labels = I64(2, 4);
    tg_tensor *y = tg_cross_entropy(logits, labels, TG_REDUCTION_MEAN);
    EXPECT_ERROR(y == NULL, "tg_cross_entropy: logits has shape (2, 3, 4)");
    tg_release(labels);
    tg_release(logits);
}

ERROR_CASE(tg_cross_entropy, int64_logits, "logits is an int64 tensor")
{
    tg_tensor *logits = I64(2, 3), *labels = I64(2);
    tg_tensor *y = tg_cross_entropy(logits, labels, TG_REDUCTION_MEAN);
    EXPECT_ERROR(y == NULL,
                 "tg_cross_entropy: cannot take the cross_entropy of an int64 tensor (logits)");
    tg_release(labels);
    tg_release(logits);
}

ERROR_CASE(tg_cross_entropy, bad_reduction,
           "reduction is not a tg_reduction value")
{
    tg_tensor *logits = F32(2, 3), *labels = I64(2);
    tg_tensor *y = tg_cross_entropy(logits, labels, (tg_reduction)5);
    EXPECT_ERROR(y == NULL, "tg_cross_entropy: reduction is 5");
    tg_release(labels);
    tg_release(logits);
}

ERROR_CASE(tg_cross_entropy, null_tensor,
           "logits or labels is NULL (an earlier call failed)")
{
    tg_tensor *labels = I64(2);
    EXPECT_SILENT(tg_cross_entropy(NULL, labels, TG_REDUCTION_MEAN) == NULL);
    tg_release(labels);
}

ERROR_CASE(tg_binary_cross_entropy_with_logits, shape_mismatch,
           "logits and targets have different shapes")
{
    tg_tensor *x = F32(4), *t = F32(2, 2);
    tg_tensor *y = tg_binary_cross_entropy_with_logits(x, t,
                                                       TG_REDUCTION_SUM);
    EXPECT_ERROR(y == NULL,
                 "tg_binary_cross_entropy_with_logits: logits of shape (4,) and targets of shape (2, 2) differ");
    tg_release(t);
    tg_release(x);
}

ERROR_CASE(tg_binary_cross_entropy_with_logits, dtype_mismatch,
           "logits and targets have different dtypes (e.g. int64 0/1 targets)")
{
    tg_tensor *x = F32(4), *t = I64(4);
    tg_tensor *y = tg_binary_cross_entropy_with_logits(x, t,
                                                       TG_REDUCTION_MEAN);
    EXPECT_ERROR(y == NULL,
                 "tg_binary_cross_entropy_with_logits: logits is float32 but targets is int64");
    tg_release(t);
    tg_release(x);
}

ERROR_CASE(tg_binary_cross_entropy_with_logits, int64_logits,
           "logits is an int64 tensor")
{
    tg_tensor *x = I64(4), *t = F32(4);
    tg_tensor *y = tg_binary_cross_entropy_with_logits(x, t,
                                                       TG_REDUCTION_MEAN);
    EXPECT_ERROR(y == NULL,
                 "tg_binary_cross_entropy_with_logits: cannot take the binary_cross_entropy_with_logits of an int64 tensor (logits)");
    tg_release(t);
    tg_release(x);
}

ERROR_CASE(tg_binary_cross_entropy_with_logits, bad_reduction,
           "reduction is not a tg_reduction value")
{
    tg_tensor *x = F32(4), *t = F32(4);
    tg_tensor *y = tg_binary_cross_entropy_with_logits(x, t,
                                                       (tg_reduction)9);
    EXPECT_ERROR(y == NULL,
                 "tg_binary_cross_entropy_with_logits: reduction is 9");
    tg_release(t);
    tg_release(x);
}

ERROR_CASE(tg_binary_cross_entropy_with_logits, null_tensor,
           "logits or targets is NULL (an earlier call failed)")
{
    tg_tensor *t = F32(4);
    EXPECT_SILENT(tg_binary_cross_entropy_with_logits(NULL, t,
                                                      TG_REDUCTION_MEAN) ==
                  NULL);
    tg_release(t);
}

/* ---- joining and splitting ---- */

ERROR_CASE(tg_cat, empty_list, "the list has no tensors")
{
    const tg_tensor *parts[1] = {NULL};
    EXPECT_ERROR(tg_cat(parts, 0, 0) == NULL,
                 "tg_cat: got 0 tensors in a list");
}

ERROR_CASE(tg_cat, null_list, "the list is NULL")
{
    EXPECT_ERROR(tg_cat(NULL, 2, 0) == NULL,
                 "tg_cat: got 2 tensors in a NULL list");
}

ERROR_CASE(tg_cat, zero_dim_tensor, "a tensor is 0-d")
{
    tg_tensor *a = F32(3), *s = tg_scalar(1.0, TG_FLOAT32);
    const tg_tensor *parts[] = {a, s};
    EXPECT_ERROR(tg_cat(parts, 2, 0) == NULL, "tg_cat: tensor 1 is 0-d");
    tg_release(a);
    tg_release(s);
}

ERROR_CASE(tg_cat, ndim_mismatch,
           "the tensors have different numbers of dims")
{
    tg_tensor *a = F32(2, 3), *b = F32(2, 3, 1);
    const tg_tensor *parts[] = {a, b};
    EXPECT_ERROR(tg_cat(parts, 2, 0) == NULL,
                 "tg_cat: cannot cat tensor 0 of shape (2, 3) with tensor 1 of shape (2, 3, 1)");
    tg_release(a);
    tg_release(b);
}

ERROR_CASE(tg_cat, size_mismatch,
           "the sizes differ along a dim other than dim")
{
    tg_tensor *e = F32(0), *a = F32(2, 3), *b = F32(2, 2);
    const tg_tensor *parts[] = {e, a, b};
    EXPECT_ERROR(tg_cat(parts, 3, 0) == NULL,
                 "tg_cat: cannot cat tensor 1 of shape (2, 3) with tensor 2 of shape (2, 2) along dim 0");
    tg_release(e);
    tg_release(a);
    tg_release(b);
}

ERROR_CASE(tg_cat, dim_out_of_range, "dim is out of range")
{
    tg_tensor *a = F32(2, 3);
    const tg_tensor *parts[] = {a, a};
    EXPECT_ERROR(tg_cat(parts, 2, 2) == NULL,
                 "tg_cat: dim 2 is out of range for a tensor with 2 dims");
    tg_release(a);
}

ERROR_CASE(tg_cat, too_many_elements,
           "the result would have 2^59 elements or more")
{
    /* expanded views: huge shapes, one element of storage each */
    tg_tensor *one = F32(1, 1);
    tg_tensor *big = tg_expand(one, TG_SHAPE(INT64_C(1) << 30,
                                             INT64_C(1) << 28));
    const tg_tensor *parts[] = {big, big, big};
    EXPECT_ERROR(tg_cat(parts, 3, 1) == NULL,
                 "tg_cat: shape (1073741824, 805306368) has too many elements");
    tg_release(big);
    tg_release(one);
}

ERROR_CASE(tg_cat, null_tensor, "a tensor in the list is NULL (an earlier "
                                "call failed)")
{
    tg_tensor *a = F32(2);
    const tg_tensor *parts[] = {a, NULL};
    EXPECT_SILENT(tg_cat(parts, 2, 0) == NULL);
    tg_release(a);
}

ERROR_CASE(tg_stack, empty_list, "the list has no tensors")
{
    const tg_tensor *parts[1] = {NULL};
    EXPECT_ERROR(tg_stack(parts, -1, 0) == NULL,
                 "tg_stack: got -1 tensors in a list");
}

ERROR_CASE(tg_stack, shape_mismatch, "the tensors' shapes differ")
{
    tg_tensor *a = F32(2, 3), *b = F32(3, 2);
    const tg_tensor *parts[] = {a, b};
    EXPECT_ERROR(tg_stack(parts, 2, 0) == NULL,
                 "tg_stack: cannot stack tensor 0 of shape (2, 3) with tensor 1 of shape (3, 2)");
    tg_release(a);
    tg_release(b);
}

ERROR_CASE(tg_stack, dim_out_of_range,
           "dim is out of range for the result's dims")
{
    tg_tensor *a = F32(2, 3);
    const tg_tensor *parts[] = {a, a};
    EXPECT_ERROR(tg_stack(parts, 2, -4) == NULL,
                 "tg_stack: dim -4 is out of range for stacking tensors of shape (2, 3)");
    tg_release(a);
}

ERROR_CASE(tg_stack, too_many_dims,
           "the tensors already have TG_MAX_DIMS dims")
{
    int64_t shape[TG_MAX_DIMS];
    for (int d = 0; d < TG_MAX_DIMS; d++)
        shape[d] = 1;
    tg_tensor *a = tg_zeros(shape, TG_MAX_DIMS, TG_FLOAT32);
    const tg_tensor *parts[] = {a};
    EXPECT_ERROR(tg_stack(parts, 1, 0) == NULL,
                 "tg_stack: cannot stack tensors of shape (1, 1, 1, 1, 1, 1, 1, 1)");
    tg_release(a);
}

ERROR_CASE(tg_stack, too_many_elements,
           "the result would have 2^59 elements or more")
{
    tg_tensor *one = F32(1);
    tg_tensor *big = tg_expand(one, TG_SHAPE(INT64_C(1) << 58));
    const tg_tensor *parts[] = {big, big, big};
    EXPECT_ERROR(tg_stack(parts, 3, 0) == NULL,
                 "tg_stack: shape (3, 288230376151711744) has too many elements");
    tg_release(big);
    tg_release(one);
}

ERROR_CASE(tg_stack, null_tensor, "a tensor in the list is NULL (an "
                                  "earlier call failed)")
{
    const tg_tensor *parts[] = {NULL};
    EXPECT_SILENT(tg_stack(parts, 1, 0) == NULL);
}

ERROR_CASE(tg_split, zero_dim, "x is 0-d")
{
    tg_tensor *x = tg_scalar(1.0, TG_FLOAT32);
    tg_tensor *out[1];
    EXPECT_ERROR(tg_split(x, 1, 0, out, 1) == -1 && out[0] == NULL,
                 "tg_split: cannot split a 0-d tensor");
    tg_release(x);
}

ERROR_CASE(tg_split, dim_out_of_range, "dim is out of range")
{
    tg_tensor *x = F32(2, 3);
    EXPECT_ERROR(tg_split(x, 1, 5, NULL, 0) == -1,
                 "tg_split: dim 5 is out of range for a tensor with 2 dims");
    tg_release(x);
}

ERROR_CASE(tg_split, bad_split_size,
           "split_size is negative, or 0 for a dim that is not empty")
{
    tg_tensor *x = F32(5);
    EXPECT_ERROR(tg_split(x, 0, 0, NULL, 0) == -1,
                 "tg_split: split_size 0 cannot cut dim 0 (size 5) of a tensor of shape (5,)");
    tg_release(x);
}

ERROR_CASE(tg_split, too_many_pieces, "the pieces would not fit in an int")
{
    tg_tensor *one = F32(1);
    tg_tensor *big = tg_expand(one, TG_SHAPE(INT64_C(1) << 32));
    EXPECT_ERROR(tg_split(big, 1, 0, NULL, 0) == -1,
                 "tg_split: splitting dim 0 (size 4294967296) into pieces of 1 makes 4294967296 pieces");
    tg_release(big);
    tg_release(one);
}

ERROR_CASE(tg_split, out_too_small,
           "out has room for fewer tensors than the pieces")
{
    tg_tensor *x = F32(5);
    tg_tensor *out[2];
    EXPECT_ERROR(tg_split(x, 2, 0, out, 2) == -1 && !out[0] && !out[1],
                 "tg_split: out has room for 2 tensors (given) but the split makes 3");
    tg_release(x);
}

ERROR_CASE(tg_split, out_room_for_one,
           "out has room for one tensor and the split makes more (the "
           "count in the singular)")
{
    tg_tensor *x = F32(5);
    tg_tensor *out[1];
    EXPECT_ERROR(tg_split(x, 2, 0, out, 1) == -1 && !out[0],
                 "tg_split: out has room for 1 tensor (given) but the split makes 3");
    tg_release(x);
}

ERROR_CASE(tg_split, null_tensor, "x is NULL (an earlier call failed)")
{
    tg_tensor *out[1] = {(tg_tensor *)out}; // must become NULL
    EXPECT_SILENT(tg_split(NULL, 1, 0, out, 1) == -1 && out[0] == NULL);
}

ERROR_CASE(tg_split_sizes, zero_dim, "x is 0-d")
{
    tg_tensor *x = tg_scalar(1.0, TG_FLOAT32);
    tg_tensor *out[1];
    EXPECT_ERROR(tg_split_sizes(x, TG_SHAPE(1), 0, out) == -1,
                 "tg_split_sizes: cannot split a 0-d tensor");
    tg_release(x);
}

ERROR_CASE(tg_split_sizes, bad_arrays,
           "sizes or out is NULL, or nsizes is negative")
{
    tg_tensor *x = F32(4);
    EXPECT_ERROR(tg_split_sizes(x, NULL, 2, 0, NULL) == -1,
                 "tg_split_sizes: got nsizes 2 with sizes NULL and out NULL");
    tg_release(x);
}

ERROR_CASE(tg_split_sizes, size_does_not_fit,
           "a size is negative or runs past the end of the dim")
{
    tg_tensor *x = F32(2, 4);
    tg_tensor *out[2];
    EXPECT_ERROR(tg_split_sizes(x, (int64_t[]){3, 2}, 2, 1, out) == -1,
                 "tg_split_sizes: sizes[1] = 2 does not fit in dim 1 (size 4) of a tensor of shape (2, 4) after 3 elements");
    tg_release(x);
}

ERROR_CASE(tg_split_sizes, sizes_sum_short,
           "the sizes add up to less than the dim's size")
{
    tg_tensor *x = F32(5);
    tg_tensor *out[2];
    EXPECT_ERROR(tg_split_sizes(x, (int64_t[]){2, 2}, 2, 0, out) == -1,
                 "tg_split_sizes: sizes add up to 4, not to the size 5 of dim 0 of a tensor of shape (5,)");
    tg_release(x);
}

ERROR_CASE(tg_split_sizes, null_tensor, "x is NULL (an earlier call failed)")
{
    tg_tensor *out[1];
    EXPECT_SILENT(tg_split_sizes(NULL, TG_SHAPE(1), 0, out) == -1);
}

ERROR_CASE(tg_chunk, zero_dim, "x is 0-d")
{
    tg_tensor *x = tg_scalar(1.0, TG_FLOAT32);
    EXPECT_ERROR(tg_chunk(x, 2, 0, NULL, 0) == -1,
                 "tg_chunk: cannot split a 0-d tensor");
    tg_release(x);
}

ERROR_CASE(tg_chunk, bad_chunks, "chunks is 0 or negative")
{
    tg_tensor *x = F32(5);
    EXPECT_ERROR(tg_chunk(x, 0, 0, NULL, 0) == -1, "tg_chunk: chunks is 0");
    tg_release(x);
}

ERROR_CASE(tg_chunk, out_null, "out is NULL but max_out is not 0")
{
    tg_tensor *x = F32(5);
    EXPECT_ERROR(tg_chunk(x, 2, 0, NULL, 2) == -1,
                 "tg_chunk: out has room for 2 tensors (NULL) but the split makes 2");
    tg_release(x);
}

ERROR_CASE(tg_chunk, null_tensor, "x is NULL (an earlier call failed)")
{
    EXPECT_SILENT(tg_chunk(NULL, 2, 0, NULL, 0) == -1);
}

/* The search behind the out-of-memory rows must be able to come back
 * empty: a prefix no backward reports is never found. */
TG_TEST(catalogue_ops, backward_search_can_fail)
{
    cr_assert_not(backward_fails_with(layer_norm_of,
                                      "tg_layer_norm: no such message"));
    cr_assert_not(last_error_starts("tg_layer_norm: no such message"));
}

/* A huge bins count is reported as bins, not as the shape of the bins + 1
 * edges it would make (the same row as bins 0, tg_histogram/
 * bins_out_of_range). */
TG_TEST(catalogue_ops, histogram_huge_bins_named_as_bins)
{
    tg_tensor *x = F32(10);
    cr_assert_null(tg_histogram(x, INT64_MAX, false, NULL));
    tg_assert_error("tg_histogram: bins is 9223372036854775807\n",
                    "rule: bins must be >= 1 (and below 2^59)");
    tg_release(x);
}

/* --------------------------------------------------------------- indexing */

/* int64 indices 0..n-1 of the given shape. */
#define IDX(...) tg_zeros(TG_SHAPE(__VA_ARGS__), TG_INT64)

ERROR_CASE(tg_index_select, out_of_range,
           "an index is >= x.shape[dim], or negative")
{
    tg_tensor *x = F32(3, 4);
    const int64_t v[] = {0, 2, -1};
    tg_tensor *idx = tg_from_array(v, TG_SHAPE(3), TG_INT64);
    tg_tensor *y = tg_index_select(x, 0, idx);
    EXPECT_ERROR(y == NULL,
                 "tg_index_select: index -1 is out of range for dim 0 of x of shape (3, 4)");
    tg_release(idx);
    tg_release(x);
}

ERROR_CASE(tg_index_select, float_idx, "idx is not int64")
{
    tg_tensor *x = F32(3, 4), *idx = F32(2);
    tg_tensor *y = tg_index_select(x, 0, idx);
    EXPECT_ERROR(y == NULL, "tg_index_select: idx is float32");
    tg_release(idx);
    tg_release(x);
}

ERROR_CASE(tg_index_select, idx_2d, "idx has more than one dim")
{
    tg_tensor *x = F32(3, 4), *idx = IDX(2, 2);
    tg_tensor *y = tg_index_select(x, 0, idx);
    EXPECT_ERROR(y == NULL, "tg_index_select: idx has shape (2, 2)");
    tg_release(idx);
    tg_release(x);
}

ERROR_CASE(tg_index_select, zero_dim_x, "x is 0-d")
{
    tg_tensor *x = tg_scalar(1, TG_FLOAT32), *idx = IDX(1);
    tg_tensor *y = tg_index_select(x, 0, idx);
    EXPECT_ERROR(y == NULL, "tg_index_select: cannot index a 0-d tensor");
    tg_release(idx);
    tg_release(x);
}

ERROR_CASE(tg_index_select, bad_dim, "dim is out of range")
{
    tg_tensor *x = F32(3, 4), *idx = IDX(1);
    tg_tensor *y = tg_index_select(x, 2, idx);
    EXPECT_ERROR(y == NULL,
                 "tg_index_select: dim 2 is out of range for a tensor with 2 dims");
    tg_release(idx);
    tg_release(x);
}

ERROR_CASE(tg_index_select, null_tensor,
           "x or idx is NULL (an earlier call failed)")
{
    tg_tensor *x = F32(3, 4);
    EXPECT_SILENT(tg_index_select(x, 0, NULL) == NULL);
    tg_release(x);
}

ERROR_CASE(tg_index, out_of_range,
           "an index is >= x.shape[0] or < -x.shape[0]")
{
    tg_tensor *x = F32(27, 10);
    const int64_t v[] = {0, 26, 27, 5};
    tg_tensor *idx = tg_from_array(v, TG_SHAPE(2, 2), TG_INT64);
    tg_tensor *y = tg_index(x, idx);
    EXPECT_ERROR(y == NULL,
                 "tg_index: index 27 is out of range for dim 0 of x of shape (27, 10)");
    tg_release(idx);
    tg_release(x);
}

ERROR_CASE(tg_index, float_idx, "idx is not int64")
{
    tg_tensor *x = F32(3, 4), *idx = F64(2);
    tg_tensor *y = tg_index(x, idx);
    EXPECT_ERROR(y == NULL, "tg_index: idx is float64");
    tg_release(idx);
    tg_release(x);
}

ERROR_CASE(tg_index, zero_dim_x, "x is 0-d")
{
    tg_tensor *x = tg_scalar(1, TG_FLOAT32), *idx = IDX(1);
    tg_tensor *y = tg_index(x, idx);
    EXPECT_ERROR(y == NULL, "tg_index: cannot index a 0-d tensor");
    tg_release(idx);
    tg_release(x);
}

ERROR_CASE(tg_index, too_many_dims,
           "idx.ndim + x.ndim - 1 is more than TG_MAX_DIMS")
{
    tg_tensor *x = F32(2, 1, 1, 1, 1), *idx = IDX(1, 1, 1, 1, 1);
    tg_tensor *y = tg_index(x, idx);
    EXPECT_ERROR(y == NULL, "tg_index: cannot make a shape with 9 dims");
    tg_release(idx);
    tg_release(x);
}

ERROR_CASE(tg_index, null_tensor, "x or idx is NULL (an earlier call failed)")
{
    tg_tensor *idx = IDX(2);
    EXPECT_SILENT(tg_index(NULL, idx) == NULL);
    tg_release(idx);
}

ERROR_CASE(tg_gather, out_of_range, "an index is >= x.shape[dim], or negative")
{
    tg_tensor *x = F32(4, 3);
    const int64_t v[] = {0, 3, 1, 2};
    tg_tensor *idx = tg_from_array(v, TG_SHAPE(4, 1), TG_INT64);
    tg_tensor *y = tg_gather(x, 1, idx);
    EXPECT_ERROR(y == NULL,
                 "tg_gather: index 3 is out of range for dim 1 of x of shape (4, 3)");
    tg_release(idx);
    tg_release(x);
}

ERROR_CASE(tg_gather, ndim_mismatch,
           "idx has a different number of dims than x (labels (N,) for (N, C))")
{
    tg_tensor *x = F32(4, 3), *idx = IDX(4);
    tg_tensor *y = tg_gather(x, 1, idx);
    EXPECT_ERROR(y == NULL,
                 "tg_gather: idx of shape (4,) and x of shape (4, 3) have different numbers of dims");
    tg_release(idx);
    tg_release(x);
}

ERROR_CASE(tg_gather, idx_too_large,
           "idx is larger than x in a dim other than dim")
{
    tg_tensor *x = F32(2, 3), *idx = IDX(3, 1);
    tg_tensor *y = tg_gather(x, 1, idx);
    EXPECT_ERROR(y == NULL,
                 "tg_gather: idx of shape (3, 1) is larger than x of shape (2, 3) in dim 0");
    tg_release(idx);
    tg_release(x);
}

ERROR_CASE(tg_gather, float_idx, "idx is not int64")
{
    tg_tensor *x = F32(4, 3), *idx = F32(4, 1);
    tg_tensor *y = tg_gather(x, 1, idx);
    EXPECT_ERROR(y == NULL, "tg_gather: idx is float32");
    tg_release(idx);
    tg_release(x);
}

ERROR_CASE(tg_gather, bad_dim, "dim is out of range")
{
    tg_tensor *x = F32(4, 3), *idx = IDX(4, 1);
    tg_tensor *y = tg_gather(x, -3, idx);
    EXPECT_ERROR(y == NULL,
                 "tg_gather: dim -3 is out of range for a tensor with 2 dims");
    tg_release(idx);
    tg_release(x);
}

ERROR_CASE(tg_gather, null_tensor, "x or idx is NULL (an earlier call failed)")
{
    tg_tensor *x = F32(4, 3);
    EXPECT_SILENT(tg_gather(x, 1, NULL) == NULL);
    tg_release(x);
}

ERROR_CASE(tg_one_hot, negative_class, "a class value is negative")
{
    const int64_t v[] = {1, -1};
    tg_tensor *idx = tg_from_array(v, TG_SHAPE(2), TG_INT64);
    tg_tensor *y = tg_one_hot(idx, 3);
    EXPECT_ERROR(y == NULL,
                 "tg_one_hot: class value -1 at flat position 1 is negative");
    tg_release(idx);
}

ERROR_CASE(tg_one_hot, class_too_large, "a class value is >= num_classes")
{
    const int64_t v[] = {1, 3};
    tg_tensor *idx = tg_from_array(v, TG_SHAPE(2), TG_INT64);
    tg_tensor *y = tg_one_hot(idx, 3);
    EXPECT_ERROR(y == NULL,
                 "tg_one_hot: class value 3 is too large for 3 classes");
    tg_release(idx);
}

ERROR_CASE(tg_one_hot, bad_num_classes, "num_classes is below -1")
{
    tg_tensor *idx = IDX(2);
    tg_tensor *y = tg_one_hot(idx, -2);
    EXPECT_ERROR(y == NULL, "tg_one_hot: num_classes is -2");
    tg_release(idx);
}

ERROR_CASE(tg_one_hot, infer_from_empty,
           "num_classes is -1 and idx is empty")
{
    tg_tensor *idx = IDX(0);
    tg_tensor *y = tg_one_hot(idx, -1);
    EXPECT_ERROR(y == NULL,
                 "tg_one_hot: cannot infer the number of classes of an empty idx");
    tg_release(idx);
}

ERROR_CASE(tg_one_hot, float_idx, "idx is not int64")
{
    tg_tensor *idx = F32(2);
    tg_tensor *y = tg_one_hot(idx, 3);
    EXPECT_ERROR(y == NULL, "tg_one_hot: idx is float32");
    tg_release(idx);
}

ERROR_CASE(tg_one_hot, too_many_dims, "idx already has TG_MAX_DIMS dims")
{
    tg_tensor *idx = IDX(1, 1, 1, 1, 1, 1, 1, 1);
    tg_tensor *y = tg_one_hot(idx, 3);
    EXPECT_ERROR(y == NULL, "tg_one_hot: cannot make a shape with 9 dims");
    tg_release(idx);
}

ERROR_CASE(tg_one_hot, null_tensor, "idx is NULL (an earlier call failed)")
{
    EXPECT_SILENT(tg_one_hot(NULL, 3) == NULL);
}

/* ------------------------------------------- BatchNorm over virtual ranks */

ERROR_CASE(tg_batch_norm_virtual_ranks, no_ranks, "world_size is below 1")
{
    tg_tensor *x = F32(4, 3);
    tg_tensor *y =
        tg_batch_norm_virtual_ranks(x, 0, NULL, NULL, NULL, NULL, NULL);
    EXPECT_ERROR(y == NULL, "tg_batch_norm_virtual_ranks: world_size is 0");
    tg_release(x);
}

ERROR_CASE(tg_batch_norm_virtual_ranks, unbiased_correction,
           "opts->correction is 1 (makemore part 4's unbiased variance)")
{
    tg_tensor *x = F32(4, 3);
    tg_batch_norm_options o = tg_batch_norm_defaults();
    o.correction = 1;
    tg_tensor *y = tg_batch_norm_virtual_ranks(x, 2, NULL, NULL, NULL, NULL,
                                               &o);
    EXPECT_ERROR(y == NULL,
                 "tg_batch_norm_virtual_ranks: correction is 1");
    tg_release(x);
}

ERROR_CASE(tg_batch_norm_virtual_ranks, one_value_per_channel,
           "training with one value per channel over all the shards")
{
    tg_tensor *x = F32(1, 3);
    tg_tensor *y =
        tg_batch_norm_virtual_ranks(x, 2, NULL, NULL, NULL, NULL, NULL);
    EXPECT_ERROR(y == NULL,
                 "tg_batch_norm_virtual_ranks: expected more than 1 value per channel when training, got input of shape (1, 3)");
    tg_release(x);
}

ERROR_CASE(tg_batch_norm_virtual_ranks, channel_param_shape,
           "weight, bias or a running statistic is not (C,) (the checks of tg_batch_norm)")
{
    tg_tensor *x = F32(4, 3), *w = F32(2), *b = F32(2);
    tg_tensor *y = tg_batch_norm_virtual_ranks(x, 2, NULL, NULL, w, b, NULL);
    EXPECT_ERROR(y == NULL,
                 "tg_batch_norm_virtual_ranks: weight of shape (2,) does not match the 3 channels of the input of shape (4, 3)");
    tg_release(b);
    tg_release(w);
    tg_release(x);
}

static tg_tensor *virtual_ranks_of(const tg_tensor *x)
{
    return tg_batch_norm_virtual_ranks(x, 3, NULL, NULL, NULL, NULL, NULL);
}

ERROR_CASE(tg_batch_norm_virtual_ranks, out_of_memory_for_statistics,
           "memory runs out for the shards' statistics")
{
    cr_assert(oom_sweep_reaches(virtual_ranks_of, false,
                                "tg_batch_norm_virtual_ranks: out of memory "
                                "for the statistics of 3 shards"),
              "no allocation failure made the forward report it");
    EXPECT_ERROR(true, "tg_batch_norm_virtual_ranks: out of memory for the "
                       "statistics of 3 shards");
}

ERROR_CASE(tg_batch_norm_virtual_ranks, out_of_memory_in_backward,
           "memory runs out in the backward (reported by tg_backward)")
{
    cr_assert(oom_sweep_reaches(virtual_ranks_of, true,
                                "tg_batch_norm_virtual_ranks: out of memory "
                                "in the backward"),
              "no allocation failure made the backward report it");
    EXPECT_ERROR(true,
                 "tg_batch_norm_virtual_ranks: out of memory in the backward");
}

ERROR_CASE(tg_batch_norm_virtual_ranks, null_tensor,
           "x is NULL (an earlier call failed)")
{
    EXPECT_SILENT(tg_batch_norm_virtual_ranks(NULL, 2, NULL, NULL, NULL, NULL,
                                              NULL) == NULL);
}

/* ---- convolution, pooling ---- */

NEVER_FAILS(tg_conv2d_defaults, "returns a struct of default values");

ERROR_CASE(tg_conv2d, channel_mismatch,
           "x's channels differ from weight.shape[1] * groups")
{
    tg_tensor *x = F32(2, 3, 5, 5), *w = F32(4, 2, 3, 3);
    tg_tensor *y = tg_conv2d(x, w, NULL, NULL);
    EXPECT_ERROR(y == NULL, "tg_conv2d: cannot convolve x of shape "
                            "(2, 3, 5, 5) with weight (4, 2, 3, 3), groups 1");
    tg_release(x);
    tg_release(w);
}

ERROR_CASE(tg_conv2d, groups_do_not_divide,
           "groups does not divide the output channels")
{
    tg_tensor *x = F32(1, 4, 5, 5), *w = F32(3, 2, 3, 3);
    tg_tensor *y = tg_conv2d(x, w, NULL, &(tg_conv2d_options){.groups = 2});
    EXPECT_ERROR(y == NULL, "tg_conv2d: groups 2 does not divide the 3 "
                            "output channels of weight (3, 2, 3, 3)");
    tg_release(x);
    tg_release(w);
}

ERROR_CASE(tg_conv2d, kernel_larger_than_padded_input,
           "the (dilated) kernel is larger than the padded input: the "
           "output would be smaller than 1x1")
{
    tg_tensor *x = F32(1, 1, 4, 4), *w = F32(1, 1, 3, 3);
    tg_tensor *y = tg_conv2d(x, w, NULL,
                             &(tg_conv2d_options){.dilation = {2, 2}});
    EXPECT_ERROR(y == NULL, "tg_conv2d: the kernel (3, 3) with dilation "
                            "(2, 2) spans (5, 5), larger than the padded "
                            "input (4, 4) of x (1, 1, 4, 4)");
    tg_release(x);
    tg_release(w);
}

ERROR_CASE(tg_conv2d, wrong_ndim, "x is not 4-D (or 3-D for one image)")
{
    tg_tensor *x = F32(8, 5), *w = F32(4, 1, 3, 3);
    tg_tensor *y = tg_conv2d(x, w, NULL, NULL);
    EXPECT_ERROR(y == NULL, "tg_conv2d: x has shape (8, 5)");
    tg_release(x);
    tg_release(w);
}

ERROR_CASE(tg_conv2d, weight_not_4d,
           "weight is not 4-D, or one of its sizes is 0")
{
    tg_tensor *x = F32(1, 1, 5, 5), *w = F32(4, 9);
    tg_tensor *y = tg_conv2d(x, w, NULL, NULL);
    EXPECT_ERROR(y == NULL, "tg_conv2d: weight has shape (4, 9)");
    tg_release(x);
    tg_release(w);
}

ERROR_CASE(tg_conv2d, bias_shape, "bias is not (out_channels,)")
{
    tg_tensor *x = F32(1, 1, 5, 5), *w = F32(4, 1, 3, 3), *b = F32(3);
    tg_tensor *y = tg_conv2d(x, w, b, NULL);
    EXPECT_ERROR(y == NULL, "tg_conv2d: bias has shape (3,) but weight "
                            "(4, 1, 3, 3) has 4 output channels");
    tg_release(x);
    tg_release(w);
    tg_release(b);
}

ERROR_CASE(tg_conv2d, negative_option,
           "a stride, padding, dilation or groups is negative")
{
    tg_tensor *x = F32(1, 1, 5, 5), *w = F32(1, 1, 3, 3);
    tg_tensor *y = tg_conv2d(x, w, NULL,
                             &(tg_conv2d_options){.stride = {1, -1}});
    EXPECT_ERROR(y == NULL, "tg_conv2d: invalid options stride (1, -1), "
                            "padding (0, 0), dilation (0, 0), groups 0");
    tg_release(x);
    tg_release(w);
}

ERROR_CASE(tg_conv2d, int_input, "x is int64")
{
    tg_tensor *x = I64(1, 1, 5, 5), *w = F32(1, 1, 3, 3);
    tg_tensor *y = tg_conv2d(x, w, NULL, NULL);
    EXPECT_ERROR(y == NULL, "tg_conv2d: cannot convolve an int64 tensor");
    tg_release(x);
    tg_release(w);
}

ERROR_CASE(tg_conv2d, dtype_mismatch, "weight or bias has another dtype")
{
    tg_tensor *x = F32(1, 1, 5, 5), *w = F64(1, 1, 3, 3);
    tg_tensor *y = tg_conv2d(x, w, NULL, NULL);
    EXPECT_ERROR(y == NULL, "tg_conv2d: weight is float64 but x is float32");
    tg_release(x);
    tg_release(w);
}

ERROR_CASE(tg_conv2d, null_tensor, "x is NULL (an earlier call failed)")
{
    tg_tensor *w = F32(1, 1, 3, 3);
    EXPECT_SILENT(tg_conv2d(NULL, w, NULL, NULL) == NULL);
    tg_release(w);
}

ERROR_CASE(tg_conv2d, null_weight,
           "weight is NULL (an earlier call failed; a NULL bias means no "
           "bias)")
{
    tg_tensor *x = F32(1, 1, 5, 5);
    EXPECT_SILENT(tg_conv2d(x, NULL, NULL, NULL) == NULL);
    tg_release(x);
}

ERROR_CASE(tg_max_pool2d, kernel_larger_than_padded_input,
           "the kernel is larger than the padded input: the output would "
           "be smaller than 1x1")
{
    tg_tensor *x = F32(1, 1, 3, 3);
    tg_tensor *y = tg_max_pool2d(x, (int64_t[]){4, 4}, NULL, NULL);
    EXPECT_ERROR(y == NULL, "tg_max_pool2d: the kernel (4, 4) is larger "
                            "than the padded input (3, 3) of x (1, 1, 3, 3)");
    tg_release(x);
}

ERROR_CASE(tg_max_pool2d, padding_over_half_kernel,
           "padding is more than half the kernel")
{
    tg_tensor *x = F32(1, 1, 6, 6);
    tg_tensor *y = tg_max_pool2d(x, (int64_t[]){2, 2}, NULL,
                                 (int64_t[]){2, 0});
    EXPECT_ERROR(y == NULL, "tg_max_pool2d: padding (2, 0) is more than "
                            "half the kernel (2, 2)");
    tg_release(x);
}

ERROR_CASE(tg_max_pool2d, bad_window,
           "the kernel is NULL or < 1, a stride < 1, a padding < 0")
{
    tg_tensor *x = F32(1, 1, 6, 6);
    tg_tensor *y = tg_max_pool2d(x, (int64_t[]){2, 2}, (int64_t[]){0, 1},
                                 NULL);
    EXPECT_ERROR(y == NULL, "tg_max_pool2d: invalid window: kernel (2, 2), "
                            "stride (0, 1), padding (0, 0)");
    tg_release(x);
}

ERROR_CASE(tg_max_pool2d, wrong_ndim, "x is not 4-D (or 3-D for one image)")
{
    tg_tensor *x = F32(6, 6);
    tg_tensor *y = tg_max_pool2d(x, (int64_t[]){2, 2}, NULL, NULL);
    EXPECT_ERROR(y == NULL, "tg_max_pool2d: x has shape (6, 6)");
    tg_release(x);
}

ERROR_CASE(tg_max_pool2d, int_input, "x is int64")
{
    tg_tensor *x = I64(1, 1, 6, 6);
    tg_tensor *y = tg_max_pool2d(x, (int64_t[]){2, 2}, NULL, NULL);
    EXPECT_ERROR(y == NULL, "tg_max_pool2d: cannot pool an int64 tensor");
    tg_release(x);
}

ERROR_CASE(tg_max_pool2d, null_tensor, "x is NULL (an earlier call failed)")
{
    EXPECT_SILENT(tg_max_pool2d(NULL, (int64_t[]){2, 2}, NULL, NULL) == NULL);
}

ERROR_CASE(tg_avg_pool2d, kernel_larger_than_padded_input,
           "the kernel is larger than the padded input: the output would "
           "be smaller than 1x1")
{
    tg_tensor *x = F32(2, 5, 1);
    tg_tensor *y = tg_avg_pool2d(x, (int64_t[]){2, 2}, NULL, NULL);
    EXPECT_ERROR(y == NULL, "tg_avg_pool2d: the kernel (2, 2) is larger "
                            "than the padded input (5, 1) of x (2, 5, 1)");
    tg_release(x);
}

ERROR_CASE(tg_avg_pool2d, padding_over_half_kernel,
           "padding is more than half the kernel")
{
    tg_tensor *x = F32(1, 1, 6, 6);
    tg_tensor *y = tg_avg_pool2d(x, (int64_t[]){3, 3}, NULL,
                                 (int64_t[]){1, 2});
    EXPECT_ERROR(y == NULL, "tg_avg_pool2d: padding (1, 2) is more than "
                            "half the kernel (3, 3)");
    tg_release(x);
}

ERROR_CASE(tg_avg_pool2d, bad_window,
           "the kernel is NULL or < 1, a stride < 1, a padding < 0")
{
    tg_tensor *x = F32(1, 1, 6, 6);
    tg_tensor *y = tg_avg_pool2d(x, NULL, NULL, NULL);
    EXPECT_ERROR(y == NULL, "tg_avg_pool2d: invalid window: kernel (0, 0), "
                            "stride (0, 0), padding (0, 0)");
    tg_release(x);
}

ERROR_CASE(tg_avg_pool2d, wrong_ndim, "x is not 4-D (or 3-D for one image)")
{
    tg_tensor *x = F32(1, 1, 1, 6, 6);
    tg_tensor *y = tg_avg_pool2d(x, (int64_t[]){2, 2}, NULL, NULL);
    EXPECT_ERROR(y == NULL, "tg_avg_pool2d: x has shape (1, 1, 1, 6, 6)");
    tg_release(x);
}

ERROR_CASE(tg_avg_pool2d, int_input, "x is int64")
{
    tg_tensor *x = I64(1, 1, 6, 6);
    tg_tensor *y = tg_avg_pool2d(x, (int64_t[]){2, 2}, NULL, NULL);
    EXPECT_ERROR(y == NULL, "tg_avg_pool2d: cannot pool an int64 tensor");
    tg_release(x);
}

ERROR_CASE(tg_avg_pool2d, null_tensor, "x is NULL (an earlier call failed)")
{
    EXPECT_SILENT(tg_avg_pool2d(NULL, (int64_t[]){2, 2}, NULL, NULL) == NULL);
}

/* ------------------------------------------- GroupNorm and InstanceNorm */

ERROR_CASE(tg_group_norm, int64_input, "x is an int64 tensor")
{
    tg_tensor *x = I64(2, 4, 3);
    EXPECT_ERROR(tg_group_norm(x, 2, NULL, NULL, 1e-5) == NULL,
                 "tg_group_norm: cannot normalise an int64 tensor");
    tg_release(x);
}

ERROR_CASE(tg_group_norm, too_few_dims, "x has fewer than 2 dims")
{
    tg_tensor *x = F32(4);
    EXPECT_ERROR(tg_group_norm(x, 2, NULL, NULL, 1e-5) == NULL,
                 "tg_group_norm: the input of shape (4,) has 1 dim");
    tg_release(x);
}

ERROR_CASE(tg_group_norm, channels_not_divisible,
           "C is not divisible by num_groups")
{
    tg_tensor *x = F32(2, 6, 3);
    EXPECT_ERROR(tg_group_norm(x, 4, NULL, NULL, 1e-5) == NULL,
                 "tg_group_norm: cannot split the 6 channels of the input of shape (2, 6, 3) into 4 groups");
    tg_release(x);
}

ERROR_CASE(tg_group_norm, zero_groups, "num_groups is 0 or negative")
{
    tg_tensor *x = F32(2, 6, 3);
    EXPECT_ERROR(tg_group_norm(x, 0, NULL, NULL, 1e-5) == NULL,
                 "tg_group_norm: cannot split the 6 channels of the input of shape (2, 6, 3) into 0 groups");
    tg_release(x);
}

ERROR_CASE(tg_group_norm, weight_shape, "weight is not (C,)")
{
    tg_tensor *x = F32(2, 6, 3), *w = F32(4);
    EXPECT_ERROR(tg_group_norm(x, 2, w, NULL, 1e-5) == NULL,
                 "tg_group_norm: weight of shape (4,) does not match the 6 channels of the input of shape (2, 6, 3)");
    tg_release(w);
    tg_release(x);
}

ERROR_CASE(tg_group_norm, bias_dtype, "bias has another dtype than x")
{
    tg_tensor *x = F32(2, 6, 3), *b = F64(6);
    EXPECT_ERROR(tg_group_norm(x, 2, NULL, b, 1e-5) == NULL,
                 "tg_group_norm: bias is float64 but the input is float32");
    tg_release(b);
    tg_release(x);
}

ERROR_CASE(tg_group_norm, one_value,
           "N * (C / num_groups) * (dims after C) is 1, as PyTorch refuses")
{
    tg_tensor *x = F32(1, 2);
    EXPECT_ERROR(tg_group_norm(x, 2, NULL, NULL, 1e-5) == NULL,
                 "tg_group_norm: expected more than 1 value per channel when training, got input of shape (1, 2) with 2 groups");
    tg_release(x);
}

ERROR_CASE(tg_group_norm, bad_eps, "eps is negative, inf or NaN")
{
    tg_tensor *x = F32(2, 6, 3);
    EXPECT_ERROR(tg_group_norm(x, 2, NULL, NULL, -1.0) == NULL,
                 "tg_group_norm: eps is -1");
    tg_release(x);
}

static tg_tensor *group_norm_of(const tg_tensor *x)
{
    return tg_group_norm(x, 1, NULL, NULL, 1e-5);
}

ERROR_CASE(tg_group_norm, out_of_memory_in_backward,
           "memory runs out in the backward (reported by tg_backward)")
{
    cr_assert(backward_fails_with(group_norm_of,
                                  "tg_group_norm: out of memory"),
              "no allocation failure made the backward report it");
    EXPECT_ERROR(true, "tg_group_norm: out of memory in the GroupNorm backward");
}

ERROR_CASE(tg_group_norm, null_tensor, "x is NULL (an earlier call failed)")
{
    EXPECT_SILENT(tg_group_norm(NULL, 2, NULL, NULL, 1e-5) == NULL);
}

ERROR_CASE(tg_group_norm_composed, int64_input, "x is an int64 tensor")
{
    tg_tensor *x = I64(2, 4, 3);
    EXPECT_ERROR(tg_group_norm_composed(x, 2, NULL, NULL, 1e-5) == NULL,
                 "tg_group_norm_composed: cannot normalise an int64 tensor");
    tg_release(x);
}

ERROR_CASE(tg_group_norm_composed, too_few_dims, "x has fewer than 2 dims")
{
    tg_tensor *x = F32(4);
    EXPECT_ERROR(tg_group_norm_composed(x, 2, NULL, NULL, 1e-5) == NULL,
                 "tg_group_norm_composed: the input of shape (4,) has 1 dim");
    tg_release(x);
}

ERROR_CASE(tg_group_norm_composed, channels_not_divisible,
           "C is not divisible by num_groups")
{
    tg_tensor *x = F32(2, 6, 3);
    EXPECT_ERROR(tg_group_norm_composed(x, 4, NULL, NULL, 1e-5) == NULL,
                 "tg_group_norm_composed: cannot split the 6 channels of the input of shape (2, 6, 3) into 4 groups");
    tg_release(x);
}

ERROR_CASE(tg_group_norm_composed, weight_shape, "weight is not (C,)")
{
    tg_tensor *x = F32(2, 6, 3), *w = F32(6, 1);
    EXPECT_ERROR(tg_group_norm_composed(x, 2, w, NULL, 1e-5) == NULL,
                 "tg_group_norm_composed: weight of shape (6, 1) does not match the 6 channels of the input of shape (2, 6, 3)");
    tg_release(w);
    tg_release(x);
}

ERROR_CASE(tg_group_norm_composed, one_value,
           "N * (C / num_groups) * (dims after C) is 1, as PyTorch refuses")
{
    tg_tensor *x = F32(1, 3, 1);
    EXPECT_ERROR(tg_group_norm_composed(x, 3, NULL, NULL, 1e-5) == NULL,
                 "tg_group_norm_composed: expected more than 1 value per channel when training, got input of shape (1, 3, 1) with 3 groups");
    tg_release(x);
}

ERROR_CASE(tg_group_norm_composed, bad_eps, "eps is negative, inf or NaN")
{
    tg_tensor *x = F32(2, 6, 3);
    EXPECT_ERROR(tg_group_norm_composed(x, 2, NULL, NULL, INFINITY) == NULL,
                 "tg_group_norm_composed: eps is inf");
    tg_release(x);
}

ERROR_CASE(tg_group_norm_composed, null_tensor,
           "x is NULL (an earlier call failed)")
{
    EXPECT_SILENT(tg_group_norm_composed(NULL, 2, NULL, NULL, 1e-5) == NULL);
}

ERROR_CASE(tg_instance_norm, int64_input, "x is an int64 tensor")
{
    tg_tensor *x = I64(2, 3, 4);
    EXPECT_ERROR(tg_instance_norm(x, NULL, NULL, NULL, NULL, true, 0.1,
                                  1e-5) == NULL,
                 "tg_instance_norm: cannot normalise an int64 tensor");
    tg_release(x);
}

ERROR_CASE(tg_instance_norm, too_few_dims, "x has fewer than 2 dims")
{
    tg_tensor *x = F32(4);
    EXPECT_ERROR(tg_instance_norm(x, NULL, NULL, NULL, NULL, true, 0.1,
                                  1e-5) == NULL,
                 "tg_instance_norm: the input of shape (4,) has 1 dim");
    tg_release(x);
}

ERROR_CASE(tg_instance_norm, one_spatial_element,
           "the input's statistics are used and each channel has one value")
{
    tg_tensor *x = F32(4, 3);
    EXPECT_ERROR(tg_instance_norm(x, NULL, NULL, NULL, NULL, true, 0.1,
                                  1e-5) == NULL,
                 "tg_instance_norm: expected more than 1 spatial element when training, got input of shape (4, 3)");
    tg_release(x);
}

ERROR_CASE(tg_instance_norm, weight_shape, "weight is not (C,)")
{
    tg_tensor *x = F32(2, 3, 4), *w = F32(4);
    EXPECT_ERROR(tg_instance_norm(x, NULL, NULL, w, NULL, true, 0.1,
                                  1e-5) == NULL,
                 "tg_instance_norm: weight of shape (4,) does not match the 3 channels of the input of shape (2, 3, 4)");
    tg_release(w);
    tg_release(x);
}

ERROR_CASE(tg_instance_norm, running_stat_shape, "running_var is not (C,)")
{
    tg_tensor *x = F32(2, 3, 4), *rm = F32(3), *rv = F32(2);
    EXPECT_ERROR(tg_instance_norm(x, rm, rv, NULL, NULL, true, 0.1,
                                  1e-5) == NULL,
                 "tg_instance_norm: running_var of shape (2,) does not match the 3 channels of the input of shape (2, 3, 4)");
    tg_release(rv);
    tg_release(rm);
    tg_release(x);
}

ERROR_CASE(tg_instance_norm, one_running_stat,
           "one of running_mean and running_var is NULL")
{
    tg_tensor *x = F32(2, 3, 4), *rm = F32(3);
    EXPECT_ERROR(tg_instance_norm(x, rm, NULL, NULL, NULL, true, 0.1,
                                  1e-5) == NULL,
                 "tg_instance_norm: running_mean is given but running_var is NULL");
    tg_release(rm);
    tg_release(x);
}

ERROR_CASE(tg_instance_norm, running_stat_requires_grad,
           "a running statistic requires grad")
{
    tg_tensor *x = F32(2, 3, 4), *rm = F32(3), *rv = F32(3);
    tg_set_requires_grad(rm, true);
    EXPECT_ERROR(tg_instance_norm(x, rm, rv, NULL, NULL, true, 0.1,
                                  1e-5) == NULL,
                 "tg_instance_norm: running_mean requires grad");
    tg_release(rv);
    tg_release(rm);
    tg_release(x);
}

ERROR_CASE(tg_instance_norm, running_stats_without_input_stats,
           "use_input_stats is false and there are no running statistics")
{
    tg_tensor *x = F32(2, 3, 4);
    EXPECT_ERROR(tg_instance_norm(x, NULL, NULL, NULL, NULL, false, 0.1,
                                  1e-5) == NULL,
                 "tg_instance_norm: use_input_stats is false but running_mean and running_var are NULL");
    tg_release(x);
}

ERROR_CASE(tg_instance_norm, bad_momentum, "momentum is outside [0, 1]")
{
    tg_tensor *x = F32(2, 3, 4);
    EXPECT_ERROR(tg_instance_norm(x, NULL, NULL, NULL, NULL, true, 1.5,
                                  1e-5) == NULL,
                 "tg_instance_norm: momentum is 1.5");
    tg_release(x);
}

ERROR_CASE(tg_instance_norm, bad_eps, "eps is negative, inf or NaN")
{
    tg_tensor *x = F32(2, 3, 4);
    EXPECT_ERROR(tg_instance_norm(x, NULL, NULL, NULL, NULL, true, 0.1,
                                  NAN) == NULL,
                 "tg_instance_norm: eps is nan");
    tg_release(x);
}

ERROR_CASE(tg_instance_norm, null_tensor, "x is NULL (an earlier call failed)")
{
    EXPECT_SILENT(tg_instance_norm(NULL, NULL, NULL, NULL, NULL, true, 0.1,
                                   1e-5) == NULL);
}
