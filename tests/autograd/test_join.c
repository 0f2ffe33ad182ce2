/*
 * tests/autograd/test_join.c - cat, stack, split, split_sizes, chunk
 * (join.c) and max / min along a dim with indices (max_dim.c), forward and
 * backward.
 *
 * What is checked: values and gradients against NumPy
 * (scripts/reference/gen_join.py) on contiguous and non-contiguous
 * inputs; the rules taken from PyTorch 1.13 (each checked there by hand):
 * dtype promotion, the (0,) tensors cat leaves out, how many pieces split
 * and chunk make, the first index on ties and the first NaN for max / min
 * along a dim, the grad_fn names; that the pieces are views of x; that
 * the reference check fails on a wrong gradient; no recording under
 * no_grad. The error messages are in tests/errors/catalogue_ops.c, the
 * gradchecks in grad_cases_join.c.
 *
 * Tolerances: these ops only move values, so everything is compared
 * exactly (rtol = atol = 0).
 */
#include "../common.h"

#include <math.h>
#include <stdint.h>

/* ----------------------------------------------------------------- helpers */

/* Reference `name` as a leaf that requires grad, laid out non-contiguous
 * when asked (transposed in memory, or every other element). */
static tg_tensor *leaf(const char *name, bool non_contiguous)
{
    tg_tensor *r = tg_test_load_ref(name);
    tg_tensor *x = r;
    if (non_contiguous) {
        x = tg_test_non_contiguous(r, false);
        tg_release(r);
        cr_assert(x && !tg_is_contiguous(x));
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

static void check_grad(const tg_tensor *x, const char *name)
{
    cr_assert_not_null(x->grad, "no gradient for %s", name);
    tg_test_check_ref(tg_retain(x->grad), name, 0, 0);
}

static void check_name(const tg_tensor *t, const char *want)
{
    const char *got = tg_grad_fn_name(t);
    cr_assert(got && strcmp(got, want) == 0, "grad_fn %s, expected %s",
              got ? got : "(none)", want);
}

/* Asserts t holds exactly the given values (C order) and shape. */
static void check_values(const tg_tensor *t, const int64_t *shape, int ndim,
                         const double *want)
{
    cr_assert_not_null(t, "%s", tg_last_error());
    cr_assert_eq(t->ndim, ndim);
    for (int d = 0; d < ndim; d++)
        cr_assert_eq(t->shape[d], shape[d], "dim %d: %lld != %lld", d,
                     (long long)t->shape[d], (long long)shape[d]);
    double got[64];
    cr_assert(t->numel <= 64);
    cr_assert_eq(tg_to_f64_array(t, got), 0);
    for (int64_t i = 0; i < t->numel; i++)
        cr_assert(got[i] == want[i] || (isnan(got[i]) && isnan(want[i])),
                  "element %lld: %g != %g", (long long)i, got[i], want[i]);
}

/* --------------------------------------------------------------------- cat */

/* cat on a middle dim, inputs in three layouts; each input's gradient is
 * its block of g. */
static void cat_reference(bool non_contiguous)
{
    tg_tensor *x[3] = {leaf("join_cat_x0", false),
                       leaf("join_cat_x1", non_contiguous),
                       leaf("join_cat_x2", non_contiguous)};
    tg_tensor *out = tg_cat((const tg_tensor *const *)x, 3, 1);
    cr_assert_not_null(out, "%s", tg_last_error());
    check_name(out, "CatBackward0");
    tg_test_check_ref(tg_retain(out), "join_cat_out", 0, 0);
    backward_ref(out, "join_cat_g");
    check_grad(x[0], "join_cat_dx0");
    check_grad(x[1], "join_cat_dx1");
    check_grad(x[2], "join_cat_dx2");
    tg_release(out);
    for (int i = 0; i < 3; i++)
        tg_release(x[i]);
}

TG_TEST(join, cat_matches_numpy) { cat_reference(false); }
TG_TEST(join, cat_matches_numpy_non_contiguous) { cat_reference(true); }

/* float32 next to float64 gives float64 (torch.cat promotes since 1.5);
 * the float32 input's gradient comes back float32. */
TG_TEST(join, cat_promotes_and_converts_the_gradient_back)
{
    tg_tensor *a = leaf("join_cat_mixed_a", true);
    tg_tensor *b = leaf("join_cat_mixed_b", false);
    const tg_tensor *parts[] = {a, b};
    tg_tensor *out = tg_cat(parts, 2, -1);
    cr_assert_not_null(out, "%s", tg_last_error());
    cr_assert_eq(out->dtype, TG_FLOAT64);
    tg_test_check_ref(tg_retain(out), "join_cat_mixed_out", 0, 0);
    backward_ref(out, "join_cat_mixed_g");
    cr_assert_eq(a->grad->dtype, TG_FLOAT32);
    check_grad(a, "join_cat_mixed_da");
    check_grad(b, "join_cat_mixed_db");
    tg_release(out);
    tg_release(a);
    tg_release(b);
}

/* The reference check can fail: a's gradient taken from the wrong block
 * of g (the last two columns instead of the first two) is caught. */
TG_TEST(join, cat_reference_catches_a_block_from_the_wrong_place)
{
    tg_tensor *a = leaf("join_cat_mixed_a", false);
    tg_tensor *b = leaf("join_cat_mixed_b", false);
    const tg_tensor *parts[] = {a, b};
    tg_tensor *out = tg_cat(parts, 2, -1);
    backward_ref(out, "join_cat_mixed_g");
    tg_tensor *wrong = tg_test_load_ref("join_cat_mixed_wrong_da");
    char report[512];
    cr_assert_not(tg_test_close(a->grad, wrong, 0, 0, true, report,
                                sizeof report));
    tg_release(wrong);
    tg_release(out);
    tg_release(a);
    tg_release(b);
}

TG_TEST(join, cat_int64_is_exact_and_not_recorded)
{
    tg_tensor *a = tg_test_load_ref("join_cat_i64_a");
    tg_tensor *b = tg_test_load_ref("join_cat_i64_b");
    const tg_tensor *parts[] = {a, b};
    tg_tensor *out = tg_cat(parts, 2, 0);
    cr_assert_not_null(out, "%s", tg_last_error());
    cr_assert_null(tg_grad_fn_name(out));
    tg_test_check_ref(out, "join_cat_i64_out", 0, 0);
    /* int64 next to float32 gives float32 (torch.cat([long, float])) */
    tg_tensor *f = tg_ones(TG_SHAPE(1, 2), TG_FLOAT32);
    const tg_tensor *mixed[] = {a, f};
    tg_tensor *m = tg_cat(mixed, 2, 0);
    cr_assert_eq(m->dtype, TG_FLOAT32);
    tg_release(m);
    tg_release(f);
    tg_release(a);
    tg_release(b);
}

/* PyTorch 1.13 leaves a (0,) tensor out of cat whatever the other shapes
 * are (torch.cat([torch.empty(0), a], 1) is a); it still takes part in
 * the dtype (a (0,) float64 makes the result float64), and its gradient
 * is an empty tensor. */
TG_TEST(join, cat_leaves_out_empty_1d_tensors)
{
    tg_tensor *a = tg_arange(0, 6, 1, TG_FLOAT32);
    tg_set_requires_grad(a, true);
    tg_tensor *a23 = tg_reshape(a, TG_SHAPE(2, 3));
    tg_tensor *e = tg_zeros(TG_SHAPE(0), TG_FLOAT64);
    tg_set_requires_grad(e, true);
    const tg_tensor *parts[] = {e, a23, e};
    tg_tensor *out = tg_cat(parts, 3, 1);
    check_values(out, TG_SHAPE(2, 3), (double[]){0, 1, 2, 3, 4, 5});
    cr_assert_eq(out->dtype, TG_FLOAT64);
    tg_tensor *loss = tg_sum(out, NULL, 0, false);
    cr_assert_eq(tg_backward(loss), 0, "%s", tg_last_error());
    cr_assert(e->grad && e->grad->ndim == 1 && e->grad->shape[0] == 0);
    check_values(a->grad, TG_SHAPE(6), (double[]){1, 1, 1, 1, 1, 1});
    /* dim counts in a23's dims: -1 is its last */
    tg_tensor *last = tg_cat(parts, 3, -1);
    check_values(last, TG_SHAPE(2, 3), (double[]){0, 1, 2, 3, 4, 5});
    /* a (0,) tensor next to a (0, 3) one: (0, 3) */
    tg_tensor *z = tg_zeros(TG_SHAPE(0, 3), TG_FLOAT32);
    const tg_tensor *ez[] = {e, z};
    tg_tensor *out0 = tg_cat(ez, 2, 0);
    check_values(out0, TG_SHAPE(0, 3), NULL);
    /* only (0,) tensors: (0,), with dim counted in a (0,) tensor's one
     * dim (PyTorch accepts any dim there; tapegrad refuses dim 1) */
    const tg_tensor *ee[] = {e, e};
    tg_tensor *empty = tg_cat(ee, 2, -1);
    check_values(empty, TG_SHAPE(0), NULL);
    cr_assert_null(tg_cat(ee, 2, 1));
    tg_assert_error("tg_cat: dim 1 is out of range for a tensor with 1 dim");
    tg_release(empty);
    tg_release(out0);
    tg_release(z);
    tg_release(last);
    tg_release(loss);
    tg_release(out);
    tg_release(e);
    tg_release(a23);
    tg_release(a);
}

/* More inputs than TG_MAX_INPUTS: one node, each input's gradient its
 * column of g. */
TG_TEST(join, cat_of_many_tensors)
{
    enum { N = 20 };
    tg_tensor *x[N];
    for (int i = 0; i < N; i++) {
        x[i] = tg_full(TG_SHAPE(2, 1), (double)i, TG_FLOAT64);
        tg_set_requires_grad(x[i], true);
    }
    tg_tensor *out = tg_cat((const tg_tensor *const *)x, N, 1);
    cr_assert_not_null(out, "%s", tg_last_error());
    cr_assert_eq(tg_tape_size(), 1);
    tg_tensor *w = tg_arange(0, 2 * N, 1, TG_FLOAT64);
    tg_tensor *w2 = tg_reshape(w, TG_SHAPE(2, N));
    tg_tensor *p = tg_mul(out, w2);
    tg_tensor *loss = tg_sum(p, NULL, 0, false);
    cr_assert_eq(tg_backward(loss), 0, "%s", tg_last_error());
    for (int i = 0; i < N; i++)
        check_values(x[i]->grad, TG_SHAPE(2, 1),
                     (double[]){(double)i, (double)(N + i)});
    tg_release(loss);
    tg_release(p);
    tg_release(w2);
    tg_release(w);
    tg_release(out);
    for (int i = 0; i < N; i++)
        tg_release(x[i]);
}

TG_TEST(join, nothing_recorded_under_no_grad)
{
    tg_tensor *a = tg_ones(TG_SHAPE(2, 3), TG_FLOAT32);
    tg_set_requires_grad(a, true);
    const tg_tensor *parts[] = {a, a};
    tg_no_grad_begin();
    tg_tensor *c = tg_cat(parts, 2, 0);
    tg_tensor *s = tg_stack(parts, 2, 0);
    tg_tensor *pieces[3];
    int n = tg_split(a, 1, -1, pieces, 3);
    tg_tensor *m = tg_max_dim(a, 0, false, NULL);
    tg_no_grad_end();
    cr_assert_eq(n, 3);
    cr_assert(!c->requires_grad && !s->requires_grad && !m->requires_grad);
    for (int j = 0; j < n; j++) {
        cr_assert(!pieces[j]->requires_grad);
        tg_release(pieces[j]);
    }
    cr_assert_eq(tg_tape_size(), 0);
    tg_release(m);
    tg_release(s);
    tg_release(c);
    tg_release(a);
}

/* ------------------------------------------------------------------- stack */

static void stack_reference(bool non_contiguous)
{
    tg_tensor *x[3] = {leaf("join_stack_x0", non_contiguous),
                       leaf("join_stack_x1", false),
                       leaf("join_stack_x2", non_contiguous)};
    tg_tensor *out = tg_stack((const tg_tensor *const *)x, 3, 1);
    cr_assert_not_null(out, "%s", tg_last_error());
    check_name(out, "StackBackward0");
    tg_test_check_ref(tg_retain(out), "join_stack_out", 0, 0);
    backward_ref(out, "join_stack_g");
    /* dx_i = g[:, i, :] */
    tg_tensor *g = tg_test_load_ref("join_stack_g");
    for (int i = 0; i < 3; i++) {
        tg_tensor *gi = tg_select(g, 1, i);
        tg_assert_close(x[i]->grad, gi, 0, 0);
        tg_release(gi);
    }
    tg_release(g);
    tg_release(out);
    for (int i = 0; i < 3; i++)
        tg_release(x[i]);
}

TG_TEST(join, stack_matches_numpy) { stack_reference(false); }
TG_TEST(join, stack_matches_numpy_non_contiguous) { stack_reference(true); }

/* torch.stack of 0-d tensors is (n,); dims -1 and 0 are the same there;
 * the dtype promotes as cat's. */
TG_TEST(join, stack_of_scalars_and_dims)
{
    tg_tensor *a = tg_scalar(1, TG_INT64), *b = tg_scalar(2.5, TG_FLOAT32);
    const tg_tensor *ab[] = {a, b};
    tg_tensor *s = tg_stack(ab, 2, -1);
    check_values(s, TG_SHAPE(2), (double[]){1, 2.5});
    cr_assert_eq(s->dtype, TG_FLOAT32);
    tg_tensor *m = tg_arange(0, 6, 1, TG_FLOAT64);
    tg_tensor *m23 = tg_reshape(m, TG_SHAPE(2, 3));
    const tg_tensor *mm[] = {m23, m23};
    tg_tensor *first = tg_stack(mm, 2, -3); // (2, 2, 3)
    tg_tensor *last = tg_stack(mm, 2, 2);   // (2, 3, 2)
    check_values(first, TG_SHAPE(2, 2, 3),
                 (double[]){0, 1, 2, 3, 4, 5, 0, 1, 2, 3, 4, 5});
    check_values(last, TG_SHAPE(2, 3, 2),
                 (double[]){0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5});
    tg_release(last);
    tg_release(first);
    tg_release(m23);
    tg_release(m);
    tg_release(s);
    tg_release(a);
    tg_release(b);
}

/* ------------------------------------------------------ split and chunk */

/* Runs the backward of every piece with its own gradient reference
 * (prefix + j), which accumulate in x->grad. */
static void backward_pieces(tg_tensor **pieces, int n, const char *prefix)
{
    for (int j = 0; j < n; j++) {
        char name[64];
        snprintf(name, sizeof name, "%s%d", prefix, j);
        backward_ref(pieces[j], name);
    }
}

/* Asserts that piece is x narrowed on dim (same storage, same values). */
static void check_piece(const tg_tensor *piece, const tg_tensor *x, int dim,
                        int64_t start, int64_t len)
{
    cr_assert_not_null(piece, "%s", tg_last_error());
    cr_assert_eq(piece->storage, x->storage, "the piece is not a view");
    tg_tensor *want = tg_narrow(x, dim, start, len);
    tg_assert_close(piece, want, 0, 0);
    tg_release(want);
}

static void split_reference(bool non_contiguous)
{
    tg_tensor *x = leaf("join_split_x", non_contiguous);
    tg_tensor *p[3];
    cr_assert_eq(tg_split(x, 2, 0, NULL, 0), 3);
    cr_assert_eq(tg_split(x, 2, 0, p, 3), 3, "%s", tg_last_error());
    check_piece(p[0], x, 0, 0, 2);
    check_piece(p[1], x, 0, 2, 2);
    check_piece(p[2], x, 0, 4, 1);
    check_name(p[2], "SplitBackward0");
    backward_pieces(p, 3, "join_split_g");
    check_grad(x, "join_split_dx");
    for (int j = 0; j < 3; j++)
        tg_release(p[j]);
    tg_clear_grad(x);

    cr_assert_eq(tg_split_sizes(x, TG_SHAPE(1, 0, 2), 1, p), 3, "%s",
                 tg_last_error());
    check_piece(p[0], x, 1, 0, 1);
    check_piece(p[1], x, 1, 1, 0);
    check_piece(p[2], x, 1, 1, 2);
    check_name(p[0], "SplitWithSizesBackward0");
    backward_pieces(p, 3, "join_split_sizes_g");
    check_grad(x, "join_split_sizes_dx");
    for (int j = 0; j < 3; j++)
        tg_release(p[j]);
    tg_release(x);
}

TG_TEST(join, split_matches_numpy) { split_reference(false); }
TG_TEST(join, split_matches_numpy_non_contiguous) { split_reference(true); }

TG_TEST(join, chunk_matches_numpy)
{
    tg_tensor *x = leaf("join_chunk_x", true);
    tg_tensor *p[4];
    cr_assert_eq(tg_chunk(x, 4, -1, p, 4), 3, "%s", tg_last_error());
    for (int j = 0; j < 3; j++)
        check_piece(p[j], x, 1, 2 * j, 2);
    check_name(p[0], "SplitBackward0");
    backward_pieces(p, 3, "join_chunk_g");
    check_grad(x, "join_chunk_dx");
    for (int j = 0; j < 3; j++)
        tg_release(p[j]);
    tg_release(x);
}

/* The numbers of pieces torch.split and torch.chunk give (PyTorch 1.13):
 * chunk(5, 4) -> 2, 2, 1; chunk(6, 4) -> 2, 2, 2; chunk(0, 3) -> three
 * empty ones (SplitWithSizesBackward0); split(0, 2) and split(0, 0) -> one
 * empty piece; split(3, 10) -> x whole. */
TG_TEST(join, piece_counts_follow_torch)
{
    tg_tensor *five = tg_zeros(TG_SHAPE(5), TG_FLOAT32);
    tg_tensor *six = tg_zeros(TG_SHAPE(2, 6), TG_FLOAT32);
    tg_tensor *none = tg_zeros(TG_SHAPE(0), TG_FLOAT32);
    tg_set_requires_grad(none, true);
    tg_tensor *p[4];
    cr_assert_eq(tg_chunk(five, 4, 0, p, 4), 3);
    cr_assert(p[0]->shape[0] == 2 && p[1]->shape[0] == 2 &&
              p[2]->shape[0] == 1);
    for (int j = 0; j < 3; j++)
        tg_release(p[j]);
    cr_assert_eq(tg_chunk(six, 4, 1, NULL, 0), 3);
    cr_assert_eq(tg_chunk(none, 3, 0, p, 4), 3);
    for (int j = 0; j < 3; j++) {
        cr_assert_eq(p[j]->numel, 0);
        check_name(p[j], "SplitWithSizesBackward0");
        tg_release(p[j]);
    }
    cr_assert_eq(tg_split(none, 2, 0, p, 1), 1);
    tg_release(p[0]);
    cr_assert_eq(tg_split(none, 0, 0, p, 1), 1);
    tg_release(p[0]);
    cr_assert_eq(tg_split(six, 10, -1, p, 1), 1);
    cr_assert(tg_same_shape(p[0], six));
    tg_release(p[0]);
    /* no pieces for a dim of size 0 split into no sizes */
    tg_tensor *z = tg_zeros(TG_SHAPE(2, 0), TG_FLOAT32);
    cr_assert_eq(tg_split_sizes(z, NULL, 0, 1, NULL), 0);
    tg_release(z);
    tg_release(five);
    tg_release(six);
    tg_release(none);
}

/* The pieces are views: writing through one changes x, and a failed call
 * leaves NULL in every slot of out. */
TG_TEST(join, pieces_share_storage_and_failures_clear_out)
{
    tg_tensor *x = tg_zeros(TG_SHAPE(4), TG_FLOAT64);
    tg_tensor *p[2];
    cr_assert_eq(tg_split(x, 2, 0, p, 2), 2);
    tg_fill_(p[1], 7);
    check_values(x, TG_SHAPE(4), (double[]){0, 0, 7, 7});
    tg_release(p[0]);
    tg_release(p[1]);
    tg_tensor *q[3] = {x, x, x};
    cr_assert_eq(tg_split(x, 1, 0, q, 3), -1); // 4 pieces, room for 3
    cr_assert(!q[0] && !q[1] && !q[2]);
    tg_release(x);
}

/* ---------------------------------------------------- max / min along a dim */

static void extreme_reference(const char *op, int dim, const char *tag,
                              bool non_contiguous)
{
    tg_tensor *x = leaf("join_max_x", non_contiguous);
    tg_tensor *indices = NULL;
    bool max = strcmp(op, "max") == 0;
    tg_tensor *values = max ? tg_max_dim(x, dim, false, &indices)
                            : tg_min_dim(x, dim, false, &indices);
    cr_assert_not_null(values, "%s", tg_last_error());
    check_name(values, max ? "MaxBackward0" : "MinBackward0");
    char name[64];
    snprintf(name, sizeof name, "join_%s_%s_values", op, tag);
    tg_test_check_ref(tg_retain(values), name, 0, 0);
    snprintf(name, sizeof name, "join_%s_%s_indices", op, tag);
    tg_test_check_ref(indices, name, 0, 0);
    snprintf(name, sizeof name, "join_%s_%s_g", op, tag);
    backward_ref(values, name);
    snprintf(name, sizeof name, "join_%s_%s_dx", op, tag);
    check_grad(x, name);
    tg_release(values);
    tg_release(x);
}

/* Small integers (ties in most rows) and NaNs; the references were also
 * checked against torch.max / torch.min(x, dim) and their backward. */
TG_TEST(join, max_and_min_dim_match_numpy)
{
    const char *tags[] = {"d0", "d1", "dm1"};
    const int dims[] = {0, 1, -1};
    for (int i = 0; i < 3; i++)
        for (int nc = 0; nc < 2; nc++) {
            extreme_reference("max", dims[i], tags[i], nc);
            extreme_reference("min", dims[i], tags[i], nc);
        }
}

/* The reference check can fail: the gradient of max along dim 1 is not
 * the one along dim -1. */
TG_TEST(join, max_reference_catches_the_wrong_dim)
{
    tg_tensor *x = leaf("join_max_x", false);
    tg_tensor *values = tg_max_dim(x, 1, false, NULL);
    backward_ref(values, "join_max_d1_g");
    tg_tensor *wrong = tg_test_load_ref("join_max_dm1_dx");
    char report[512];
    cr_assert_not(tg_test_close(x->grad, wrong, 0, 0, true, report,
                                sizeof report));
    tg_release(wrong);
    tg_release(values);
    tg_release(x);
}

/* Checked by hand in PyTorch 1.13:
 *   torch.max([[1, 3, 3, 0], [2, nan, 5, nan]], 1) = ([3, nan], [1, 1])
 *   and the gradient of values.sum() is [[0, 1, 0, 0], [0, 1, 0, 0]];
 *   torch.min of the same = ([0, nan], [3, 1]);
 *   torch.max([-0., 0.], 0) = (-0., 0); torch.max(int64 [3, 7, 7], 0) =
 *   (7, 1); torch.max(tensor(3.), 0) = (3., 0); keepdim keeps a size-1
 *   dim. */
TG_TEST(join, max_dim_ties_nan_and_signs_follow_torch)
{
    tg_tensor *x = tg_from_array(
        (double[]){1, 3, 3, 0, 2, NAN, 5, NAN}, TG_SHAPE(2, 4), TG_FLOAT64);
    tg_set_requires_grad(x, true);
    tg_tensor *idx, *v = tg_max_dim(x, 1, false, &idx);
    check_values(v, TG_SHAPE(2), (double[]){3, NAN});
    check_values(idx, TG_SHAPE(2), (double[]){1, 1});
    tg_tensor *loss = tg_sum(v, NULL, 0, false);
    cr_assert_eq(tg_backward(loss), 0, "%s", tg_last_error());
    check_values(x->grad, TG_SHAPE(2, 4), (double[]){0, 1, 0, 0, 0, 1, 0, 0});
    tg_release(loss);
    tg_release(v);
    tg_release(idx);
    v = tg_min_dim(x, -1, true, &idx);
    check_values(v, TG_SHAPE(2, 1), (double[]){0, NAN});
    check_values(idx, TG_SHAPE(2, 1), (double[]){3, 1});
    tg_release(v);
    tg_release(idx);
    tg_release(x);

    tg_tensor *z = tg_from_array((double[]){-0.0, 0.0}, TG_SHAPE(2),
                                 TG_FLOAT64);
    v = tg_max_dim(z, 0, false, &idx);
    cr_assert(tg_item(v) == 0 && signbit(tg_item(v)) && tg_item(idx) == 0);
    tg_release(v);
    tg_release(idx);
    tg_release(z);

    tg_tensor *i = tg_from_array((int64_t[]){3, 7, 7}, TG_SHAPE(3), TG_INT64);
    v = tg_max_dim(i, 0, false, &idx);
    cr_assert(v->dtype == TG_INT64 && tg_item(v) == 7 && tg_item(idx) == 1);
    tg_release(v);
    tg_release(idx);
    tg_release(i);

    tg_tensor *s = tg_scalar(3, TG_FLOAT32);
    v = tg_max_dim(s, -1, true, &idx);
    cr_assert(v->ndim == 0 && tg_item(v) == 3 && idx->ndim == 0 &&
              tg_item(idx) == 0);
    tg_release(v);
    tg_release(idx);
    tg_release(s);

    /* other dims may be empty: (0, 3) over dim 1 gives (0,) */
    tg_tensor *e = tg_zeros(TG_SHAPE(0, 3), TG_FLOAT32);
    v = tg_max_dim(e, 1, false, &idx);
    check_values(v, TG_SHAPE(0), NULL);
    check_values(idx, TG_SHAPE(0), NULL);
    tg_release(v);
    tg_release(idx);
    tg_release(e);
}

/* tg_max (torch.amax) shares a tied maximum's gradient; tg_max_dim gives
 * it all to the first index, as torch.max(x, dim). */
TG_TEST(join, max_dim_and_amax_differ_on_ties)
{
    tg_tensor *x = tg_from_array((double[]){2, 5, 5}, TG_SHAPE(3),
                                 TG_FLOAT64);
    tg_set_requires_grad(x, true);
    tg_tensor *v = tg_max_dim(x, 0, false, NULL);
    cr_assert_eq(tg_backward(v), 0, "%s", tg_last_error());
    check_values(x->grad, TG_SHAPE(3), (double[]){0, 1, 0});
    tg_clear_grad(x);
    tg_tensor *a = tg_max(x, NULL, 0, false);
    cr_assert_eq(tg_backward(a), 0, "%s", tg_last_error());
    check_values(x->grad, TG_SHAPE(3), (double[]){0, 0.5, 0.5});
    tg_release(a);
    tg_release(v);
    tg_release(x);
}

/* The indices are saved: changing them in place before backward is
 * caught by the version check. */
TG_TEST(join, max_dim_saves_its_indices)
{
    tg_tensor *x = tg_from_array((double[]){1, 4, 2, 3}, TG_SHAPE(2, 2),
                                 TG_FLOAT64);
    tg_set_requires_grad(x, true);
    tg_tensor *idx, *v = tg_max_dim(x, 1, false, &idx);
    tg_tensor *loss = tg_sum(v, NULL, 0, false);
    tg_fill_(idx, 0);
    cr_assert_eq(tg_backward(loss), -1);
    tg_assert_error("saved by MaxBackward0 was modified in place");
    tg_release(loss);
    tg_release(v);
    tg_release(idx);
    tg_release(x);
}
