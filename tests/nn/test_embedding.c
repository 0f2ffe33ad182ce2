/*
 * tests/nn/test_embedding.c - the Embedding and Flatten layers
 * (nn/embedding.c).
 *
 * Embedding's initial table is checked bit for bit against vectors that
 * PyTorch 1.13.1 printed (tests/reference/torch-embedding-vectors.txt,
 * written by scripts/reference/torch_embedding_vectors.py): the scalar
 * Box-Muller path with its cached sample, the 16-wide fill path with a
 * redrawn tail, and the generator's state after the layer. Its forward
 * and backward are compared with the NumPy references of x[idx]
 * (index_emb_f32_*.npy, scripts/reference/gen_index.py). Flatten's shapes
 * are PyTorch's, checked by hand; both print as torch.nn prints them.
 */
#include "../common.h"
#include "nn/nn.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static tg_module *check_module(tg_module *m)
{
    cr_assert_not_null(m, "%s", tg_last_error());
    return m;
}

static tg_tensor *check(tg_tensor *t)
{
    cr_assert_not_null(t, "%s", tg_last_error());
    return t;
}

/* t (float32, contiguous) holds exactly the bits of PyTorch's vector. */
static void expect_torch(const tg_tensor *t, const char *title)
{
    static uint32_t bits[512];
    int64_t n =
        tg_test_torch_bits("torch-embedding-vectors.txt", title, bits, 512);
    cr_assert_eq(t->dtype, TG_FLOAT32);
    cr_assert(tg_is_contiguous(t));
    cr_assert_eq(t->numel, n, "%s: %lld elements, PyTorch has %lld", title,
                 (long long)t->numel, (long long)n);
    const float *v = tg_data_f32(t);
    for (int64_t i = 0; i < n; i++) {
        uint32_t b;
        memcpy(&b, &v[i], sizeof b);
        cr_assert_eq(b, bits[i],
                     "%s[%lld] is %.9g (0x%08x), PyTorch has 0x%08x", title,
                     (long long)i, (double)v[i], b, bits[i]);
    }
}

/* ------------------------------------------------------ Embedding: init */

TG_TEST(embedding, init_matches_pytorch_scalar_path)
{
    tg_manual_seed(42);
    tg_module *e = check_module(tg_embedding_new(3, 3));
    tg_tensor *w = tg_module_parameter(e, "weight");
    cr_assert_eq(w->ndim, 2);
    cr_assert_eq(w->shape[0], 3);
    cr_assert_eq(w->shape[1], 3);
    cr_assert(w->requires_grad);
    expect_torch(w, "manual_seed(42); nn.Embedding(3, 3).weight");
    /* 9 values leave the second of the fifth pair cached, as in PyTorch */
    tg_tensor *next = check(tg_randn(TG_SHAPE(1), TG_FLOAT32));
    expect_torch(next, "... then randn(1)  [the cached sample of the odd "
                       "count]");
    tg_release(next);
    tg_module_free(e);
}

TG_TEST(embedding, init_matches_pytorch_fill_path)
{
    tg_manual_seed(0);
    tg_module *e = check_module(tg_embedding_new(5, 4));
    expect_torch(tg_module_parameter(e, "weight"),
                 "manual_seed(0); nn.Embedding(5, 4).weight");
    tg_module_free(e);

    /* makemore's table: 270 values, 16 at a time and a redrawn tail */
    tg_manual_seed(2147483647);
    e = check_module(tg_embedding_new(27, 10));
    expect_torch(tg_module_parameter(e, "weight"),
                 "manual_seed(2147483647); nn.Embedding(27, 10).weight");
    tg_tensor *next = check(tg_randn(TG_SHAPE(2), TG_FLOAT32));
    expect_torch(next, "... then randn(2)");
    tg_release(next);
    tg_module_free(e);
}

/* The bit comparison can fail: the table of another seed differs. */
TG_TEST(embedding, init_check_catches_another_seed)
{
    static uint32_t bits[32];
    int64_t n = tg_test_torch_bits("torch-embedding-vectors.txt",
                                   "manual_seed(0); nn.Embedding(5, 4).weight",
                                   bits, 32);
    tg_manual_seed(1);
    tg_module *e = check_module(tg_embedding_new(5, 4));
    const float *v = tg_data_f32(tg_module_parameter(e, "weight"));
    int64_t same = 0;
    for (int64_t i = 0; i < n; i++) {
        uint32_t b;
        memcpy(&b, &v[i], sizeof b);
        same += b == bits[i];
    }
    cr_assert_lt(same, n);
    tg_module_free(e);
}

/* ------------------------------------------- Embedding: forward, backward */

/* The table of index_emb_f32_x, looked up by a (32, 3) batch of contexts:
 * C[Xb] and its gradient, as NumPy's x[idx] and np.add.at give them. */
