/*
 * tests/autograd/test_tape.c - the engine: recording, the reverse walk,
 * gradient accumulation, what is freed when, no_grad, detach, retain_grad,
 * the version check, and the cases that break naive engines (a value used
 * on two paths, a 1000-deep chain, x * x, broadcasting).
 *
 * Most tests use only add and mul (and their scalar forms), so they do not
 * depend on the other ops' backward functions; the training loop at the
 * end also uses matmul, tanh, sub and mean. Expected values are exact:
 * every gradient here is a sum of products of small integers or of the
 * inputs, computed the same way in C.
 */
#include "../common.h"

#include <math.h>

static tg_tensor *vec(const double *v, int64_t n)
{
    return tg_from_array(v, (int64_t[]){n}, 1, TG_FLOAT64);
}

static tg_tensor *param(const double *v, int64_t n)
{
    tg_tensor *t = vec(v, n);
    cr_assert_eq(tg_set_requires_grad(t, true), 0);
    return t;
}

static int backward_ones(tg_tensor *y, bool keep)
{
    tg_tensor *g = tg_ones_like(y);
    tg_backward_options o = {.grad = g, .keep_tape = keep};
    int rc = tg_backward_ex(y, &o);
    tg_release(g);
    return rc;
}

static void assert_grad(const tg_tensor *x, const double *expected)
{
    cr_assert(x->grad, "no gradient");
    tg_tensor *e = tg_from_array(expected, x->shape, x->ndim, x->dtype);
    tg_assert_close(x->grad, e, 0, 0);
    tg_release(e);
}

TG_TEST(tape, value_used_on_two_paths)
{
    /* X = w * x; L = X + 5 * X, so dL/dw = 6 x */
    const double xv[] = {1.5, -2.0, 0.25};
    tg_tensor *w = param((double[]){0.5, 3.0, -1.0}, 3);
    tg_tensor *x = vec(xv, 3);
    tg_tensor *X = tg_mul(w, x);
    tg_tensor *X5 = tg_mul_scalar(X, 5.0);
    tg_tensor *L = tg_add(X, X5);
    cr_assert_eq(backward_ones(L, false), 0, "%s", tg_last_error());
    assert_grad(w, (double[]){6 * 1.5, 6 * -2.0, 6 * 0.25});
    cr_assert_null(x->grad, "x does not require grad");
    tg_release(L);
    tg_release(X5);
    tg_release(X);
    tg_release(x);
    tg_release(w);
    cr_assert_eq(tg_tape_size(), 0);
}

TG_TEST(tape, chain_of_1000_doublings)
{
    /* b = a + a, 1000 times: db/da = 2^1000, exact in float64 */
    tg_tensor *a = tg_scalar(1.0, TG_FLOAT64);
    tg_set_requires_grad(a, true);
    tg_tensor *b = tg_retain(a);
    for (int i = 0; i < 1000; i++) {
        tg_tensor *next = tg_add(b, b);
        tg_release(b);
        b = next;
    }
    cr_assert_eq(tg_tape_size(), 1000);
    cr_assert_eq(tg_backward(b), 0, "%s", tg_last_error());
    cr_assert_eq(tg_item(a->grad), ldexp(1.0, 1000));
    tg_release(b);
    tg_release(a);
    cr_assert_eq(tg_tape_size(), 0);
}

TG_TEST(tape, chain_of_200000_ops_needs_no_stack)
{
    /* Backward and the cascade that frees the chain are loops: a chain far
     * deeper than any C stack allows recursion through. */
    tg_tensor *a = tg_scalar(0.0, TG_FLOAT64);
    tg_set_requires_grad(a, true);
    tg_tensor *b = tg_retain(a);
    for (int i = 0; i < 200000; i++) {
        tg_tensor *next = tg_add_scalar(b, 1.0);
        tg_release(b);
        b = next;
    }
    cr_assert_eq(tg_item(b), 2e5);
    cr_assert_eq(tg_backward(b), 0, "%s", tg_last_error());
    cr_assert_eq(tg_item(a->grad), 1.0);
    tg_release(b);
    /* Again, freed without any backward. */
    b = tg_retain(a);
    for (int i = 0; i < 200000; i++) {
        tg_tensor *next = tg_mul_scalar(b, 1.0);
        tg_release(b);
        b = next;
    }
    cr_assert_eq(tg_tape_size(), 200000);
    tg_release(b);
    cr_assert_eq(tg_tape_size(), 0);
    tg_release(a);
}

