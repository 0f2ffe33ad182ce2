/*
 * tests/autograd/grad_cases_view.c - gradcheck cases for the view ops
 * (view.c) and the copy ops (copy.c).
 *
 * A view is linear in x with a 0/1 Jacobian (a sum of ones for expand), so
 * finite differences are exact up to rounding: any value range works and
 * there are no kinks. The cases vary shapes and layouts instead: 0-d
 * tensors, size-1 dims, negative dims and indices, clamped slice bounds,
 * and transposed or strided inputs (where reshape must copy, and where
 * strides multiply). tg_to_dtype is checked against NumPy in
 * test_grad_view.c instead: through float32, finite differences with
 * eps 1e-6 lose most of their digits.
 */
#include "grad_cases.h"

#define F(name, expr)                                                       \
    static tg_tensor *name(const tg_tensor *const *x, int n, void *user)         \
    {                                                                       \
        (void)n, (void)user;                                                \
        return expr;                                                        \
    }

F(f_reshape_6_4, tg_reshape(x[0], TG_SHAPE(6, -1)))
F(f_reshape_12, tg_reshape(x[0], TG_SHAPE(12))) // a copy when transposed
F(f_reshape_1_1, tg_reshape(x[0], TG_SHAPE(1, 1)))
F(f_view_4_6, tg_view(x[0], TG_SHAPE(4, 6)))
F(f_view_12, tg_view(x[0], TG_SHAPE(-1)))
F(f_permute_201, tg_permute(x[0], TG_DIMS(2, 0, -2)))
F(f_transpose_01, tg_transpose(x[0], 0, -1))
F(f_transpose_0d, tg_transpose(x[0], 0, -1))
F(f_squeeze_1, tg_squeeze(x[0], 1))
F(f_squeeze_0, tg_squeeze(x[0], 0)) // size 3: x unchanged
F(f_squeeze_all, tg_squeeze_all(x[0]))
F(f_unsqueeze_m1, tg_unsqueeze(x[0], -1))
F(f_unsqueeze_1, tg_unsqueeze(x[0], 1))
F(f_unsqueeze_0, tg_unsqueeze(x[0], 0))
F(f_expand_2_3_4, tg_expand(x[0], TG_SHAPE(2, 3, 4)))
F(f_expand_3_2, tg_expand(x[0], TG_SHAPE(3, 2)))
F(f_expand_keep, tg_expand(x[0], TG_SHAPE(2, 3, -1)))
F(f_broadcast_3_4, tg_broadcast_to(x[0], TG_SHAPE(3, 4)))
F(f_narrow, tg_narrow(x[0], 1, -3, 2))
F(f_slice_clamped, tg_slice(x[0], 0, -100, 100, 3))
F(f_slice_neg, tg_slice(x[0], -1, -7, -1, 3))
F(f_select_neg, tg_select(x[0], 1, -1))
F(f_select_1d, tg_select(x[0], 0, 2)) // to a 0-d tensor
F(f_contiguous, tg_contiguous(x[0]))
F(f_clone, tg_clone(x[0]))

/* permute -> slice with step -> reshape; on a transposed (3, 4, 5) the
 * reshape cannot be a view, so it copies. */
static tg_tensor *f_chain(const tg_tensor *const *x, int n, void *user)
{
    (void)n, (void)user;
    tg_tensor *p = tg_permute(x[0], TG_DIMS(2, 0, 1));      // (5, 3, 4)
    tg_tensor *s = tg_slice(p, 0, 1, INT64_MAX, 2);         // (2, 3, 4)
    tg_tensor *r = tg_reshape(s, TG_SHAPE(2, 12));
    tg_release(p);
    tg_release(s);
    return r;
}

/* expand(a) * b with b broadcast too: both gradients are sums. */
static tg_tensor *f_expand_mul(const tg_tensor *const *x, int n, void *user)
{
    (void)n, (void)user;
    tg_tensor *e = tg_expand(x[0], TG_SHAPE(2, 3, 4));
    tg_tensor *out = tg_mul(e, x[1]);
    tg_release(e);
    return out;
}

/* Two overlapping views of one input, added: the gradients accumulate. */
static tg_tensor *f_two_views(const tg_tensor *const *x, int n, void *user)
{
    (void)n, (void)user;
    tg_tensor *a = tg_narrow(x[0], 0, 0, 3);
    tg_tensor *b = tg_slice(x[0], 0, 1, INT64_MAX, 1);
    tg_tensor *out = tg_add(a, b);
    tg_release(a);
    tg_release(b);
    return out;
}