TG_TEST(embedding, forward_and_backward_match_numpy)
{
    tg_module *e = check_module(tg_embedding_new(27, 10));
    tg_tensor *table = tg_test_load_ref("index_emb_f32_x");
    tg_tensor *w = tg_module_parameter(e, "weight");
    tg_no_grad_begin();
    cr_assert_eq(tg_copy_(w, table), 0, "%s", tg_last_error());
    tg_no_grad_end();
    tg_tensor *xb = tg_test_load_ref("index_emb_f32_idx");
    tg_tensor *g = tg_test_load_ref("index_emb_f32_g");
    tg_tensor *y = check(tg_module_forward(e, xb));
    cr_assert_eq(y->ndim, 3);
    cr_assert_eq(y->shape[2], 10);
    tg_test_check_ref(tg_retain(y), "index_emb_f32_out", 0, 0);
    /* tg_index's node: PyTorch's F.embedding says EmbeddingBackward0 */
    cr_assert_str_eq(tg_grad_fn_name(y), "IndexBackward0");
    tg_backward_options o = {.grad = g};
    cr_assert_eq(tg_backward_ex(y, &o), 0, "%s", tg_last_error());
    /* float32 sums of up to a dozen values against NumPy's float64 sum
     * rounded once: a few ulps (test_index.c) */
    tg_test_check_ref(tg_retain(w->grad), "index_emb_f32_dx", 1e-6, 1e-6);
    tg_release(y);
    tg_release(g);
    tg_release(xb);
    tg_release(table);
    tg_module_free(e);
}

/* Negative and too large indices are refused, as F.embedding refuses
 * them (where x[idx] counts a negative one from the end); a 0-d index
 * gives one vector. */
TG_TEST(embedding, indices_out_of_range_and_0d)
{
    tg_module *e = check_module(tg_embedding_new(4, 2));
    tg_tensor *neg = check(tg_full(TG_SHAPE(2), -1, TG_INT64));
    cr_assert_null(tg_module_forward(e, neg));
    tg_assert_error("Embedding(4, 2) got index -1", "[0, 4)");
    tg_tensor *big = check(tg_full(TG_SHAPE(1, 1), 4, TG_INT64));
    cr_assert_null(tg_module_forward(e, big));
    tg_assert_error("Embedding(4, 2) got index 4");
    tg_tensor *one = check(tg_scalar(3, TG_INT64));
    tg_tensor *y = check(tg_module_forward(e, one));
    cr_assert_eq(y->ndim, 1);
    cr_assert_eq(y->shape[0], 2);
    const float *w = tg_data_f32(tg_module_parameter(e, "weight"));
    cr_assert_eq(tg_data_f32(y)[0], w[6]);
    cr_assert_eq(tg_data_f32(y)[1], w[7]);
    tg_release(y);
    tg_release(one);
    tg_release(big);
    tg_release(neg);
    tg_module_free(e);
}

/* ---------------------------------------------------------------- Flatten */

static void expect_shape(const tg_tensor *t, const int64_t *shape, int ndim)
{
    cr_assert_eq(t->ndim, ndim);
    for (int d = 0; d < ndim; d++)
        cr_assert_eq(t->shape[d], shape[d], "dim %d", d);
}

/* The shapes torch.nn.Flatten gives, checked by hand with PyTorch 1.13. */
TG_TEST(flatten, shapes_as_pytorch)
{
    tg_tensor *x = check(tg_arange(0, 24, 1, TG_FLOAT32));
    tg_tensor *x3 = check(tg_reshape(x, TG_SHAPE(2, 3, 4)));
    struct {
        int start, end;
        int ndim;
        int64_t shape[3];
    } cases[] = {
        {1, -1, 2, {2, 12}}, {0, -1, 1, {24}}, {0, 1, 2, {6, 4}},
        {-3, -2, 2, {6, 4}}, {2, 2, 3, {2, 3, 4}}, {1, 2, 2, {2, 12}},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        tg_module *f = check_module(tg_flatten_new(cases[i].start,
                                                   cases[i].end));
        tg_tensor *y = check(tg_module_forward(f, x3));
        expect_shape(y, cases[i].shape, cases[i].ndim);
        tg_tensor *yc = check(tg_contiguous(y)); // C order is kept
        for (int64_t k = 0; k < 24; k++)
            cr_assert_eq(tg_data_f32(yc)[k], (float)k);
        tg_release(yc);
        tg_release(y);
        tg_module_free(f);
    }
    /* a 0-d input flattens to (1,) with start_dim 0, and is refused with
     * the default start_dim 1, as in PyTorch */
    tg_tensor *s = check(tg_scalar(5, TG_FLOAT32));
    tg_module *f0 = check_module(tg_flatten_new(0, -1));
    tg_tensor *y0 = check(tg_module_forward(f0, s));
    expect_shape(y0, TG_SHAPE(1));
    tg_module *f1 = check_module(tg_flatten_new(1, -1));
    cr_assert_null(tg_module_forward(f1, s));
    tg_assert_error("Flatten(start_dim=1, end_dim=-1) got an input of "
                    "shape ()");
    tg_module *bad = check_module(tg_flatten_new(2, 1));
    cr_assert_null(tg_module_forward(bad, x3));
    tg_module_free(bad);
    tg_module_free(f1);
    tg_module_free(f0);
    tg_release(y0);
    tg_release(s);
    tg_release(x3);
    tg_release(x);
}