TG_TEST(tape, same_tensor_as_both_operands)
{
    /* y = x * x, so dy/dx = 2x: both edges of one node reach x */
    const double xv[] = {3.0, -0.5};
    tg_tensor *x = param(xv, 2);
    tg_tensor *y = tg_mul(x, x);
    cr_assert_eq(backward_ones(y, false), 0);
    assert_grad(x, (double[]){6.0, -1.0});
    tg_release(y);
    tg_release(x);
}

TG_TEST(tape, gradient_through_broadcasting)
{
    /* y = W * b with W (2, 3), b (3,) broadcast over rows:
     * dL/db[j] = sum_i W[i, j] and dL/dW[i, j] = b[j] */
    tg_tensor *W = tg_from_array((double[]){1, 2, 3, 4, 5, 6},
                                 TG_SHAPE(2, 3), TG_FLOAT64);
    tg_set_requires_grad(W, true);
    tg_tensor *b = param((double[]){10, 20, 30}, 3);
    tg_tensor *y = tg_mul(W, b);
    cr_assert_eq(backward_ones(y, false), 0);
    assert_grad(b, (double[]){5, 7, 9});
    assert_grad(W, (double[]){10, 20, 30, 10, 20, 30});
    tg_release(y);
    tg_release(b);
    tg_release(W);
}

TG_TEST(tape, leaf_gradients_accumulate)
{
    /* Two backwards of y = 3w add up; zero_grad starts over. */
    tg_tensor *w = param((double[]){1, 2}, 2);
    for (int k = 0; k < 2; k++) {
        tg_tensor *y = tg_mul_scalar(w, 3.0);
        cr_assert_eq(backward_ones(y, false), 0);
        tg_release(y);
    }
    tg_tensor *grad = w->grad;
    assert_grad(w, (double[]){6, 6});
    tg_zero_grad(w);
    assert_grad(w, (double[]){0, 0});
    tg_tensor *y = tg_mul_scalar(w, 3.0);
    cr_assert_eq(backward_ones(y, false), 0);
    assert_grad(w, (double[]){3, 3});
    cr_assert_eq(w->grad, grad, "accumulation keeps the grad tensor");
    tg_clear_grad(w);
    cr_assert_null(w->grad);
    tg_release(y);
    tg_release(w);
}

TG_TEST(tape, backward_frees_the_tape_unless_kept)
{
    tg_tensor *w = param((double[]){1, 2}, 2);
    tg_tensor *y = tg_mul(w, w);
    tg_tensor *L = tg_add(y, y);
    cr_assert_eq(tg_tape_size(), 2);
    cr_assert_eq(backward_ones(L, true), 0);
    cr_assert_eq(backward_ones(L, false), 0, "%s", tg_last_error());
    assert_grad(w, (double[]){8, 16}); // 2 * (4w)
    cr_assert_eq(backward_ones(L, false), -1);
    tg_assert_error("tg_backward", "already freed", "MulBackward0",
                    "keep_tape");
    /* The walked nodes stay while their outputs live. */
    cr_assert_eq(tg_tape_size(), 2);
    tg_release(L);
    cr_assert_eq(tg_tape_size(), 1);
    tg_release(y);
    cr_assert_eq(tg_tape_size(), 0);
    tg_release(w);
}

TG_TEST(tape, memory_returns_to_baseline_over_iterations)
{
    tg_tensor *w = param((double[]){0.5, -0.25, 2.0}, 3);
    tg_tensor *x = vec((double[]){1, 2, 3}, 3);
    int64_t tensors = tg_live_tensors(), storages = tg_live_storages();
    for (int step = 0; step < 200; step++) {
        tg_tensor *h = tg_mul(w, x);
        tg_tensor *h2 = tg_mul(h, h);
        tg_tensor *L = tg_add_scalar(h2, 1.0);
        cr_assert_eq(backward_ones(L, false), 0);
        tg_release(L);
        tg_release(h2);
        tg_release(h);
        cr_assert_eq(tg_tape_size(), 0, "step %d", step);
        /* w->grad appears at step 0, then is reused */
        cr_assert_eq(tg_live_tensors(), tensors + 1, "step %d", step);
        cr_assert_eq(tg_live_storages(), storages + 1, "step %d", step);
        tg_zero_grad(w);
    }
    tg_release(x);
    tg_release(w);
}