const tg_grad_case tg_grad_cases_view[] = {
    {"view: reshape (2,3,4) to (6,-1)", f_reshape_6_4, 1, {{3, {2, 3, 4}}}},
    {"view: reshape (3,4)T to (12,), a copy", f_reshape_12, 1,
     {{2, {3, 4}, TG_TRANSPOSED}}},
    {"view: reshape (3,4) strided to (12,)", f_reshape_12, 1,
     {{2, {3, 4}, TG_STRIDED}}},
    {"view: reshape 0-d to (1,1)", f_reshape_1_1, 1, {{0, {0}}}},
    {"view: view (2,3,4) as (4,6)", f_view_4_6, 1, {{3, {2, 3, 4}}}},
    {"view: view (3,4) strided as (-1,)", f_view_12, 1,
     {{2, {3, 4}, TG_STRIDED}}},
    {"view: permute (2,3,4) dims (2,0,-2)", f_permute_201, 1,
     {{3, {2, 3, 4}}}},
    {"view: permute (2,3,4)T", f_permute_201, 1,
     {{3, {2, 3, 4}, TG_TRANSPOSED}}},
    {"view: transpose (3,4) dims 0,-1", f_transpose_01, 1, {{2, {3, 4}}}},
    {"view: transpose (3,4) strided", f_transpose_01, 1,
     {{2, {3, 4}, TG_STRIDED}}},
    {"view: transpose 0-d", f_transpose_0d, 1, {{0, {0}}}},
    {"view: squeeze (3,1,4) dim 1", f_squeeze_1, 1, {{3, {3, 1, 4}}}},
    {"view: squeeze (3,1,4) dim 0 (size 3, no-op)", f_squeeze_0, 1,
     {{3, {3, 1, 4}}}},
    {"view: squeeze_all (1,3,1) strided", f_squeeze_all, 1,
     {{3, {1, 3, 1}, TG_STRIDED}}},
    {"view: squeeze_all (1,1) to 0-d", f_squeeze_all, 1, {{2, {1, 1}}}},
    {"view: unsqueeze (3,4)T at -1", f_unsqueeze_m1, 1,
     {{2, {3, 4}, TG_TRANSPOSED}}},
    {"view: unsqueeze (3,4) strided at 1", f_unsqueeze_1, 1,
     {{2, {3, 4}, TG_STRIDED}}},
    {"view: unsqueeze 0-d", f_unsqueeze_0, 1, {{0, {0}}}},
    {"view: expand (3,1) to (2,3,4)", f_expand_2_3_4, 1, {{2, {3, 1}}}},
    {"view: expand (3,4) strided to (2,3,4)", f_expand_2_3_4, 1,
     {{2, {3, 4}, TG_STRIDED}}},
    {"view: expand 0-d to (3,2)", f_expand_3_2, 1, {{0, {0}}}},
    {"view: expand (1,3,4)T with -1", f_expand_keep, 1,
     {{3, {1, 3, 4}, TG_TRANSPOSED}}},
    {"view: broadcast_to (4,) strided to (3,4)", f_broadcast_3_4, 1,
     {{1, {4}, TG_STRIDED}}},
    {"view: broadcast_to (3,1) to (3,4)", f_broadcast_3_4, 1, {{2, {3, 1}}}},
    {"view: narrow (4,5)T dim 1 start -3", f_narrow, 1,
     {{2, {4, 5}, TG_TRANSPOSED}}},
    {"view: slice (10,3) -100:100:3", f_slice_clamped, 1, {{2, {10, 3}}}},
    {"view: slice (3,8) strided -7:-1:3", f_slice_neg, 1,
     {{2, {3, 8}, TG_STRIDED}}},
    {"view: select (3,4)T dim 1 index -1", f_select_neg, 1,
     {{2, {3, 4}, TG_TRANSPOSED}}},
    {"view: select (5,) index 2 to 0-d", f_select_1d, 1, {{1, {5}}}},
    {"view: contiguous (3,4)T", f_contiguous, 1,
     {{2, {3, 4}, TG_TRANSPOSED}}},
    {"view: contiguous (3,4), x itself", f_contiguous, 1, {{2, {3, 4}}}},
    {"view: clone (2,3,4) strided", f_clone, 1,
     {{3, {2, 3, 4}, TG_STRIDED}}},
    {"view: permute, slice step 2, reshape (3,4,5)T", f_chain, 1,
     {{3, {3, 4, 5}, TG_TRANSPOSED}}},
    {"view: expand (3,1) then mul by (4,)", f_expand_mul, 2,
     {{2, {3, 1}}, {1, {4}, TG_STRIDED}}},
    {"view: narrow + slice of one (4,3), added", f_two_views, 1,
     {{2, {4, 3}, TG_TRANSPOSED}}},
};
const size_t tg_grad_cases_view_count =
    sizeof tg_grad_cases_view / sizeof *tg_grad_cases_view;
