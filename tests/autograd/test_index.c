/*
 * tests/autograd/test_index.c - the indexing ops (autograd/ops/index.c)
 * against NumPy: index_select, x[idx], gather and one_hot, forward and
 * backward, on contiguous and non-contiguous x and idx.
 *
 * References: tests/reference/index_*.npy, written by
 * scripts/reference/gen_index.py from NumPy's own indexing (np.take,
 * x[idx], np.add.at). The forwards copy elements, so they must match
 * exactly. A gradient element that received several additions differs
 * from NumPy's float64 sum rounded once by a few float32 ulps at most
 * (float32 cases: rtol 1e-6 on values of order 1, atol 1e-6); float64 adds
 * in the same order as np.add.at and matches to rounding (1e-15).
 *
 * Also here, exactly: the gradient of a row picked several times (the dC
 * loop of makemore part 4), negative indices, empty idx, int64 x, no_grad,
 * and that an idx modified in place after the forward is refused at
 * backward. The messages of the errors are in tests/errors/.
 */
#include "../common.h"
#include "tensor/internal.h" // tg_read_flat

#include <string.h>

static tg_tensor *check(tg_tensor *t)
{
    cr_assert(t, "%s", tg_last_error());
    return t;
}

typedef enum kind { SELECT, INDEX, GATHER } kind;

typedef struct ref_case {
    const char *name; // index_<name>_*.npy
    kind op;
    int dim;
    const char *grad_fn;
} ref_case;

static const ref_case CASES[] = {
    {"select0_f64", SELECT, 0, "IndexSelectBackward0"},
    {"select1_f32", SELECT, 1, "IndexSelectBackward0"},
    {"select_last_f64", SELECT, -1, "IndexSelectBackward0"},
    {"emb_f32", INDEX, 0, "IndexBackward0"},
    {"negative_f64", INDEX, 0, "IndexBackward0"},
    {"logprobs_f32", GATHER, 1, "GatherBackward0"},
    {"gather0_f64", GATHER, 0, "GatherBackward0"},
    {"gather3d_f64", GATHER, 1, "GatherBackward0"},
};

static tg_tensor *run_op(kind op, const tg_tensor *x, int dim,
                         const tg_tensor *idx)
{
    switch (op) {
    case SELECT: return tg_index_select(x, dim, idx);
    case INDEX: return tg_index(x, idx);
    case GATHER: return tg_gather(x, dim, idx);
    }
    return NULL;
}

static tg_tensor *load(const char *name, const char *what)
{
    char path[96];
    snprintf(path, sizeof path, "index_%s_%s", name, what);
    return tg_test_load_ref(path);
}

/* One case: forward exactly, grad_fn, and the gradient of sum(out * g),
 * with x and idx laid out contiguously or not. */
static void check_case(const ref_case *c, bool x_layout, bool idx_layout)
{
    tg_tensor *x0 = load(c->name, "x"), *i0 = load(c->name, "idx");
    tg_tensor *g = load(c->name, "g");
    tg_tensor *x = x_layout ? tg_test_non_contiguous(x0, x0->ndim < 2)
                            : tg_clone(x0);
    tg_tensor *idx = idx_layout ? tg_test_non_contiguous(i0, true)
                                : tg_retain(i0);
    cr_assert(!x_layout || !tg_is_contiguous(x));
    cr_assert(!idx_layout || !tg_is_contiguous(idx));
    tg_set_requires_grad(x, true);
    tg_tensor *out = check(run_op(c->op, x, c->dim, idx));
    char what[160];
    snprintf(what, sizeof what, "index_%s_out", c->name);
    tg_test_check_ref(tg_retain(out), what, 0, 0);
    cr_assert_str_eq(tg_grad_fn_name(out), c->grad_fn, "%s", c->name);
    tg_backward_options o = {.grad = g};
    cr_assert_eq(tg_backward_ex(out, &o), 0, "%s", tg_last_error());
    double tol = x->dtype == TG_FLOAT32 ? 1e-6 : 1e-15;
    snprintf(what, sizeof what, "index_%s_dx", c->name);
    tg_test_check_ref(tg_retain(x->grad), what, tol, tol);
    tg_release(out);
    tg_release(idx);
    tg_release(x);
    tg_release(g);
    tg_release(i0);
    tg_release(x0);
}

