/*
 * tests/autograd/test_function.c - user-defined differentiable functions
 * (tg_function): recording, saving, parameters, and each way a user's
 * forward or backward can go wrong.
 */
#include "../common.h"

/* y = scale * x^2, backward dy/dx = 2 scale x; scale comes in args and is
 * kept in the function's data block. */
typedef struct square_data {
    double scale;
} square_data;

static tg_tensor *square_forward(tg_ctx *ctx, const tg_tensor *const *in,
                                 int n, const void *args)
{
    (void)n;
    square_data *d = tg_ctx_data(ctx);
    d->scale = args ? *(const double *)args : 1.0;
    tg_ctx_save(ctx, in[0]);
    tg_tensor *sq = tg_mul(in[0], in[0]);
    tg_tensor *y = tg_mul_scalar(sq, d->scale);
    tg_release(sq);
    return y;
}

static int square_backward(tg_ctx *ctx, const tg_tensor *g, tg_tensor **gi)
{
    const square_data *d = tg_ctx_data(ctx);
    tg_tensor *two_x = tg_mul_scalar(tg_ctx_saved(ctx, 0), 2.0 * d->scale);
    gi[0] = tg_mul(g, two_x);
    tg_release(two_x);
    return gi[0] ? 0 : -1;
}

static const tg_function square = {"ScaledSquareBackward", square_forward,
                                   square_backward, sizeof(square_data)};

static tg_tensor *apply_square(const tg_tensor *x, double scale)
{
    return tg_function_apply(&square, &x, 1, &scale);
}

static tg_tensor *f_square(const tg_tensor *const *x, int n, void *user)
{
    (void)n;
    return apply_square(x[0], *(double *)user);
}

static tg_tensor *param(void)
{
    tg_tensor *x = tg_from_array((double[]){1.5, -2.0, 0.5}, TG_SHAPE(3),
                                 TG_FLOAT64);
    tg_set_requires_grad(x, true);
    return x;
}

TG_TEST(function, records_and_differentiates)
{
    tg_tensor *x = param();
    tg_tensor *y = apply_square(x, 3.0);
    cr_assert(y->requires_grad);
    cr_assert_str_eq(tg_grad_fn_name(y), "ScaledSquareBackward");
    cr_assert_eq(tg_tape_size(), 1, "one node, not the ops inside forward");
    tg_tensor *g = tg_ones_like(y);
    cr_assert_eq(tg_backward_ex(y, &(tg_backward_options){.grad = g}), 0);
    tg_tensor *e = tg_from_array((double[]){9.0, -12.0, 3.0}, TG_SHAPE(3),
                                 TG_FLOAT64);
    tg_assert_close(x->grad, e, 0, 0);
    double scale = 0.5;
    tg_gradcheck_result r;
    cr_assert_eq(tg_gradcheck(f_square, &scale, &x, 1, NULL, &r), 1, "%s",
                 r.message);
    tg_release(e);
    tg_release(g);
    tg_release(y);
    tg_release(x);
    cr_assert_eq(tg_tape_size(), 0);
}

TG_TEST(function, not_recorded_without_grad)
{
    tg_tensor *c = tg_ones(TG_SHAPE(3), TG_FLOAT64);
    tg_tensor *y = apply_square(c, 2.0);
    cr_assert_not(y->requires_grad);
    cr_assert_eq(tg_tape_size(), 0);
    tg_tensor *x = param();
    tg_no_grad_begin();
    tg_tensor *z = apply_square(x, 2.0);
    tg_no_grad_end();
    cr_assert_not(z->requires_grad);
    cr_assert_eq(tg_tape_size(), 0);
    tg_release(z);
    tg_release(x);
    tg_release(y);
    tg_release(c);
}

/* A forward that returns its input unchanged: the output still gets a
 * tensor of its own to carry the node. */
static tg_tensor *id_forward(tg_ctx *ctx, const tg_tensor *const *in, int n,
                             const void *args)
{
    (void)ctx, (void)n, (void)args;
    return tg_retain((tg_tensor *)in[0]);
}

static int id_backward(tg_ctx *ctx, const tg_tensor *g, tg_tensor **gi)
{
    (void)ctx;
    gi[0] = tg_retain((tg_tensor *)g);
    return 0;
}

static const tg_function identity = {"IdentityBackward", id_forward,
                                     id_backward, 0};