/* A transposed input is copied in C order of its logical shape, and the
 * gradient comes back to its own layout. */
TG_TEST(flatten, non_contiguous_input_and_gradient)
{
    tg_tensor *base = check(tg_arange(0, 6, 1, TG_FLOAT64));
    tg_tensor *b = check(tg_reshape(base, TG_SHAPE(1, 2, 3)));
    tg_tensor *x = check(tg_transpose(b, 1, 2)); // (1, 3, 2)
    tg_tensor *leaf = check(tg_clone(x));
    tg_set_requires_grad(leaf, true);
    tg_tensor *v = check(tg_transpose(leaf, 1, 2));
    tg_tensor *vt = check(tg_transpose(v, 1, 2)); // leaf's values, a view
    tg_module *f = check_module(tg_flatten_new(1, -1));
    tg_tensor *y = check(tg_module_forward(f, x));
    const double want[] = {0, 3, 1, 4, 2, 5};
    for (int k = 0; k < 6; k++)
        cr_assert_eq(tg_data_f64(y)[k], want[k]);
    tg_tensor *yl = check(tg_module_forward(f, vt));
    const double w[] = {1, 2, 3, 4, 5, 6};
    tg_tensor *g = check(tg_from_array(w, TG_SHAPE(1, 6), TG_FLOAT64));
    tg_backward_options o = {.grad = g};
    cr_assert_eq(tg_backward_ex(yl, &o), 0, "%s", tg_last_error());
    for (int k = 0; k < 6; k++)
        cr_assert_eq(tg_data_f64(leaf->grad)[k], w[k]);
    tg_release(g);
    tg_release(yl);
    tg_release(y);
    tg_module_free(f);
    tg_release(vt);
    tg_release(v);
    tg_release(leaf);
    tg_release(x);
    tg_release(b);
    tg_release(base);
}

/* ------------------------------------------------------------------ print */

TG_TEST(embedding, prints_as_pytorch)
{
    tg_test_expect_print(tg_embedding_new(27, 10), "Embedding(27, 10)");
    tg_test_expect_print(tg_flatten_new(1, -1),
                         "Flatten(start_dim=1, end_dim=-1)");
    tg_test_expect_print(tg_flatten_new(-3, -2),
                         "Flatten(start_dim=-3, end_dim=-2)");
    tg_module *seq = check_module(tg_sequential_new(NULL, 0));
    cr_assert_eq(tg_sequential_append(seq, tg_embedding_new(27, 10)), 0);
    cr_assert_eq(tg_sequential_append(seq, tg_flatten_new(1, -1)), 0);
    cr_assert_eq(tg_sequential_append(seq, tg_linear_new(30, 200, true)), 0);
    cr_assert_eq(tg_sequential_append(seq, tg_tanh_new()), 0);
    tg_test_expect_print(seq,
                         "Sequential(\n"
                         "  (0): Embedding(27, 10)\n"
                         "  (1): Flatten(start_dim=1, end_dim=-1)\n"
                         "  (2): Linear(in_features=30, out_features=200, "
                         "bias=True)\n"
                         "  (3): Tanh()\n"
                         ")");
}

/* makemore part 3's model as layers: a batch of (32, 3) contexts through
 * Embedding, Flatten, Linear and cross-entropy, backward to the table. */
TG_TEST(embedding, makemore_mlp_trains_the_table)
{
    tg_manual_seed(2147483647);
    tg_module *seq = check_module(tg_sequential_new(NULL, 0));
    cr_assert_eq(tg_sequential_append(seq, tg_embedding_new(27, 10)), 0);
    cr_assert_eq(tg_sequential_append(seq, tg_flatten_new(1, -1)), 0);
    cr_assert_eq(tg_sequential_append(seq, tg_linear_new(30, 27, true)), 0);
    tg_tensor *xb = check(tg_randint(0, 27, TG_SHAPE(32, 3)));
    tg_tensor *yb = check(tg_randint(0, 27, TG_SHAPE(32)));
    tg_tensor *logits = check(tg_module_forward(seq, xb));
    expect_shape(logits, TG_SHAPE(32, 27));
    tg_tensor *loss = check(tg_cross_entropy(logits, yb, TG_REDUCTION_MEAN));
    cr_assert_eq(tg_backward(loss), 0, "%s", tg_last_error());
    tg_tensor *dC = tg_module_parameter(seq, "0.weight")->grad;
    cr_assert_not_null(dC);
    /* rows no context used get no gradient; the others do */
    bool used[27] = {false};
    for (int64_t k = 0; k < 96; k++)
        used[tg_data_i64(xb)[k]] = true;
    for (int r = 0; r < 27; r++) {
        double norm = 0;
        for (int c = 0; c < 10; c++)
            norm += tg_data_f32(dC)[r * 10 + c] * tg_data_f32(dC)[r * 10 + c];
        cr_assert_eq(norm > 0, used[r], "row %d", r);
    }
    tg_release(loss);
    tg_release(logits);
    tg_release(yb);
    tg_release(xb);
    tg_module_free(seq);
}
