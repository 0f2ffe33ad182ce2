/*
 * tests/autograd/test_grad_view.c - the backward of the view ops (view.c)
 * and the copy ops (copy.c).
 *
 * What is checked: gradients through each op and through chains of them
 * against NumPy (scripts/reference/gen_grad_view.py), in float64 and
 * float32, on non-contiguous inputs; the grad_fn names (PyTorch 1.13's);
 * that each op records exactly one node, and none when it hands back x
 * itself; that two views of one tensor accumulate; 0-d and 0-size cases;
 * and that a tensor saved through a view is still guarded by the version
 * check of the storage it shares.
 *
 * Tolerances: a view's backward only moves values (or writes zeros), so
 * those gradients are compared exactly (rtol = atol = 0), float32 included.
 * Only expand-then-mul does arithmetic (products, then sums over the
 * expanded dims); see expand_mul below.
 */
#include "../common.h"

#include <stdint.h>

/* ----------------------------------------------------------------- helpers */

/* The same values as t in a non-contiguous layout: the last two dims
 * swapped in memory (a transpose of a contiguous transpose). */
static tg_tensor *transposed_layout(const tg_tensor *t)
{
    tg_tensor *tt = tg_transpose(t, -1, -2);
    tg_tensor *c = tg_contiguous(tt);
    tg_tensor *out = tg_transpose(c, -1, -2);
    tg_release(tt);
    tg_release(c);
    cr_assert(out && !tg_is_contiguous(out));
    return out;
}

/* Reference `name` as a leaf that requires grad, optionally laid out
 * transposed in memory. */
static tg_tensor *leaf(const char *name, bool transposed)
{
    tg_tensor *r = tg_test_load_ref(name);
    tg_tensor *x = r;
    if (transposed) {
        x = transposed_layout(r);
        tg_release(r);
    }
    cr_assert_eq(tg_set_requires_grad(x, true), 0, "%s", tg_last_error());
    return x;
}

/* Backpropagates reference `gname` (dL/dout) from out. */
static void backward_ref(tg_tensor *out, const char *gname)
{
    cr_assert_not_null(out, "%s", tg_last_error());
    tg_tensor *g = tg_test_load_ref(gname);
    int rc = tg_backward_ex(out, &(tg_backward_options){.grad = g});
    tg_release(g);
    cr_assert_eq(rc, 0, "backward failed: %s", tg_last_error());
}

/* Asserts x->grad equals reference `name` within the tolerances. */
static void check_grad(const tg_tensor *x, const char *name, double rtol,
                       double atol)
{
    cr_assert_not_null(x->grad, "no gradient for %s", name);
    tg_test_check_ref(tg_retain(x->grad), name, rtol, atol);
}

static void check_name(const tg_tensor *t, const char *want)
{
    const char *got = tg_grad_fn_name(t);
    cr_assert(got && strcmp(got, want) == 0, "grad_fn %s, expected %s",
              got ? got : "(none)", want);
}

/* ------------------------------------------------------- NumPy references */

/* permute -> slice with step 2 -> reshape on a base laid out transposed:
 * the reshape has to copy (UnsafeViewBackward0). dx is g scattered back
 * into the picked rows of the permuted zeros. */
static void chain(const char *dt)
{
    char xn[64], gn[64], dxn[64];
    snprintf(xn, sizeof xn, "grad_view_chain_x_%s", dt);
    snprintf(gn, sizeof gn, "grad_view_chain_g_%s", dt);
    snprintf(dxn, sizeof dxn, "grad_view_chain_dx_%s", dt);
    tg_tensor *x = leaf(xn, true);                      // (3, 4, 5)
    tg_tensor *p = tg_permute(x, TG_DIMS(2, 0, 1));     // (5, 3, 4)
    tg_tensor *s = tg_slice(p, 0, 1, INT64_MAX, 2);     // (2, 3, 4)
    tg_tensor *r = tg_reshape(s, TG_SHAPE(2, 12));
    cr_assert_not_null(r, "%s", tg_last_error());
    cr_assert(r->storage != x->storage, "the reshape should have copied");
    check_name(p, "PermuteBackward0");
    check_name(s, "SliceBackward0");
    check_name(r, "UnsafeViewBackward0");
    cr_assert_eq(tg_tape_size(), 3);
    backward_ref(r, gn);
    check_grad(x, dxn, 0, 0);
    tg_release(r);
    tg_release(s);
    tg_release(p);
    tg_release(x);
    cr_assert_eq(tg_tape_size(), 0);
}