TG_TEST(function, forward_may_return_its_input)
{
    tg_tensor *x = param();
    const tg_tensor *in = x;
    tg_tensor *y = tg_function_apply(&identity, &in, 1, NULL);
    cr_assert_neq(y, x);
    cr_assert_eq(y->storage, x->storage);
    cr_assert_null(x->grad_fn, "x stays a leaf");
    cr_assert_str_eq(tg_grad_fn_name(y), "IdentityBackward");
    tg_tensor *z = tg_mul(y, y);
    tg_tensor *g = tg_ones_like(z);
    cr_assert_eq(tg_backward_ex(z, &(tg_backward_options){.grad = g}), 0);
    tg_tensor *e = tg_mul_scalar(x, 2.0);
    tg_no_grad_begin();
    tg_tensor *ed = tg_detach(e);
    tg_no_grad_end();
    tg_assert_close(x->grad, ed, 0, 0);
    tg_release(ed);
    tg_release(e);
    tg_release(g);
    tg_release(z);
    tg_release(y);
    tg_release(x);
}

/* The ways a user's function can fail. */
static tg_tensor *failing_forward(tg_ctx *ctx, const tg_tensor *const *in,
                                  int n, const void *args)
{
    (void)n, (void)args;
    tg_ctx_save(ctx, in[0]);
    return tg_reshape(in[0], TG_SHAPE(7)); // wrong size: an error
}

static int failing_backward(tg_ctx *ctx, const tg_tensor *g, tg_tensor **gi)
{
    (void)ctx, (void)g, (void)gi;
    tg_error("my_backward", "something went wrong\n  rule: none");
    return -1;
}

static int wrong_shape_backward(tg_ctx *ctx, const tg_tensor *g,
                                tg_tensor **gi)
{
    (void)ctx, (void)g;
    gi[0] = tg_zeros(TG_SHAPE(2, 2), TG_FLOAT64);
    return 0;
}

static int save_too_many(tg_ctx *ctx, const tg_tensor *x)
{
    int last = 0;
    for (int i = 0; i <= TG_MAX_SAVED; i++)
        last = tg_ctx_save(ctx, x);
    return last;
}

static tg_tensor *greedy_forward(tg_ctx *ctx, const tg_tensor *const *in,
                                 int n, const void *args)
{
    (void)n, (void)args;
    cr_assert_eq(save_too_many(ctx, in[0]), -1);
    return tg_clone(in[0]);
}

TG_TEST(function, failures_are_reported_and_leak_nothing)
{
    tg_tensor *x = param();
    const tg_tensor *in = x;
    tg_function f = {"FailingBackward", failing_forward, failing_backward,
                     sizeof(square_data)};
    cr_assert_null(tg_function_apply(&f, &in, 1, NULL));
    tg_assert_error("tg_reshape");
    cr_assert_eq(tg_tape_size(), 0);

    f.forward = square_forward;
    double one = 1.0;
    tg_tensor *y = tg_function_apply(&f, &in, 1, &one);
    cr_assert_eq(tg_backward_ex(y, &(tg_backward_options){.grad = x}), -1);
    tg_assert_error("my_backward", "something went wrong");
    cr_assert_null(x->grad);
    tg_release(y);

    f.backward = wrong_shape_backward;
    y = tg_function_apply(&f, &in, 1, &one);
    cr_assert_eq(tg_backward_ex(y, &(tg_backward_options){.grad = x}), -1);
    tg_assert_error("tg_backward", "FailingBackward gave a gradient of shape "
                    "(2, 2) for its input 0 of shape (3,)");
    tg_release(y);

    f.forward = greedy_forward;
    f.backward = id_backward;
    y = tg_function_apply(&f, &in, 1, NULL);
    cr_assert_eq(tg_backward_ex(y, &(tg_backward_options){.grad = x}), -1);
    tg_assert_error("tg_backward", "could not keep a tensor", "at most 8");
    tg_release(y);

    f.forward = square_forward;
    f.backward = square_backward;
    y = tg_function_apply(&f, &in, 1, &one);
    tg_no_grad_begin(); // a leaf that requires grad changes only here
    tg_fill_(x, 0.0);   // the saved input changes before backward
    tg_no_grad_end();
    cr_assert_eq(tg_backward_ex(y, &(tg_backward_options){.grad = x}), -1);
    tg_assert_error("tg_backward", "saved by FailingBackward",
                    "modified in place");
    tg_release(y);
    tg_release(x);
    cr_assert_eq(tg_tape_size(), 0);
}