TG_TEST(tape, unused_forward_frees_itself)
{
    tg_tensor *w = param((double[]){1, 2}, 2);
    tg_tensor *a = tg_mul(w, w);
    tg_tensor *b = tg_add(a, w);
    tg_release(a); // b's node still needs a's node
    cr_assert_eq(tg_tape_size(), 2);
    tg_release(b);
    cr_assert_eq(tg_tape_size(), 0);
    tg_release(w);
}

TG_TEST(tape, in_place_change_of_a_saved_tensor_is_caught)
{
    tg_tensor *w = param((double[]){1, 2}, 2);
    tg_tensor *x = vec((double[]){3, 4}, 2);
    tg_tensor *y = tg_mul(w, x); // saves x
    tg_fill_(x, 7.0);
    cr_assert_eq(backward_ones(y, false), -1);
    tg_assert_error("tg_backward", "saved by MulBackward0",
                    "modified in place", "version 1", "tg_clone");
    cr_assert_null(w->grad, "nothing accumulated before the error");
    /* The tape is intact: restore nothing, but a fresh forward works. */
    tg_release(y);
    y = tg_mul(w, x);
    cr_assert_eq(backward_ones(y, false), 0);
    assert_grad(w, (double[]){7, 7});
    tg_release(y);
    tg_release(x);
    tg_release(w);
}

TG_TEST(tape, no_grad_scopes_nest)
{
    tg_tensor *w = param((double[]){1, 2}, 2);
    cr_assert(tg_is_grad_enabled());
    tg_no_grad_begin();
    tg_no_grad_begin();
    tg_no_grad_end();
    cr_assert_not(tg_is_grad_enabled(), "still inside the outer scope");
    tg_tensor *y = tg_mul(w, w);
    cr_assert_not(y->requires_grad);
    cr_assert_null(y->grad_fn);
    cr_assert_eq(tg_tape_size(), 0);
    tg_no_grad_end();
    cr_assert(tg_is_grad_enabled());
    tg_no_grad_end(); // unbalanced end is harmless
    cr_assert(tg_is_grad_enabled());
    tg_tensor *z = tg_mul(w, w);
    cr_assert(z->requires_grad);
    tg_release(z);
    tg_release(y);
    tg_release(w);
}

TG_TEST(tape, detach_shares_data_without_history)
{
    tg_tensor *w = param((double[]){1, 2}, 2);
    tg_tensor *y = tg_mul(w, w);
    tg_tensor *d = tg_detach(y);
    cr_assert_not(d->requires_grad);
    cr_assert_null(d->grad_fn);
    cr_assert_eq(d->storage, y->storage);
    tg_tensor *z = tg_mul(d, w); // only the w path is differentiated
    cr_assert_eq(backward_ones(z, false), 0);
    assert_grad(w, (double[]){1, 4}); // d = w*w held constant
    tg_release(z);
    tg_release(d);
    tg_release(y);
    tg_release(w);
}

TG_TEST(tape, retain_grad_keeps_a_non_leaf_gradient)
{
    tg_tensor *w = param((double[]){1, -3}, 2);
    tg_tensor *h = tg_mul_scalar(w, 2.0);
    tg_tensor *k = tg_mul_scalar(w, 2.0);
    cr_assert_eq(tg_retain_grad(h), 0);
    tg_tensor *L = tg_mul(h, h);
    tg_tensor *M = tg_add(L, k);
    cr_assert_eq(backward_ones(M, false), 0);
    assert_grad(h, (double[]){4, -12}); // 2h
    cr_assert_null(k->grad, "k did not ask to retain its grad");
    assert_grad(w, (double[]){8 + 2, -24 + 2});
    cr_assert_not(tg_is_leaf(h));
    cr_assert(tg_is_leaf(w));
    tg_release(M);
    tg_release(L);
    tg_release(k);
    tg_release(h);
    tg_release(w);
}