TG_TEST(grad_view, chain_permute_slice_reshape_f64) { chain("f64"); }
TG_TEST(grad_view, chain_permute_slice_reshape_f32) { chain("f32"); }

/* out = expand(x, (2, 3, 4)) * w, w (4,): dx sums g * w over dims 0 and 2,
 * dw sums g * x over dims 0 and 1. Exact in float64 up to the order of
 * the additions (rtol 1e-12). In float32 the products are rounded to
 * float32 on both sides and the sums accumulate in double before one final
 * rounding, so the results differ by at most one float32 ulp (1.2e-7
 * relative): rtol 1e-6, plus atol 1e-6 in case a sum cancels to near 0. */
static void expand_mul(const char *dt, double rtol, double atol)
{
    char n[5][64];
    const char *part[5] = {"x", "w", "g", "dx", "dw"};
    for (int i = 0; i < 5; i++)
        snprintf(n[i], sizeof n[i], "grad_view_expand_mul_%s_%s", part[i],
                 dt);
    tg_tensor *x = leaf(n[0], false); // (3, 1)
    tg_tensor *w = leaf(n[1], false); // (4,)
    tg_tensor *e = tg_expand(x, TG_SHAPE(2, 3, 4));
    check_name(e, "ExpandBackward0");
    tg_tensor *out = tg_mul(e, w);
    backward_ref(out, n[2]);
    check_grad(x, n[3], rtol, atol);
    check_grad(w, n[4], rtol, atol);
    tg_release(out);
    tg_release(e);
    tg_release(w);
    tg_release(x);
    cr_assert_eq(tg_tape_size(), 0);
}

TG_TEST(grad_view, expand_then_mul_sums_f64) { expand_mul("f64", 1e-12, 0); }
TG_TEST(grad_view, expand_then_mul_sums_f32) { expand_mul("f32", 1e-6, 1e-6); }

TG_TEST(grad_view, select_negative_index)
{
    tg_tensor *x = leaf("grad_view_select_x", true); // (3, 4, 5)
    tg_tensor *y = tg_select(x, 1, -2);              // (3, 5)
    check_name(y, "SelectBackward0");
    backward_ref(y, "grad_view_select_g");
    check_grad(x, "grad_view_select_dx", 0, 0);
    tg_release(y);
    tg_release(x);
    cr_assert_eq(tg_tape_size(), 0);
}

/* The comparison above can fail: the same g written into index -1 (the
 * region an off-by-one would pick) is rejected. */
TG_TEST(grad_view, reference_compare_rejects_a_wrong_region)
{
    tg_tensor *x = leaf("grad_view_select_x", false);
    tg_tensor *y = tg_select(x, 1, -1);
    backward_ref(y, "grad_view_select_g");
    tg_tensor *want = tg_test_load_ref("grad_view_select_dx");
    tg_tensor *wrong = tg_test_load_ref("grad_view_select_last_dx");
    char report[512];
    cr_assert_not(tg_test_close(x->grad, want, 0, 0, true, report,
                                sizeof report));
    tg_assert_close(x->grad, wrong, 0, 0);
    tg_release(wrong);
    tg_release(want);
    tg_release(y);
    tg_release(x);
}

/* x[-100:100:3][:, -5:-1:3]: clamped bounds, negative bounds, step 3. */
TG_TEST(grad_view, slice_step_3_clamped_and_negative_bounds)
{
    tg_tensor *x = leaf("grad_view_slice_x", true); // (10, 7)
    tg_tensor *a = tg_slice(x, 0, -100, 100, 3);     // rows 0, 3, 6, 9
    tg_tensor *b = tg_slice(a, 1, -5, -1, 3);        // cols 2, 5
    cr_assert_eq(b->shape[0], 4);
    cr_assert_eq(b->shape[1], 2);
    backward_ref(b, "grad_view_slice_g");
    check_grad(x, "grad_view_slice_dx", 0, 0);
    tg_release(b);
    tg_release(a);
    tg_release(x);
    cr_assert_eq(tg_tape_size(), 0);
}

TG_TEST(grad_view, narrow_negative_start)
{
    tg_tensor *x = leaf("grad_view_narrow_x", false); // (4, 6)
    tg_tensor *y = tg_narrow(x, 1, -4, 3);            // columns 2..4
    check_name(y, "SliceBackward0");
    backward_ref(y, "grad_view_narrow_g");
    check_grad(x, "grad_view_narrow_dx", 0, 0);
    tg_release(y);
    tg_release(x);
}