TG_TEST(index_reference, contiguous)
{
    for (size_t i = 0; i < sizeof CASES / sizeof *CASES; i++)
        check_case(&CASES[i], false, false);
}

TG_TEST(index_reference, non_contiguous_x)
{
    for (size_t i = 0; i < sizeof CASES / sizeof *CASES; i++)
        check_case(&CASES[i], true, false);
}

/* idx read through every second element of a buffer whose gaps hold -7,
 * out of range for every op that refuses negatives: a kernel that read a
 * gap would fail or give wrong rows. */
TG_TEST(index_reference, non_contiguous_x_and_idx)
{
    for (size_t i = 0; i < sizeof CASES / sizeof *CASES; i++)
        check_case(&CASES[i], true, true);
}

TG_TEST(index_reference, one_hot)
{
    const char *names[] = {"ctx", "infer"};
    const int64_t classes[] = {27, -1};
    for (int i = 0; i < 2; i++) {
        char path[64];
        snprintf(path, sizeof path, "index_onehot_%s_idx", names[i]);
        tg_tensor *idx = tg_test_load_ref(path);
        snprintf(path, sizeof path, "index_onehot_%s_out", names[i]);
        tg_test_check_ref(check(tg_one_hot(idx, classes[i])), path, 0, 0);
        tg_tensor *nc = tg_test_non_contiguous(idx, true);
        tg_tensor *out = check(tg_one_hot(nc, classes[i]));
        cr_assert_null(tg_grad_fn_name(out), "one_hot records no node");
        tg_test_check_ref(out, path, 0, 0);
        tg_release(nc);
        tg_release(idx);
    }
}

/* The reference comparison can fail: a gradient where a repeated row
 * keeps only its last upstream gradient (dx[idx[j]] = g[j], the bug of
 * writing instead of adding) and a forward with the rows in the wrong
 * order must not pass. */
TG_TEST(index_reference, catches_a_gradient_that_overwrites)
{
    tg_tensor *x = load("select0_f64", "x"), *idx = load("select0_f64", "idx");
    tg_tensor *g = load("select0_f64", "g");
    tg_tensor *wrong = check(tg_zeros(x->shape, x->ndim, TG_FLOAT64));
    const int64_t *v = tg_data_i64(idx);
    for (int64_t j = 0; j < idx->numel; j++)
        for (int64_t i = 0; i < x->shape[1]; i++)
            tg_data_f64(wrong)[v[j] * x->shape[1] + i] =
                tg_data_f64(g)[j * x->shape[1] + i];
    tg_tensor *ref = load("select0_f64", "dx");
    char report[512];
    cr_assert_not(tg_test_close(wrong, ref, 1e-6, 1e-6, true, report,
                                sizeof report));
    /* the forward with idx reversed: the same rows, in the wrong order */
    int64_t m = idx->numel, r[16];
    for (int64_t j = 0; j < m; j++)
        r[j] = tg_data_i64(idx)[m - 1 - j];
    tg_tensor *ridx = check(tg_from_array(r, &m, 1, TG_INT64));
    tg_tensor *reversed = check(tg_index_select(x, 0, ridx));
    tg_tensor *out_ref = load("select0_f64", "out");
    cr_assert_not(tg_test_close(reversed, out_ref, 1e-6, 1e-6, true, report,
                                sizeof report));
    tg_release(out_ref);
    tg_release(reversed);
    tg_release(ridx);
    tg_release(ref);
    tg_release(wrong);
    tg_release(g);
    tg_release(idx);
    tg_release(x);
}

/* ------------------------------------------------------- exact, by hand */

/* makemore part 4's loop, for k, j: dC[Xb[k, j]] += demb[k, j]: a row
 * used three times gets the sum of its three gradients, a row never used
 * gets zeros. C is (3, 2), Xb (2, 2) = [[0, 2], [0, 0]], g all distinct. */