TG_TEST(tape, backward_from_a_leaf_and_from_a_scalar)
{
    tg_tensor *w = tg_scalar(2.0, TG_FLOAT64);
    tg_set_requires_grad(w, true);
    cr_assert_eq(tg_backward(w), 0);
    cr_assert_eq(tg_item(w->grad), 1.0);
    tg_tensor *y = tg_mul(w, w);
    cr_assert_eq(tg_backward(y), 0, "%s", tg_last_error());
    cr_assert_eq(tg_item(w->grad), 1.0 + 4.0);
    tg_release(y);
    tg_release(w);
}

TG_TEST(tape, gradients_take_the_leaf_dtype)
{
    /* float32 w times float64 x is float64; w->grad is float32 */
    tg_tensor *w = tg_from_array((float[]){1.5f, 2.5f}, TG_SHAPE(2),
                                 TG_FLOAT32);
    tg_set_requires_grad(w, true);
    tg_tensor *x = vec((double[]){0.1, 0.2}, 2);
    tg_tensor *y = tg_mul(w, x);
    cr_assert_eq(y->dtype, TG_FLOAT64);
    cr_assert_eq(backward_ones(y, false), 0);
    cr_assert_eq(w->grad->dtype, TG_FLOAT32);
    cr_assert_eq(tg_data_f32(w->grad)[0], 0.1f);
    cr_assert_eq(tg_data_f32(w->grad)[1], 0.2f);
    tg_release(y);
    tg_release(x);
    tg_release(w);
}

TG_TEST(tape, prints_grad_fn_like_pytorch)
{
    /* torch.tensor([1., 2.], requires_grad=True) * 2, and + 1 */
    tg_tensor *leaf = tg_from_array((float[]){1, 2}, TG_SHAPE(2), TG_FLOAT32);
    tg_set_requires_grad(leaf, true);
    tg_tensor *y = tg_mul_scalar(leaf, 2.0);
    tg_tensor *z = tg_add_scalar(leaf, 1.0);
    char *s = tg_format(leaf);
    cr_assert_str_eq(s, "tensor([1., 2.], requires_grad=True)");
    free(s);
    s = tg_format(y);
    cr_assert_str_eq(s, "tensor([2., 4.], grad_fn=<MulBackward0>)");
    free(s);
    s = tg_format(z);
    cr_assert_str_eq(s, "tensor([2., 3.], grad_fn=<AddBackward0>)");
    free(s);
    cr_assert_str_eq(tg_grad_fn_name(y), "MulBackward0");
    cr_assert_null(tg_grad_fn_name(leaf));
    tg_release(z);
    tg_release(y);
    tg_release(leaf);
}

TG_TEST(tape, errors)
{
    tg_tensor *i = tg_zeros(TG_SHAPE(2), TG_INT64);
    cr_assert_eq(tg_set_requires_grad(i, true), -1);
    tg_assert_error("tg_set_requires_grad", "int64", "float32 and float64",
                    "tg_to_dtype");
    cr_assert_eq(tg_set_requires_grad(i, false), 0);

    tg_tensor *c = tg_ones(TG_SHAPE(2), TG_FLOAT64);
    cr_assert_eq(tg_backward(c), -1);
    tg_assert_error("tg_backward", "does not require grad",
                    "tg_set_requires_grad");
    cr_assert_eq(tg_retain_grad(c), -1);
    tg_assert_error("tg_retain_grad", "does not require grad");

    tg_tensor *w = param((double[]){1, 2}, 2);
    tg_tensor *y = tg_mul(w, w);
    cr_assert_eq(tg_backward(y), -1);
    tg_assert_error("tg_backward", "shape (2,)", "one-element", "tg_sum");
    tg_tensor *g = tg_ones(TG_SHAPE(3), TG_FLOAT64);
    cr_assert_eq(tg_backward_ex(y, &(tg_backward_options){.grad = g}), -1);
    tg_assert_error("tg_backward", "gradient has shape (3,)",
                    "tensor has shape (2,)");
    tg_tensor *gi = tg_ones(TG_SHAPE(2), TG_INT64);
    cr_assert_eq(tg_backward_ex(y, &(tg_backward_options){.grad = gi}), -1);
    tg_assert_error("tg_backward", "int64");
    cr_assert_eq(tg_set_requires_grad(y, false), -1);
    tg_assert_error("tg_set_requires_grad", "MulBackward0", "tg_detach");
    cr_assert_eq(tg_set_requires_grad(y, true), 0);
    cr_assert_null(w->grad, "failed backwards accumulate nothing");

    cr_assert_eq(tg_backward(NULL), -1);
    cr_assert_eq(tg_set_requires_grad(NULL, true), -1);
    cr_assert_null(tg_detach(NULL));
    tg_zero_grad(NULL);
    tg_clear_grad(NULL);
    tg_release(gi);
    tg_release(g);
    tg_release(y);
    tg_release(w);
    tg_release(c);
    tg_release(i);
}