TG_TEST(grad_view, squeeze_a_size_one_dim)
{
    tg_tensor *x = leaf("grad_view_squeeze_x", false); // (3, 1, 4)
    tg_tensor *y = tg_squeeze(x, 1);                   // (3, 4)
    cr_assert_eq(y->ndim, 2);
    check_name(y, "SqueezeBackward1");
    backward_ref(y, "grad_view_squeeze_g");
    check_grad(x, "grad_view_squeeze_dx", 0, 0);
    tg_release(y);
    tg_release(x);
}

/* squeeze of a dim that is not size 1 changes nothing, and its gradient is
 * g itself. */
TG_TEST(grad_view, squeeze_of_a_bigger_dim_passes_g)
{
    tg_tensor *x = leaf("grad_view_squeeze_x", false); // (3, 1, 4)
    tg_tensor *y = tg_squeeze(x, 0);
    cr_assert_eq(y->ndim, 3);
    check_name(y, "SqueezeBackward1");
    tg_tensor *g = tg_test_load_ref("grad_view_squeeze_dx"); // any (3,1,4)
    cr_assert_eq(tg_backward_ex(y, &(tg_backward_options){.grad = g}), 0);
    tg_assert_close(x->grad, g, 0, 0);
    tg_release(g);
    tg_release(y);
    tg_release(x);
}

/* A reshape that has to copy is still differentiable, with one node. */
TG_TEST(grad_view, reshape_copy_path_is_differentiable)
{
    tg_tensor *x = leaf("grad_view_reshape_copy_x", true); // (4, 3)T
    tg_tensor *y = tg_reshape(x, TG_SHAPE(12));
    cr_assert(y->storage != x->storage);
    check_name(y, "UnsafeViewBackward0");
    cr_assert_eq(tg_tape_size(), 1);
    backward_ref(y, "grad_view_reshape_copy_g");
    check_grad(x, "grad_view_reshape_copy_dx", 0, 0);
    tg_release(y);
    tg_release(x);
}

/* unsqueeze -> broadcast_to -> transpose -> contiguous -> view. */
TG_TEST(grad_view, chain_unsqueeze_broadcast_transpose_contiguous_view)
{
    tg_tensor *x = leaf("grad_view_chain2_x", false);     // (2, 3)
    tg_tensor *u = tg_unsqueeze(x, 0);                    // (1, 2, 3)
    tg_tensor *b = tg_broadcast_to(u, TG_SHAPE(4, 2, 3));
    tg_tensor *t = tg_transpose(b, 0, 2);                 // (3, 2, 4)
    tg_tensor *c = tg_contiguous(t);
    tg_tensor *v = tg_view(c, TG_SHAPE(6, 4));
    check_name(u, "UnsqueezeBackward0");
    check_name(b, "ExpandBackward0");
    check_name(t, "TransposeBackward0");
    check_name(c, "CloneBackward0");
    check_name(v, "ViewBackward0");
    cr_assert_eq(tg_tape_size(), 5);
    backward_ref(v, "grad_view_chain2_g");
    /* A sum of 4 float64 values per element: exact but for the order. */
    check_grad(x, "grad_view_chain2_dx", 1e-12, 0);
    tg_tensor *all[] = {v, c, t, b, u, x};
    for (size_t i = 0; i < sizeof all / sizeof *all; i++)
        tg_release(all[i]);
    cr_assert_eq(tg_tape_size(), 0);
}

/* The gradient of a dtype conversion comes back in the input's dtype: a
 * float32 g becomes float64 exactly; a float64 g is rounded to float32. */
TG_TEST(grad_view, to_dtype_casts_the_gradient_back)
{
    const char *dts[] = {"f32", "f64"};
    tg_dtype to[] = {TG_FLOAT32, TG_FLOAT64};
    tg_dtype from[] = {TG_FLOAT64, TG_FLOAT32};
    for (int i = 0; i < 2; i++) {
        char xn[64], gn[64], dxn[64];
        snprintf(xn, sizeof xn, "grad_view_to_%s_x", dts[i]);
        snprintf(gn, sizeof gn, "grad_view_to_%s_g", dts[i]);
        snprintf(dxn, sizeof dxn, "grad_view_to_%s_dx", dts[i]);
        tg_tensor *x = leaf(xn, true);
        tg_tensor *y = tg_to_dtype(x, to[i]);
        cr_assert_eq(y->dtype, to[i]);
        check_name(y, "ToCopyBackward0");
        backward_ref(y, gn);
        cr_assert_eq(x->grad->dtype, from[i]);
        check_grad(x, dxn, 0, 0);
        tg_release(y);
        tg_release(x);
    }
}