TG_TEST(index_exact, repeated_rows_add_their_gradients)
{
    const double c[] = {1, 2, 3, 4, 5, 6};
    const int64_t xb[] = {0, 2, 0, 0};
    const double g[] = {1, 10, 100, 1000, 1e4, 1e5, 1e6, 1e7};
    tg_tensor *C = check(tg_from_array(c, TG_SHAPE(3, 2), TG_FLOAT64));
    tg_tensor *Xb = check(tg_from_array(xb, TG_SHAPE(2, 2), TG_INT64));
    tg_tensor *G = check(tg_from_array(g, TG_SHAPE(2, 2, 2), TG_FLOAT64));
    tg_set_requires_grad(C, true);
    tg_tensor *emb = check(tg_index(C, Xb));
    cr_assert_eq(emb->ndim, 3);
    const double want_emb[] = {1, 2, 5, 6, 1, 2, 1, 2};
    for (int k = 0; k < 8; k++)
        cr_assert_eq(tg_read_flat(emb, k), want_emb[k]);
    tg_backward_options o = {.grad = G};
    cr_assert_eq(tg_backward_ex(emb, &o), 0, "%s", tg_last_error());
    /* row 0: g[0,0] + g[1,0] + g[1,1]; row 1: never used; row 2: g[0,1] */
    const double want[] = {1 + 1e4 + 1e6, 10 + 1e5 + 1e7, 0, 0, 100, 1000};
    for (int k = 0; k < 6; k++)
        cr_assert_eq(tg_read_flat(C->grad, k), want[k], "element %d", k);
    tg_release(emb);
    tg_release(G);
    tg_release(Xb);
    tg_release(C);
}

/* x[idx] counts a negative index from the end, as PyTorch's x[idx];
 * index_select and gather refuse one, as torch.index_select and
 * torch.gather do. */
TG_TEST(index_exact, negative_indices)
{
    const double v[] = {10, 11, 12, 13};
    tg_tensor *x = check(tg_from_array(v, TG_SHAPE(4), TG_FLOAT64));
    tg_tensor *idx = check(tg_full(TG_SHAPE(2), -1, TG_INT64));
    tg_tensor *y = check(tg_index(x, idx));
    cr_assert_eq(tg_read_flat(y, 0), 13);
    cr_assert_eq(tg_read_flat(y, 1), 13);
    tg_release(y);
    cr_assert_null(tg_index_select(x, 0, idx));
    tg_assert_error("negative indices are refused");
    cr_assert_null(tg_gather(x, 0, idx));
    tg_assert_error("index -1 is out of range for dim 0");
    tg_tensor *low = check(tg_full(TG_SHAPE(1), -5, TG_INT64));
    cr_assert_null(tg_index(x, low));
    tg_assert_error("index -5 is out of range", "[-4, 4)");
    tg_release(low);
    tg_release(idx);
    tg_release(x);
}

/* Empty idx: empty outputs, zero gradients; int64 x is copied exactly,
 * values beyond 2^53 included. */
TG_TEST(index_exact, empty_idx_and_int64_x)
{
    tg_tensor *x = check(tg_randn(TG_SHAPE(5, 3), TG_FLOAT32));
    tg_set_requires_grad(x, true);
    tg_tensor *none = check(tg_zeros(TG_SHAPE(0, 2), TG_INT64));
    tg_tensor *y = check(tg_index(x, none));
    cr_assert_eq(y->ndim, 3);
    cr_assert_eq(y->shape[0], 0);
    cr_assert_eq(y->shape[2], 3);
    tg_tensor *s = check(tg_sum(y, NULL, 0, false));
    cr_assert_eq(tg_backward(s), 0, "%s", tg_last_error());
    for (int64_t k = 0; k < 15; k++)
        cr_assert_eq(tg_read_flat(x->grad, k), 0.0);
    tg_release(s);
    tg_release(y);
    tg_release(none);
    tg_release(x);

    const int64_t big[] = {INT64_MAX, -3, (INT64_C(1) << 53) + 1};
    tg_tensor *xi = check(tg_from_array(big, TG_SHAPE(3), TG_INT64));
    const int64_t pick[] = {2, 0, 2};
    tg_tensor *pi = check(tg_from_array(pick, TG_SHAPE(3), TG_INT64));
    tg_tensor *yi = check(tg_index_select(xi, 0, pi));
    cr_assert_eq(tg_data_i64(yi)[0], (INT64_C(1) << 53) + 1);
    cr_assert_eq(tg_data_i64(yi)[1], INT64_MAX);
    tg_tensor *gi = check(tg_gather(xi, 0, pi));
    cr_assert_eq(tg_data_i64(gi)[1], INT64_MAX);
    tg_release(gi);
    tg_release(yi);
    tg_release(pi);
    tg_release(xi);
}