/* One SGD step under no_grad: w -= lr * w->grad, in place. */
static void sgd_step(tg_tensor *w, double lr)
{
    tg_no_grad_begin();
    tg_tensor *step = tg_mul_scalar(w->grad, lr);
    tg_tensor *next = tg_sub(w, step);
    tg_copy_(w, next);
    tg_release(next);
    tg_release(step);
    tg_no_grad_end();
    tg_zero_grad(w);
}

TG_TEST(tape, training_loop_holds_memory_flat)
{
    /* A 3 -> 8 -> 1 tanh network fitting a fixed batch: after the first
     * step (which creates each .grad) the counts of live tensors, storages
     * and tape nodes must not move, and the loss must fall. */
    tg_generator *gen = tg_generator_new(3);
    tg_tensor *x = tg_randn_gen(gen, TG_SHAPE(16, 3), TG_FLOAT64);
    tg_tensor *y = tg_randn_gen(gen, TG_SHAPE(16, 1), TG_FLOAT64);
    tg_tensor *w1 = tg_randn_gen(gen, TG_SHAPE(3, 8), TG_FLOAT64);
    tg_tensor *b1 = tg_zeros(TG_SHAPE(8), TG_FLOAT64);
    tg_tensor *w2 = tg_randn_gen(gen, TG_SHAPE(8, 1), TG_FLOAT64);
    tg_tensor *params[] = {w1, b1, w2};
    for (int i = 0; i < 3; i++)
        tg_set_requires_grad(params[i], true);
    int64_t tensors = 0, storages = 0;
    double first = 0, last = 0;
    for (int step = 0; step < 300; step++) {
        tg_tensor *xw = tg_matmul(x, w1);
        tg_tensor *pre = tg_add(xw, b1);
        tg_tensor *h = tg_tanh(pre);
        tg_tensor *p = tg_matmul(h, w2);
        tg_tensor *d = tg_sub(p, y);
        tg_tensor *d2 = tg_mul(d, d);
        tg_tensor *loss = tg_mean(d2, NULL, 0, false);
        cr_assert(loss, "%s", tg_last_error());
        cr_assert_eq(tg_backward(loss), 0, "%s", tg_last_error());
        last = tg_item(loss);
        if (step == 0)
            first = last;
        tg_tensor *tmp[] = {xw, pre, h, p, d, d2, loss};
        for (int i = 0; i < 7; i++)
            tg_release(tmp[i]);
        for (int i = 0; i < 3; i++)
            sgd_step(params[i], 0.05);
        cr_assert_eq(tg_tape_size(), 0, "step %d", step);
        if (step == 1) {
            tensors = tg_live_tensors();
            storages = tg_live_storages();
        } else if (step > 1) {
            cr_assert_eq(tg_live_tensors(), tensors, "step %d", step);
            cr_assert_eq(tg_live_storages(), storages, "step %d", step);
        }
    }
    cr_assert_lt(last, 0.5 * first, "loss %g -> %g", first, last);
    for (int i = 0; i < 3; i++)
        tg_release(params[i]);
    tg_release(y);
    tg_release(x);
    tg_generator_free(gen);
}