/* ----------------------------------------------------- names, one node */

/* 0, 1, 2, ... in the given shape, as a leaf that requires grad. */
static tg_tensor *param_arange(const int64_t *shape, int ndim)
{
    int64_t numel = 1;
    for (int d = 0; d < ndim; d++)
        numel *= shape[d];
    tg_tensor *a = tg_arange(0, (double)numel, 1, TG_FLOAT64);
    tg_tensor *x = tg_reshape(a, shape, ndim); // a view: no grad yet
    tg_release(a);
    tg_tensor *c = tg_clone(x);
    tg_release(x);
    cr_assert_eq(tg_set_requires_grad(c, true), 0);
    return c;
}

/* Each op on a leaf records exactly one node with PyTorch 1.13's name
 * (checked with torch: e.g. x.narrow(1, 0, 2).grad_fn is SliceBackward0,
 * torch.broadcast_to gives ExpandBackward0, a reshape that views gives
 * ReshapeAliasBackward0). The ops built on another (narrow on the slice
 * region, broadcast_to on expand's layout code) record one node too. */
TG_TEST(grad_view, grad_fn_names_one_node_each)
{
    tg_tensor *x = param_arange(TG_SHAPE(2, 3, 4));
    tg_tensor *x1 = param_arange(TG_SHAPE(2, 1, 12)); // has a size-1 dim
    tg_tensor *xt = tg_transpose(x, 0, 2);            // (4, 3, 2), 1 node
    tg_tensor *out[] = {
        tg_reshape(x, TG_SHAPE(6, 4)),
        tg_view(x, TG_SHAPE(4, 6)),
        tg_permute(x, TG_DIMS(2, 0, 1)),
        tg_transpose(x, 0, 1),
        tg_squeeze(x1, 1),
        tg_squeeze_all(x1),
        tg_unsqueeze(x, 0),
        tg_expand(x1, TG_SHAPE(2, 5, 12)),
        tg_broadcast_to(x1, TG_SHAPE(3, 2, 5, 12)),
        tg_narrow(x, 1, 0, 2),
        tg_slice(x, 2, 0, 4, 2),
        tg_select(x, 1, -1),
        tg_contiguous(xt), // not contiguous: a copy
        tg_clone(x),
        tg_to_dtype(x, TG_FLOAT32),
    };
    const char *names[] = {
        "ReshapeAliasBackward0", "ViewBackward0",     "PermuteBackward0",
        "TransposeBackward0",    "SqueezeBackward1",  "SqueezeBackward0",
        "UnsqueezeBackward0",    "ExpandBackward0",   "ExpandBackward0",
        "SliceBackward0",        "SliceBackward0",    "SelectBackward0",
        "CloneBackward0",        "CloneBackward0",    "ToCopyBackward0",
    };
    size_t n = sizeof out / sizeof *out;
    cr_assert_eq(n, sizeof names / sizeof *names);
    for (size_t i = 0; i < n; i++) {
        cr_assert_not_null(out[i], "op %zu: %s", i, tg_last_error());
        check_name(out[i], names[i]);
        cr_assert(out[i]->requires_grad);
    }
    /* One node per op, plus xt's. */
    cr_assert_eq(tg_tape_size(), (int64_t)n + 1);
    for (size_t i = 0; i < n; i++)
        tg_release(out[i]);
    tg_release(xt);
    tg_release(x1);
    tg_release(x);
    cr_assert_eq(tg_tape_size(), 0);
}

/* 0-d inputs: reshape, transpose, permute, unsqueeze, expand of a scalar
 * and squeeze_all down to one (names as torch gives them). */