/* Under no_grad nothing is recorded. */
TG_TEST(index_exact, no_grad_records_nothing)
{
    tg_tensor *x = check(tg_randn(TG_SHAPE(3, 2), TG_FLOAT64));
    tg_set_requires_grad(x, true);
    tg_tensor *idx = check(tg_zeros(TG_SHAPE(3, 1), TG_INT64));
    tg_no_grad_begin();
    tg_tensor *a = check(tg_index(x, idx));
    tg_tensor *b = check(tg_gather(x, 1, idx));
    tg_no_grad_end();
    cr_assert_null(tg_grad_fn_name(a));
    cr_assert_null(tg_grad_fn_name(b));
    cr_assert_not(a->requires_grad);
    tg_release(b);
    tg_release(a);
    tg_release(idx);
    tg_release(x);
}

/* The backward reads idx as it was at the forward: an idx changed in place
 * afterwards is refused at backward, naming the op, instead of sending the
 * gradient to other rows. */
TG_TEST(index_exact, idx_changed_in_place_is_refused)
{
    tg_tensor *x = check(tg_randn(TG_SHAPE(4, 3), TG_FLOAT64));
    tg_set_requires_grad(x, true);
    tg_tensor *idx = check(tg_zeros(TG_SHAPE(4, 1), TG_INT64));
    tg_tensor *y = check(tg_gather(x, 1, idx));
    tg_tensor *s = check(tg_sum(y, NULL, 0, false));
    cr_assert_eq(tg_fill_(idx, 2), 0);
    cr_assert_eq(tg_backward(s), -1);
    tg_assert_error("GatherBackward0");
    tg_release(s);
    tg_release(y);
    tg_release(idx);
    tg_release(x);
}

/* one_hot's edges, as F.one_hot 1.13 gives them: a 0-d idx, an empty idx
 * with 3 classes, and the refusals of 0 classes. */
TG_TEST(index_exact, one_hot_edges)
{
    tg_tensor *two = check(tg_scalar(2, TG_INT64));
    tg_tensor *y = check(tg_one_hot(two, 4));
    cr_assert_eq(y->ndim, 1);
    cr_assert_eq(y->dtype, TG_INT64);
    const int64_t want[] = {0, 0, 1, 0};
    for (int k = 0; k < 4; k++)
        cr_assert_eq(tg_data_i64(y)[k], want[k]);
    tg_release(y);
    tg_tensor *none = check(tg_zeros(TG_SHAPE(0), TG_INT64));
    tg_tensor *e = check(tg_one_hot(none, 3));
    cr_assert_eq(e->ndim, 2);
    cr_assert_eq(e->shape[0], 0);
    cr_assert_eq(e->shape[1], 3);
    tg_release(e);
    cr_assert_null(tg_one_hot(none, 0));
    tg_assert_error("cannot infer the number of classes");
    tg_tensor *zero = check(tg_zeros(TG_SHAPE(1), TG_INT64));
    cr_assert_null(tg_one_hot(zero, 0));
    tg_assert_error("class value 0 is too large for 0 classes");
    tg_release(zero);
    tg_release(none);
    tg_release(two);
}

/* gather on a 0-d x reads it as (1,), as torch.gather does: a 0-d idx
 * holding 0 picks the value, and the gradient comes back to it. */
TG_TEST(index_exact, gather_0d)
{
    tg_tensor *x = check(tg_scalar(5, TG_FLOAT64));
    tg_set_requires_grad(x, true);
    tg_tensor *zero = check(tg_scalar(0, TG_INT64));
    tg_tensor *y = check(tg_gather(x, 0, zero));
    cr_assert_eq(y->ndim, 0);
    cr_assert_eq(tg_item(y), 5.0);
    cr_assert_eq(tg_backward(y), 0, "%s", tg_last_error());
    cr_assert_eq(tg_item(x->grad), 1.0);
    tg_tensor *one = check(tg_scalar(1, TG_INT64));
    cr_assert_null(tg_gather(x, 0, one));
    tg_assert_error("index 1 is out of range for dim 0 of x of shape ()");
    tg_release(one);
    tg_release(y);
    tg_release(zero);
    tg_release(x);
}