TG_TEST(tape, a_grad_set_by_hand_must_match)
{
    tg_tensor *w = param((double[]){1, 2, 3}, 3);
    tg_tensor *y = tg_mul(w, w);
    w->grad = tg_zeros(TG_SHAPE(2, 3), TG_FLOAT64);
    cr_assert_eq(backward_ones(y, true), -1);
    tg_assert_error("tg_backward", "a leaf, is float64 of shape (3,)",
                    "float64 of shape (2, 3)", "tg_clear_grad");
    tg_clear_grad(w);
    w->grad = tg_zeros(TG_SHAPE(3), TG_INT64);
    cr_assert_eq(backward_ones(y, true), -1);
    tg_assert_error("tg_backward", "int64 of shape (3,)");
    tg_clear_grad(w);
    cr_assert_eq(backward_ones(y, false), 0, "%s", tg_last_error());
    assert_grad(w, (double[]){2, 4, 6});
    tg_release(y);
    tg_release(w);
}

TG_TEST(tape, backward_to_chosen_inputs_only)
{
    /* as torch.autograd.grad(L, [a]): b's grad and h's retained grad stay
     * untouched */
    tg_tensor *a = param((double[]){1, 2}, 2);
    tg_tensor *b = param((double[]){3, 4}, 2);
    tg_tensor *h = tg_mul(a, b);
    tg_retain_grad(h);
    tg_tensor *g = tg_ones_like(h);
    tg_tensor *only_a[] = {a};
    tg_backward_options o = {.grad = g, .inputs = only_a, .ninputs = 1};
    cr_assert_eq(tg_backward_ex(h, &o), 0);
    assert_grad(a, (double[]){3, 4});
    cr_assert_null(b->grad);
    cr_assert_null(h->grad);
    tg_release(g);
    tg_release(h);
    tg_release(b);
    tg_release(a);
}

TG_TEST(tape, a_second_backward_may_pass_nodes_that_saved_nothing)
{
    /* As PyTorch: backward releases saved tensors, so only nodes that
     * saved some refuse a second walk. y = w + w saves nothing. */
    tg_tensor *w = param((double[]){1, 2}, 2);
    tg_tensor *y = tg_add(w, w);
    tg_tensor *L1 = tg_add_scalar(y, 1.0);
    tg_tensor *L2 = tg_mul(y, y);
    cr_assert_eq(backward_ones(L1, false), 0);
    cr_assert_eq(backward_ones(L1, false), 0, "%s", tg_last_error());
    cr_assert_eq(backward_ones(L2, false), 0, "%s", tg_last_error());
    assert_grad(w, (double[]){2 + 2 + 8 * 1, 2 + 2 + 8 * 2}); // 2y * 2
    cr_assert_eq(backward_ones(L2, false), -1);
    tg_assert_error("tg_backward", "MulBackward0", "already freed");
    tg_release(L2);
    tg_release(L1);
    tg_release(y);
    tg_release(w);
}

TG_TEST(tape, in_place_writes_into_the_graph_are_refused)
{
    /* The tape cannot see in-place writes: PyTorch refuses them on leaves
     * that require grad, and records them on other tensors; tapegrad
     * refuses both while gradients are enabled. */
    tg_tensor *w = param((double[]){1, 2, 3}, 3);
    tg_tensor *y = tg_mul_scalar(w, 2.0);
    cr_assert_eq(tg_set(y, (int64_t[]){0}, 1, 5.0), -1);
    tg_assert_error("tg_set", "made by MulBackward0", "tg_where",
                    "tg_detach");
    cr_assert_eq(tg_fill_(w, 0.0), -1);
    tg_assert_error("tg_fill_", "leaf that requires grad",
                    "tg_no_grad_begin");
    tg_tensor *z = tg_zeros(TG_SHAPE(3), TG_FLOAT64);
    cr_assert_eq(tg_copy_(y, z), -1);
    tg_assert_error("tg_copy_", "MulBackward0");
    cr_assert_eq(tg_uniform_(w, 0, 1, NULL), -1);
    tg_assert_error("tg_uniform_", "leaf that requires grad");
    cr_assert_eq(tg_normal_(y, 0, 1, NULL), -1);
    tg_assert_error("tg_normal_", "made by MulBackward0");
    /* Allowed: under no_grad (an optimiser step), and into a detached
     * alias (no gradient flows through it by choice). */
    tg_no_grad_begin();
    cr_assert_eq(tg_fill_(w, 1.0), 0);
    tg_no_grad_end();
    tg_tensor *d = tg_detach(z);
    cr_assert_eq(tg_fill_(d, 3.0), 0);
    tg_release(d);
    tg_release(z);
    tg_release(y);
    tg_release(w);
}