TG_TEST(grad_view, grad_fn_names_of_0d_views)
{
    tg_tensor *s = tg_scalar(2.0, TG_FLOAT64);
    tg_set_requires_grad(s, true);
    tg_tensor *one = tg_reshape(s, TG_SHAPE(1, 1));
    tg_tensor *out[] = {
        tg_transpose(s, 0, -1),     tg_permute(s, NULL, 0),
        tg_unsqueeze(s, 0),         tg_expand(s, TG_SHAPE(3)),
        tg_squeeze_all(one),
    };
    const char *names[] = {"TransposeBackward0", "PermuteBackward0",
                           "UnsqueezeBackward0", "ExpandBackward0",
                           "SqueezeBackward0"};
    check_name(one, "ReshapeAliasBackward0");
    for (size_t i = 0; i < sizeof out / sizeof *out; i++) {
        cr_assert_not_null(out[i], "op %zu: %s", i, tg_last_error());
        check_name(out[i], names[i]);
        tg_release(out[i]);
    }
    tg_release(one);
    tg_release(s);
    cr_assert_eq(tg_tape_size(), 0);
}

/* When the op hands back x itself (contiguous of a contiguous tensor,
 * to_dtype to x's dtype) nothing is recorded, as in PyTorch
 * (x.contiguous() is x): a leaf stays a leaf, a non-leaf keeps its node.
 * An int64 result is not differentiable. */
TG_TEST(grad_view, copies_that_return_x_record_nothing)
{
    tg_tensor *x = param_arange(TG_SHAPE(2, 3));
    tg_tensor *c = tg_contiguous(x);
    tg_tensor *d = tg_to_dtype(x, TG_FLOAT64);
    cr_assert_eq(c, x);
    cr_assert_eq(d, x);
    cr_assert(tg_is_leaf(x));
    cr_assert_eq(tg_tape_size(), 0);
    tg_tensor *y = tg_clone(x);
    tg_tensor *yc = tg_contiguous(y);
    cr_assert_eq(yc, y);
    check_name(yc, "CloneBackward0");
    cr_assert_eq(tg_tape_size(), 1);
    tg_tensor *i = tg_to_dtype(x, TG_INT64);
    cr_assert_not(i->requires_grad);
    cr_assert_null(tg_grad_fn_name(i));
    cr_assert_eq(tg_tape_size(), 1);
    tg_release(i);
    tg_release(yc);
    tg_release(y);
    tg_release(d);
    tg_release(c);
    tg_release(x);
    cr_assert_eq(tg_tape_size(), 0);
}

TG_TEST(grad_view, no_grad_records_nothing)
{
    tg_tensor *x = param_arange(TG_SHAPE(2, 3, 4));
    tg_no_grad_begin();
    tg_tensor *y = tg_slice(x, 1, 0, 3, 2);
    tg_tensor *t = tg_transpose(y, 0, 1);
    tg_tensor *z = tg_reshape(t, TG_SHAPE(-1)); // a copy
    tg_no_grad_end();
    cr_assert_not(t->requires_grad);
    cr_assert_not(y->requires_grad);
    cr_assert_not(z->requires_grad);
    cr_assert_eq(tg_tape_size(), 0);
    tg_release(z);
    tg_release(t);
    tg_release(y);
    tg_release(x);
}

/* ----------------------------------------------------- accumulate, edges */

/* Two overlapping views of x, added: dx = g_a in rows 0..2, plus g_b in
 * rows 1..3 (the engine adds the two contributions). */
TG_TEST(grad_view, two_views_of_one_tensor_accumulate)
{
    tg_tensor *x = param_arange(TG_SHAPE(4, 2));
    tg_tensor *a = tg_narrow(x, 0, 0, 3);
    tg_tensor *b = tg_slice(x, 0, 1, INT64_MAX, 1);
    tg_tensor *s = tg_add(a, b);
    tg_tensor *g = tg_ones_like(s);
    cr_assert_eq(tg_backward_ex(s, &(tg_backward_options){.grad = g}), 0);
    tg_tensor *want = tg_from_array((double[]){1, 1, 2, 2, 2, 2, 1, 1},
                                    TG_SHAPE(4, 2), TG_FLOAT64);
    tg_assert_close(x->grad, want, 0, 0);
    /* A second forward and backward adds into x->grad (+=). */
    tg_tensor *y = tg_select(x, 0, -1);
    tg_tensor *gy = tg_ones_like(y);
    cr_assert_eq(tg_backward_ex(y, &(tg_backward_options){.grad = gy}), 0);
    tg_tensor *want2 = tg_from_array((double[]){1, 1, 2, 2, 2, 2, 2, 2},
                                     TG_SHAPE(4, 2), TG_FLOAT64);
    tg_assert_close(x->grad, want2, 0, 0);
    tg_tensor *all[] = {want2, gy, y, want, g, s, b, a, x};
    for (size_t i = 0; i < sizeof all / sizeof *all; i++)
        tg_release(all[i]);
    cr_assert_eq(tg_tape_size(), 0);
}