TG_TEST(function, bad_definitions)
{
    tg_tensor *x = param();
    const tg_tensor *in[TG_MAX_INPUTS + 1];
    for (int i = 0; i <= TG_MAX_INPUTS; i++)
        in[i] = x;
    cr_assert_null(tg_function_apply(NULL, in, 1, NULL));
    tg_assert_error("tg_function_apply", "NULL", "needs a name");
    tg_function f = {"NoBackward", square_forward, NULL, 0};
    cr_assert_null(tg_function_apply(&f, in, 1, NULL));
    tg_assert_error("tg_function_apply", "missing its backward");
    cr_assert_null(tg_function_apply(&square, in, TG_MAX_INPUTS + 1, NULL));
    tg_assert_error("tg_function_apply", "given 9 inputs", "0 to 8");
    in[0] = NULL;
    tg_clear_error();
    const tg_tensor *none = NULL;
    cr_assert_null(tg_function_apply(&square, &none, 1, NULL));
    cr_assert_str_eq(tg_last_error(), "", "a NULL input fails silently");
    in[0] = x;
    cr_assert_eq(tg_ctx_save(NULL, x), -1);
    cr_assert_null(tg_ctx_saved(NULL, 0));
    cr_assert_not(tg_ctx_needs_grad(NULL, 0));
    cr_assert_null(tg_ctx_data(NULL));
    tg_tensor *y = tg_function_apply(&identity, in, 1, NULL);
    cr_assert_null(tg_ctx_data(y->grad_fn), "identity asked for no data");
    tg_release(y);
    tg_release(x);
}

/* A forward that returns a tensor the program still holds (a cache). */
static tg_tensor *cache;

static tg_tensor *cached_forward(tg_ctx *ctx, const tg_tensor *const *in,
                                 int n, const void *args)
{
    (void)ctx, (void)in, (void)n, (void)args;
    return tg_retain(cache);
}

/* A backward that starts another backward: not allowed. */
static tg_tensor *other_root;

static int nested_backward(tg_ctx *ctx, const tg_tensor *g, tg_tensor **gi)
{
    (void)ctx;
    if (tg_backward(other_root) < 0)
        return -1;
    gi[0] = tg_retain((tg_tensor *)g);
    return 0;
}

static int silent_backward(tg_ctx *ctx, const tg_tensor *g, tg_tensor **gi)
{
    (void)ctx, (void)g, (void)gi;
    return -1; // forgot to say why
}

TG_TEST(function, misuse_is_caught)
{
    tg_tensor *x = param();
    const tg_tensor *in = x;

    cache = tg_ones(TG_SHAPE(3), TG_FLOAT64);
    tg_function f = {"CachedBackward", cached_forward, id_backward, 0};
    tg_tensor *y = tg_function_apply(&f, &in, 1, NULL);
    cr_assert_neq(y, cache, "the output is a tensor of its own");
    cr_assert(tg_is_leaf(cache));
    cr_assert_not(cache->requires_grad);
    tg_release(y);
    tg_release(cache);

    tg_tensor *sq = tg_mul(x, x);
    other_root = tg_sum(sq, NULL, 0, false);
    f = (tg_function){"NestedBackward", id_forward, nested_backward, 0};
    y = tg_function_apply(&f, &in, 1, NULL);
    cr_assert_eq(tg_backward_ex(y, &(tg_backward_options){.grad = x}), -1);
    tg_assert_error("tg_backward", "inside the backward of NestedBackward",
                    "tg_ctx_save");
    tg_release(y);
    tg_release(other_root);
    tg_release(sq);

    f = (tg_function){"SilentBackward", id_forward, silent_backward, 0};
    y = tg_function_apply(&f, &in, 1, NULL);
    cr_assert_eq(tg_backward_ex(y, &(tg_backward_options){.grad = x}), -1);
    tg_assert_error("tg_backward", "SilentBackward failed without saying why");
    tg_release(y);

    cr_assert_null(tg_function_apply(&square, NULL, 1, NULL));
    tg_assert_error("tg_function_apply", "no array");
    cr_assert_null(x->grad);
    tg_release(x);
}