/* expand of a 0-d tensor: dx is the sum of all of g. select down to a 0-d
 * tensor: dx is zero but at the index. */
TG_TEST(grad_view, scalar_expand_and_select_to_0d)
{
    tg_tensor *s = tg_scalar(1.5, TG_FLOAT64);
    tg_set_requires_grad(s, true);
    tg_tensor *e = tg_expand(s, TG_SHAPE(2, 3));
    tg_tensor *g = tg_from_array((double[]){1, 2, 3, 4, 5, 6},
                                 TG_SHAPE(2, 3), TG_FLOAT64);
    cr_assert_eq(tg_backward_ex(e, &(tg_backward_options){.grad = g}), 0);
    cr_assert_eq(s->grad->ndim, 0);
    cr_assert_eq(tg_item(s->grad), 21);

    tg_tensor *v = param_arange(TG_SHAPE(4));
    tg_tensor *p = tg_select(v, 0, -3);
    cr_assert_eq(p->ndim, 0);
    tg_tensor *gp = tg_scalar(7, TG_FLOAT64);
    cr_assert_eq(tg_backward_ex(p, &(tg_backward_options){.grad = gp}), 0);
    tg_tensor *want = tg_from_array((double[]){0, 7, 0, 0}, TG_SHAPE(4),
                                    TG_FLOAT64);
    tg_assert_close(v->grad, want, 0, 0);
    tg_tensor *all[] = {want, gp, p, v, g, e, s};
    for (size_t i = 0; i < sizeof all / sizeof *all; i++)
        tg_release(all[i]);
    cr_assert_eq(tg_tape_size(), 0);
}

/* 0-size results: a narrow of length 0 and an expand to 0 rows give
 * all-zero gradients of the input's shape. */
TG_TEST(grad_view, empty_views_give_zero_gradients)
{
    tg_tensor *x = param_arange(TG_SHAPE(2, 3));
    tg_tensor *n = tg_narrow(x, 1, 3, 0); // (2, 0)
    tg_tensor *gn = tg_zeros(TG_SHAPE(2, 0), TG_FLOAT64);
    cr_assert_eq(tg_backward_ex(n, &(tg_backward_options){.grad = gn}), 0,
                 "%s", tg_last_error());
    tg_tensor *zeros = tg_zeros(TG_SHAPE(2, 3), TG_FLOAT64);
    tg_assert_close(x->grad, zeros, 0, 0);

    tg_tensor *r = param_arange(TG_SHAPE(1, 3));
    tg_tensor *e = tg_expand(r, TG_SHAPE(0, 3));
    tg_tensor *ge = tg_zeros(TG_SHAPE(0, 3), TG_FLOAT64);
    cr_assert_eq(tg_backward_ex(e, &(tg_backward_options){.grad = ge}), 0,
                 "%s", tg_last_error());
    tg_tensor *zeros13 = tg_zeros(TG_SHAPE(1, 3), TG_FLOAT64);
    tg_assert_close(r->grad, zeros13, 0, 0);
    tg_tensor *all[] = {zeros13, ge, e, r, zeros, gn, n, x};
    for (size_t i = 0; i < sizeof all / sizeof *all; i++)
        tg_release(all[i]);
    cr_assert_eq(tg_tape_size(), 0);
}

/* A view shares its input's storage, and the version counter is per
 * storage: mul saved expand(x) (an alias of x's storage), so writing into x
 * after the forward is caught at backward. */
TG_TEST(grad_view, write_to_the_base_of_a_saved_view_is_caught)
{
    tg_tensor *x = param_arange(TG_SHAPE(3, 1));
    tg_tensor *w = param_arange(TG_SHAPE(4));
    tg_tensor *e = tg_expand(x, TG_SHAPE(3, 4));
    tg_tensor *y = tg_mul(e, w);
    tg_tensor *g = tg_ones_like(y);
    tg_no_grad_begin(); // in-place writes into the graph only here
    cr_assert_eq(tg_fill_(x, 5.0), 0);
    tg_no_grad_end();
    cr_assert_eq(tg_backward_ex(y, &(tg_backward_options){.grad = g}), -1);
    tg_assert_error("tg_backward", "MulBackward0", "modified in place");
    tg_tensor *all[] = {g, y, e, w, x};
    for (size_t i = 0; i < sizeof all / sizeof *all; i++)
        tg_release(all[i]);
    cr_assert_eq(tg_tape_size(), 0);
}
