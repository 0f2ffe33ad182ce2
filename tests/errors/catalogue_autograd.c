/*
 * tests/errors/catalogue_autograd.c - the errors of autograd/autograd.h, one
 * ERROR_CASE per row of docs/errors.md (see catalogue.h), in the order of
 * the header's sections.
 *
 * The custom functions and gradcheck targets below are small on purpose:
 * each one makes exactly one mistake (a backward that fails without a
 * message, a forward that saves too much, an f whose output shrinks, ...).
 * Not here: the ops of autograd/ops.h (catalogue_ops.c).
 */
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L // pthread barriers
#endif

#include "catalogue.h"

#include <math.h>
#include <stdint.h>
#include <pthread.h>

/* A float64 leaf (3,) that requires grad. */
static tg_tensor *leaf3(void)
{
    tg_tensor *x = tg_from_array((double[]){1.5, -2.0, 0.5}, TG_SHAPE(3),
                                 TG_FLOAT64);
    tg_set_requires_grad(x, true);
    return x;
}

/* ------------------------------------------------ custom functions used */

static tg_tensor *id_forward(tg_ctx *ctx, const tg_tensor *const *in, int n,
                             const void *args)
{
    (void)ctx, (void)n, (void)args;
    return tg_clone(in[0]);
}

static int id_backward(tg_ctx *ctx, const tg_tensor *g, tg_tensor **gi)
{
    (void)ctx;
    gi[0] = tg_retain((tg_tensor *)g);
    return 0;
}

/* Saves x once more than a node can hold; returns the last result. */
static int save_too_many(tg_ctx *ctx, const tg_tensor *x)
{
    int rc = 0;
    for (int i = 0; i <= TG_MAX_SAVED; i++)
        rc = tg_ctx_save(ctx, x);
    return rc;
}

/* Ignores the failed save and returns its output anyway. */
static tg_tensor *greedy_forward(tg_ctx *ctx, const tg_tensor *const *in,
                                 int n, const void *args)
{
    (void)n, (void)args;
    (void)save_too_many(ctx, in[0]);
    return tg_clone(in[0]);
}

/* Checks the save and fails, as a forward should. */
static tg_tensor *careful_forward(tg_ctx *ctx, const tg_tensor *const *in,
                                  int n, const void *args)
{
    (void)n, (void)args;
    if (save_too_many(ctx, in[0]) < 0)
        return NULL;
    return tg_clone(in[0]);
}

/* Returns NULL and reports nothing. */
static tg_tensor *silent_forward(tg_ctx *ctx, const tg_tensor *const *in,
                                 int n, const void *args)
{
    (void)ctx, (void)in, (void)n, (void)args;
    return NULL;
}

/* Asks for a saved tensor it never saved. */
static tg_tensor *unsaved_forward(tg_ctx *ctx, const tg_tensor *const *in,
                                  int n, const void *args)
{
    (void)n, (void)args;
    tg_ctx_save(ctx, in[0]);
    if (!tg_ctx_saved(ctx, 1))
        return NULL;
    return tg_clone(in[0]);
}

static int silent_backward(tg_ctx *ctx, const tg_tensor *g, tg_tensor **gi)
{
    (void)ctx, (void)g, (void)gi;
    return -1; // forgot to say why
}

/* Gives a (2, 2) gradient for a (3,) input. */
static int wrong_shape_backward(tg_ctx *ctx, const tg_tensor *g,
                                tg_tensor **gi)
{
    (void)ctx, (void)g;
    gi[0] = tg_ones(TG_SHAPE(2, 2), TG_FLOAT64);
    return 0;
}

/* Writes its input's gradient and one more, past the end. */
static int overstep_backward(tg_ctx *ctx, const tg_tensor *g,
                             tg_tensor **gi)
{
    (void)ctx;
    gi[0] = tg_retain((tg_tensor *)g);
    gi[1] = tg_retain((tg_tensor *)g);
    return 0;
}

/* Starts another backward from inside its own. */
static tg_tensor *other_root;

static int nested_backward(tg_ctx *ctx, const tg_tensor *g, tg_tensor **gi)
{
    (void)ctx;
    if (tg_backward(other_root) < 0)
        return -1;
    gi[0] = tg_retain((tg_tensor *)g);
    return 0;
}

/* Saves a NULL tensor, as a forward does after an op failed; the result
 * of the save is kept for the row to check. */
static int null_save_rc;

static tg_tensor *null_save_forward(tg_ctx *ctx, const tg_tensor *const *in,
                                    int n, const void *args)
{
    (void)n, (void)args;
    null_save_rc = tg_ctx_save(ctx, NULL);
    return tg_clone(in[0]);
}

/* Gives NaN: its output, or its input's gradient. */
static tg_tensor *nan_forward(tg_ctx *ctx, const tg_tensor *const *in, int n,
                              const void *args)
{
    (void)ctx, (void)n, (void)args;
    return tg_mul_scalar(in[0], NAN);
}

static int nan_backward(tg_ctx *ctx, const tg_tensor *g, tg_tensor **gi)
{
    (void)ctx;
    gi[0] = tg_mul_scalar(g, NAN);
    return gi[0] ? 0 : -1;
}

/* A graph recorded on another thread: the worker makes loss = sum(x * 2)
 * from the main thread's leaf x, waits while the main thread uses it, then
 * releases it on its own thread, where it belongs. */
typedef struct foreign_graph {
    tg_tensor *x, *loss;
    pthread_barrier_t made, done;
} foreign_graph;

static void *foreign_worker(void *arg)
{
    foreign_graph *fg = arg;
    tg_set_error_handler(tg_error_handler_quiet);
    tg_tensor *y = tg_mul_scalar(fg->x, 2.0);
    fg->loss = tg_sum(y, NULL, 0, false);
    tg_release(y);
    pthread_barrier_wait(&fg->made);
    pthread_barrier_wait(&fg->done);
    tg_release(fg->loss);
    return NULL;
}

/* Backward of f on x with x's shape as the output gradient. */
static int backward_like(tg_tensor *y, tg_tensor *x)
{
    return tg_backward_ex(y, &(tg_backward_options){.grad = x});
}

/* ------------------------------------------------------ requires_grad */

ERROR_CASE(tg_set_requires_grad, int64_tensor,
           "an int64 tensor is asked to require grad")
{
    tg_tensor *i = tg_zeros(TG_SHAPE(3), TG_INT64);
    EXPECT_ERROR(tg_set_requires_grad(i, true) == -1,
                 "tg_set_requires_grad: an int64 tensor cannot require grad");
    tg_release(i);
}

ERROR_CASE(tg_set_requires_grad, non_leaf,
           "requires_grad is turned off on a tensor made by an op")
{
    tg_tensor *x = leaf3();
    tg_tensor *y = tg_mul_scalar(x, 2.0);
    EXPECT_ERROR(tg_set_requires_grad(y, false) == -1,
                 "tg_set_requires_grad: cannot turn off requires_grad of a "
                 "tensor made by MulBackward0");
    tg_release(y);
    tg_release(x);
}

ERROR_CASE(tg_set_requires_grad, null_tensor,
           "x is NULL (an earlier call failed)")
{
    EXPECT_SILENT(tg_set_requires_grad(NULL, true) == -1);
}

NEVER_FAILS(tg_is_leaf, "answers false for NULL");

ERROR_CASE(tg_retain_grad, no_requires_grad,
           "the tensor does not require grad")
{
    tg_tensor *x = tg_ones(TG_SHAPE(3), TG_FLOAT64);
    EXPECT_ERROR(tg_retain_grad(x) == -1,
                 "tg_retain_grad: the tensor does not require grad, so it "
                 "gets no gradient");
    tg_release(x);
}

ERROR_CASE(tg_retain_grad, null_tensor, "x is NULL (an earlier call failed)")
{
    EXPECT_SILENT(tg_retain_grad(NULL) == -1);
}

NEVER_FAILS(tg_zero_grad, "does nothing for NULL or a tensor without .grad");
NEVER_FAILS(tg_clear_grad, "does nothing for NULL");

ERROR_CASE(tg_detach, null_tensor, "x is NULL (an earlier call failed)")
{
    EXPECT_SILENT(tg_detach(NULL) == NULL);
}

/* ----------------------------------------------------------- backward */

ERROR_CASE(tg_backward, non_scalar_root,
           "the root has more than one element and no gradient is given")
{
    tg_tensor *x = tg_ones((int64_t[]){3}, 1, TG_FLOAT32);
    tg_set_requires_grad(x, true);
    tg_tensor *y = tg_mul_scalar(x, 2.0);
    EXPECT_ERROR(tg_backward(y) == -1,
                 "tg_backward: cannot start from a tensor of shape (3,) "
                 "without its gradient");
    tg_release(y);
    tg_release(x);
}

ERROR_CASE(tg_backward, no_requires_grad,
           "the root does not depend on any tensor that requires grad")
{
    tg_tensor *x = tg_ones(TG_SHAPE(3), TG_FLOAT64);
    tg_tensor *loss = tg_sum(x, NULL, 0, false);
    EXPECT_ERROR(tg_backward(loss) == -1,
                 "tg_backward: the tensor of shape () does not require grad "
                 "and has no grad_fn");
    tg_release(loss);
    tg_release(x);
}

ERROR_CASE(tg_backward, twice_without_keep_tape,
           "a second backward through a graph the first one freed")
{
    tg_tensor *x = leaf3();
    tg_tensor *sq = tg_mul(x, x);
    tg_tensor *loss = tg_sum(sq, NULL, 0, false);
    cr_assert_eq(tg_backward(loss), 0);
    EXPECT_ERROR(tg_backward(loss) == -1,
                 "tg_backward: the tape through MulBackward0 was already "
                 "freed by an earlier backward");
    tg_release(loss);
    tg_release(sq);
    tg_release(x);
}

ERROR_CASE(tg_backward, saved_tensor_modified,
           "a tensor saved for backward was changed in place after the "
           "forward pass (its version counter moved)")
{
    tg_tensor *w = leaf3();
    tg_tensor *a = tg_ones(TG_SHAPE(3), TG_FLOAT64);
    tg_tensor *y = tg_mul(a, w); // saves a and w
    tg_tensor *loss = tg_sum(y, NULL, 0, false);
    cr_assert_eq(tg_fill_(a, 2.0), 0);
    EXPECT_ERROR(tg_backward(loss) == -1,
                 "tg_backward: a tensor of shape (3,) saved by MulBackward0 "
                 "was modified in place after the forward pass");
    tg_release(loss);
    tg_release(y);
    tg_release(a);
    tg_release(w);
}

ERROR_CASE(tg_backward, grad_of_wrong_shape,
           "a .grad set by hand has another shape than its tensor")
{
    tg_tensor *x = leaf3();
    x->grad = tg_zeros(TG_SHAPE(2), TG_FLOAT64);
    tg_tensor *loss = tg_sum(x, NULL, 0, false);
    EXPECT_ERROR(tg_backward(loss) == -1,
                 "tg_backward: input 0 of SumBackward0, a leaf, is float64 "
                 "of shape (3,), but its .grad is float64 of shape (2,)");
    tg_release(loss);
    tg_release(x);
}

ERROR_CASE(tg_backward, inside_a_backward,
           "a custom backward calls tg_backward")
{
    tg_tensor *x = leaf3();
    tg_tensor *sq = tg_mul(x, x);
    other_root = tg_sum(sq, NULL, 0, false);
    const tg_tensor *in = x;
    tg_function f = {"NestedBackward", id_forward, nested_backward, 0};
    tg_tensor *y = tg_function_apply(&f, &in, 1, NULL);
    EXPECT_ERROR(backward_like(y, x) == -1,
                 "tg_backward: called from inside the backward of "
                 "NestedBackward");
    tg_release(y);
    tg_release(other_root);
    tg_release(sq);
    tg_release(x);
}

ERROR_CASE(tg_backward, backward_fails_silently,
           "a custom backward returns -1 without reporting why")
{
    tg_tensor *x = leaf3();
    const tg_tensor *in = x;
    tg_function f = {"SilentBackward", id_forward, silent_backward, 0};
    tg_tensor *y = tg_function_apply(&f, &in, 1, NULL);
    EXPECT_ERROR(backward_like(y, x) == -1,
                 "tg_backward: the backward of SilentBackward failed "
                 "without saying why");
    tg_release(y);
    tg_release(x);
}

ERROR_CASE(tg_backward, backward_wrong_shape,
           "a custom backward returns a gradient of the wrong shape")
{
    tg_tensor *x = leaf3();
    const tg_tensor *in = x;
    tg_function f = {"WrongShapeBackward", id_forward, wrong_shape_backward,
                     0};
    tg_tensor *y = tg_function_apply(&f, &in, 1, NULL);
    EXPECT_ERROR(backward_like(y, x) == -1,
                 "tg_backward: WrongShapeBackward gave a gradient of shape "
                 "(2, 2) for its input 0 of shape (3,)");
    tg_release(y);
    tg_release(x);
}

ERROR_CASE(tg_backward, backward_writes_past_inputs,
           "a custom backward stores a gradient past its inputs "
           "(grad_inputs[i] with i >= the number of inputs)")
{
    tg_tensor *x = leaf3();
    const tg_tensor *in = x;
    tg_function f = {"OverstepBackward", id_forward, overstep_backward, 0};
    tg_tensor *y = tg_function_apply(&f, &in, 1, NULL);
    EXPECT_ERROR(backward_like(y, x) == -1,
                 "tg_backward: the backward of OverstepBackward wrote "
                 "grad_inputs[1], but OverstepBackward has 1 input");
    tg_release(y);
    tg_release(x);
}

ERROR_CASE(tg_backward, saved_too_many,
           "a custom forward went on after tg_ctx_save refused a tensor")
{
    tg_tensor *x = leaf3();
    const tg_tensor *in = x;
    tg_function f = {"GreedyBackward", greedy_forward, id_backward, 0};
    tg_tensor *y = tg_function_apply(&f, &in, 1, NULL);
    cr_assert_not_null(y);
    EXPECT_ERROR(backward_like(y, x) == -1,
                 "tg_backward: GreedyBackward could not keep a tensor it "
                 "needs for backward");
    tg_release(y);
    tg_release(x);
}

ERROR_CASE(tg_backward, anomaly_in_backward,
           "with anomaly detection on, a backward gives a NaN or infinite "
           "gradient")
{
    tg_tensor *x = leaf3();
    const tg_tensor *in = x;
    tg_function f = {"NanGradBackward", id_forward, nan_backward, 0};
    tg_tensor *y = tg_function_apply(&f, &in, 1, NULL);
    tg_set_detect_anomaly(true);
    int rc = backward_like(y, x);
    tg_set_detect_anomaly(false);
    EXPECT_ERROR(rc == -1,
                 "tg_backward: the backward of NanGradBackward gave nan at "
                 "index 0 of the gradient of its input 0, float64 (3,), with "
                 "anomaly detection on");
    tg_release(y);
    tg_release(x);
}

ERROR_CASE(tg_backward, root_of_another_thread,
           "the root was computed on another thread (a graph belongs to "
           "the thread that recorded it)")
{
    foreign_graph fg = {.x = leaf3()};
    pthread_barrier_init(&fg.made, NULL, 2);
    pthread_barrier_init(&fg.done, NULL, 2);
    pthread_t worker;
    cr_assert_eq(pthread_create(&worker, NULL, foreign_worker, &fg), 0);
    pthread_barrier_wait(&fg.made);
    int rc = tg_backward(fg.loss);
    pthread_barrier_wait(&fg.done);
    pthread_join(worker, NULL);
    pthread_barrier_destroy(&fg.made);
    pthread_barrier_destroy(&fg.done);
    EXPECT_ERROR(rc == -1, "tg_backward: the root was made by SumBackward0 "
                           "on another thread");
    tg_release(fg.x);
}

ERROR_CASE(tg_backward, null_root, "root is NULL (an earlier call failed)")
{
    EXPECT_SILENT(tg_backward(NULL) == -1);
}

ERROR_CASE(tg_backward_ex, grad_shape_mismatch,
           "the given gradient has another shape than the root")
{
    tg_tensor *x = leaf3();
    tg_tensor *y = tg_mul_scalar(x, 2.0);
    tg_tensor *g = tg_ones(TG_SHAPE(2), TG_FLOAT64);
    EXPECT_ERROR(tg_backward_ex(y, &(tg_backward_options){.grad = g}) == -1,
                 "tg_backward: the gradient has shape (2,) but the tensor "
                 "has shape (3,)");
    tg_release(g);
    tg_release(y);
    tg_release(x);
}

ERROR_CASE(tg_backward_ex, grad_not_float, "the given gradient is int64")
{
    tg_tensor *x = leaf3();
    tg_tensor *y = tg_mul_scalar(x, 2.0);
    tg_tensor *g = tg_ones(TG_SHAPE(3), TG_INT64);
    EXPECT_ERROR(tg_backward_ex(y, &(tg_backward_options){.grad = g}) == -1,
                 "tg_backward: the gradient is int64");
    tg_release(g);
    tg_release(y);
    tg_release(x);
}

ERROR_CASE(tg_backward_ex, inputs_null,
           "ninputs is set but the inputs array is NULL")
{
    tg_tensor *x = leaf3();
    tg_tensor *loss = tg_sum(x, NULL, 0, false);
    EXPECT_ERROR(tg_backward_ex(loss, &(tg_backward_options){.ninputs = 2}) ==
                     -1,
                 "tg_backward: tg_backward_options has inputs NULL and "
                 "ninputs 2");
    tg_release(loss);
    tg_release(x);
}

ERROR_CASE(tg_backward_ex, out_of_memory, "memory runs out during backward")
{
    tg_tensor *x = leaf3();
    tg_tensor *sq = tg_mul(x, x);
    tg_tensor *loss = tg_sum(sq, NULL, 0, false);
    /* a given gradient of the root's dtype is used as it is, so the
     * first allocation is backward's own */
    tg_tensor *one = tg_scalar(1.0, TG_FLOAT64);
    tg_fail_allocations_after(0);
    int rc = tg_backward_ex(loss, &(tg_backward_options){.grad = one});
    tg_fail_allocations_after(-1);
    EXPECT_ERROR(rc == -1, "tg_backward: out of memory");
    tg_release(one);
    tg_release(loss);
    tg_release(sq);
    tg_release(x);
}

ERROR_CASE(tg_backward_ex, out_of_memory_large_graph,
           "memory runs out listing the ops of a graph of more than 64 ops")
{
    tg_tensor *x = leaf3();
    tg_tensor *y = tg_retain(x);
    for (int i = 0; i < 70; i++) { // 70 ops, each its own node
        tg_tensor *next = tg_mul_scalar(y, 1.0);
        tg_release(y);
        y = next;
    }
    tg_tensor *loss = tg_sum(y, NULL, 0, false);
    tg_tensor *one = tg_scalar(1.0, TG_FLOAT64);
    /* the list of ops starts with room for 64; growing it is the second
     * allocation */
    tg_fail_allocations_after(1);
    int rc = tg_backward_ex(loss, &(tg_backward_options){.grad = one});
    tg_fail_allocations_after(-1);
    EXPECT_ERROR(rc == -1,
                 "tg_backward: out of memory after listing 64 ops of the "
                 "graph");
    tg_release(one);
    tg_release(loss);
    tg_release(y);
    tg_release(x);
}

ERROR_CASE(tg_backward_ex, out_of_memory_many_inputs,
           "memory runs out for the gradients of an op with more than "
           "TG_MAX_INPUTS (8) inputs")
{
    tg_tensor *x = leaf3();
    const tg_tensor *parts[9];
    for (int i = 0; i < 9; i++)
        parts[i] = x;
    const char *want = "tg_backward: out of memory running the backward";
    int rc = 0;
    /* the gradient slots come after the sum's backward allocated: sweep
     * the failing allocation forward until they are the one that fails */
    for (int64_t n = 0; n < 50; n++) {
        tg_tensor *y = tg_cat(parts, 9, 0);
        tg_tensor *loss = tg_sum(y, NULL, 0, false);
        tg_tensor *one = tg_scalar(1.0, TG_FLOAT64);
        tg_clear_error();
        tg_fail_allocations_after(n);
        rc = tg_backward_ex(loss, &(tg_backward_options){.grad = one});
        tg_fail_allocations_after(-1);
        tg_release(one);
        tg_release(loss);
        tg_release(y);
        tg_clear_grad(x);
        if (rc == -1 && strncmp(tg_last_error(), want, strlen(want)) == 0)
            break;
    }
    EXPECT_ERROR(rc == -1, "tg_backward: out of memory running the backward "
                           "of CatBackward0");
    tg_release(x);
}

ERROR_CASE(tg_backward_ex, null_root,
           "root is NULL (an earlier call failed)")
{
    EXPECT_SILENT(tg_backward_ex(NULL, NULL) == -1);
}

/* ------------------------------------------------------------ no_grad */

NEVER_FAILS(tg_no_grad_begin, "opens one more scope");

ERROR_CASE(tg_no_grad_end, without_begin,
           "tg_no_grad_end is called without a tg_no_grad_begin")
{
    tg_no_grad_end();
    EXPECT_ERROR(tg_is_grad_enabled(),
                 "tg_no_grad_end: called without a matching "
                 "tg_no_grad_begin");
}

NEVER_FAILS(tg_is_grad_enabled, "reads this thread's mode");

/* ------------------------------------------------------- anomaly mode */

NEVER_FAILS(tg_set_detect_anomaly, "sets this thread's mode");
NEVER_FAILS(tg_is_anomaly_enabled, "reads this thread's mode");

/* ----------------------------------------------------------- the tape */

NEVER_FAILS(tg_tape_size, "returns a count");
NEVER_FAILS(tg_grad_fn_name, "answers NULL for a leaf or NULL");

ERROR_CASE(tg_tape_write_dot, null_file, "the FILE * is NULL")
{
    tg_tensor *x = leaf3();
    EXPECT_ERROR(tg_tape_write_dot(NULL, &x, 1, NULL) == -1,
                 "tg_tape_write_dot: the file is NULL");
    tg_release(x);
}

ERROR_CASE(tg_tape_write_dot, roots_null,
           "nroots is positive but roots is NULL")
{
    FILE *f = tmpfile();
    cr_assert_not_null(f);
    EXPECT_ERROR(tg_tape_write_dot(f, NULL, 1, NULL) == -1,
                 "tg_tape_write_dot: roots is NULL (nroots is 1)");
    fclose(f);
}

ERROR_CASE(tg_tape_write_dot, negative_nroots, "nroots is negative")
{
    FILE *f = tmpfile();
    cr_assert_not_null(f);
    tg_tensor *x = leaf3();
    EXPECT_ERROR(tg_tape_write_dot(f, &x, -1, NULL) == -1,
                 "tg_tape_write_dot: the number of roots is negative "
                 "(nroots is -1)");
    tg_release(x);
    fclose(f);
}

ERROR_CASE(tg_tape_write_dot, write_fails,
           "the file cannot be written (opened for reading)")
{
    FILE *f = fopen("/dev/null", "r");
    cr_assert_not_null(f);
    tg_tensor *x = leaf3();
    EXPECT_ERROR(tg_tape_write_dot(f, &x, 1, NULL) == -1,
                 "tg_tape_write_dot: writing the graph failed");
    tg_release(x);
    fclose(f);
}

ERROR_CASE(tg_tape_write_dot, null_roots,
           "every root is NULL (an earlier call failed)")
{
    FILE *f = tmpfile();
    cr_assert_not_null(f);
    tg_tensor *loss = NULL;
    EXPECT_SILENT(tg_tape_write_dot(f, &loss, 1, NULL) == -1);
    fclose(f);
}

ERROR_CASE(tg_tape_write_dot, out_of_memory,
           "memory runs out while walking the graph")
{
    FILE *f = tmpfile();
    cr_assert_not_null(f);
    tg_tensor *x = leaf3();
    tg_tensor *loss = tg_sum(x, NULL, 0, false);
    tg_fail_allocations_after(0);
    int rc = tg_tape_write_dot(f, &loss, 1, NULL);
    tg_fail_allocations_after(-1);
    EXPECT_ERROR(rc == -1, "tg_tape_write_dot: out of memory walking the "
                           "graph");
    tg_release(loss);
    tg_release(x);
    fclose(f);
}

/* --------------------------------------------------- custom functions */

ERROR_CASE(tg_function_apply, missing_forward,
           "the tg_function has no forward (or no name, no backward, or "
           "is NULL)")
{
    tg_tensor *x = leaf3();
    const tg_tensor *in = x;
    tg_function f = {"NoForwardBackward", NULL, id_backward, 0};
    EXPECT_ERROR(tg_function_apply(&f, &in, 1, NULL) == NULL,
                 "tg_function_apply: the function is missing its forward");
    tg_release(x);
}

ERROR_CASE(tg_function_apply, too_many_inputs,
           "more than TG_MAX_INPUTS (8) inputs")
{
    tg_tensor *x = leaf3();
    const tg_tensor *in[TG_MAX_INPUTS + 1];
    for (int i = 0; i <= TG_MAX_INPUTS; i++)
        in[i] = x;
    tg_function f = {"IdBackward", id_forward, id_backward, 0};
    EXPECT_ERROR(tg_function_apply(&f, in, TG_MAX_INPUTS + 1, NULL) == NULL,
                 "tg_function_apply: IdBackward was given 9 inputs");
    tg_release(x);
}

ERROR_CASE(tg_function_apply, data_size_too_large,
           "data_size is above PTRDIFF_MAX (no object is that large)")
{
    tg_tensor *x = leaf3();
    const tg_tensor *in = x;
    tg_function f = {"IdBackward", id_forward, id_backward, SIZE_MAX - 1};
    EXPECT_ERROR(tg_function_apply(&f, &in, 1, NULL) == NULL,
                 "tg_function_apply: IdBackward asks for "
                 "18446744073709551614 bytes of data");
    tg_release(x);
}

ERROR_CASE(tg_function_apply, inputs_null,
           "ninputs is positive but the inputs array is NULL")
{
    tg_function f = {"IdBackward", id_forward, id_backward, 0};
    EXPECT_ERROR(tg_function_apply(&f, NULL, 2, NULL) == NULL,
                 "tg_function_apply: IdBackward was given 2 inputs but no "
                 "array of them");
}

ERROR_CASE(tg_function_apply, forward_fails_silently,
           "the forward returns NULL without reporting why")
{
    tg_tensor *x = leaf3();
    const tg_tensor *in = x;
    tg_function f = {"SilentBackward", silent_forward, id_backward, 0};
    EXPECT_ERROR(tg_function_apply(&f, &in, 1, NULL) == NULL,
                 "tg_function_apply: the forward of SilentBackward returned "
                 "NULL without saying why");
    tg_release(x);
}

ERROR_CASE(tg_function_apply, null_input,
           "an input is NULL (an earlier call failed)")
{
    const tg_tensor *in = NULL;
    tg_function f = {"IdBackward", id_forward, id_backward, 0};
    EXPECT_SILENT(tg_function_apply(&f, &in, 1, NULL) == NULL);
}

ERROR_CASE(tg_function_apply, anomaly_in_forward,
           "with anomaly detection on, the forward gives NaN or infinity")
{
    tg_tensor *x = leaf3();
    const tg_tensor *in = x;
    tg_function f = {"NanBackward", nan_forward, id_backward, 0};
    tg_set_detect_anomaly(true);
    tg_tensor *y = tg_function_apply(&f, &in, 1, NULL);
    tg_set_detect_anomaly(false);
    EXPECT_ERROR(y == NULL,
                 "tg_function_apply: the forward of NanBackward gave nan at "
                 "index 0 of its output, float64 (3,), with anomaly detection "
                 "on");
    tg_release(x);
}

ERROR_CASE(tg_function_apply, out_of_memory,
           "memory runs out recording the call (the message names the "
           "function's node)")
{
    tg_tensor *x = leaf3();
    const tg_tensor *in = x;
    tg_function f = {"IdBackward", id_forward, id_backward, 0};
    tg_fail_allocations_after(0);
    tg_tensor *y = tg_function_apply(&f, &in, 1, NULL);
    tg_fail_allocations_after(-1);
    EXPECT_ERROR(y == NULL,
                 "IdBackward: out of memory recording the op on the tape");
    tg_release(x);
}

ERROR_CASE(tg_ctx_save, too_many,
           "a forward saves more than TG_MAX_SAVED (8) tensors")
{
    tg_tensor *x = leaf3();
    const tg_tensor *in = x;
    tg_function f = {"CarefulBackward", careful_forward, id_backward, 0};
    EXPECT_ERROR(tg_function_apply(&f, &in, 1, NULL) == NULL,
                 "tg_ctx_save: CarefulBackward already saved 8 tensors");
    tg_release(x);
}

ERROR_CASE(tg_ctx_save, null_tensor,
           "t is NULL (an earlier call failed; backward will refuse to run)")
{
    tg_tensor *x = leaf3();
    const tg_tensor *in = x;
    tg_function f = {"NullSaveBackward", null_save_forward, id_backward, 0};
    tg_tensor *y = tg_function_apply(&f, &in, 1, NULL);
    EXPECT_SILENT(null_save_rc == -1);
    tg_release(y);
    tg_release(x);
}

ERROR_CASE(tg_ctx_save, null_ctx, "ctx is NULL")
{
    tg_tensor *x = leaf3();
    EXPECT_ERROR(tg_ctx_save(NULL, x) == -1, "tg_ctx_save: ctx is NULL");
    tg_release(x);
}

ERROR_CASE(tg_ctx_saved, not_saved,
           "the index is not one tg_ctx_save returned")
{
    tg_tensor *x = leaf3();
    const tg_tensor *in = x;
    tg_function f = {"UnsavedBackward", unsaved_forward, id_backward, 0};
    EXPECT_ERROR(tg_function_apply(&f, &in, 1, NULL) == NULL,
                 "tg_ctx_saved: UnsavedBackward has no saved tensor 1");
    tg_release(x);
}

ERROR_CASE(tg_ctx_saved, null_ctx, "ctx is NULL")
{
    EXPECT_ERROR(tg_ctx_saved(NULL, 0) == NULL, "tg_ctx_saved: ctx is NULL");
}

NEVER_FAILS(tg_ctx_needs_grad, "answers false for a NULL ctx or an index "
                               "that is not an input");
NEVER_FAILS(tg_ctx_data, "answers NULL for a NULL ctx or data_size 0");

/* ---------------------------------------------------------- gradcheck */

static tg_tensor *f_square(const tg_tensor *const *x, int n, void *user)
{
    (void)n, (void)user;
    return tg_mul(x[0], x[0]);
}

static tg_tensor *f_argmax(const tg_tensor *const *x, int n, void *user)
{
    (void)n, (void)user;
    return tg_argmax(x[0], 0, false);
}

static tg_tensor *f_null(const tg_tensor *const *x, int n, void *user)
{
    (void)x, (void)n, (void)user;
    return NULL;
}

/* Its output has one element less at every call. */
static tg_tensor *f_shrinking(const tg_tensor *const *x, int n, void *user)
{
    (void)n;
    int64_t *len = user;
    return tg_narrow(x[0], 0, 0, (*len)--);
}

/* Returns x^2, then makes every later allocation fail. */
static tg_tensor *f_then_no_memory(const tg_tensor *const *x, int n, void *user)
{
    (void)n, (void)user;
    tg_tensor *y = tg_mul(x[0], x[0]);
    tg_fail_allocations_after(0);
    return y;
}

NEVER_FAILS(tg_gradcheck_defaults, "returns the default options");

ERROR_CASE(tg_gradcheck, no_function, "f is NULL (or there are no inputs)")
{
    tg_tensor *x = leaf3();
    EXPECT_ERROR(tg_gradcheck(NULL, NULL, &x, 1, NULL, NULL) == -1,
                 "tg_gradcheck: no function or no inputs (f NULL, 1 input)");
    tg_release(x);
}

ERROR_CASE(tg_gradcheck, bad_options, "eps is not > 0, or a tolerance < 0")
{
    tg_tensor *x = leaf3();
    tg_gradcheck_options o = tg_gradcheck_defaults();
    o.eps = TG_EXACT_ZERO;
    EXPECT_ERROR(tg_gradcheck(f_square, NULL, &x, 1, &o, NULL) == -1,
                 "tg_gradcheck: eps 0, atol 1e-05, rtol 0.001");
    tg_release(x);
}

ERROR_CASE(tg_gradcheck, grad_disabled,
           "called inside tg_no_grad_begin/end")
{
    tg_tensor *x = leaf3();
    tg_no_grad_begin();
    int rc = tg_gradcheck(f_square, NULL, &x, 1, NULL, NULL);
    tg_no_grad_end();
    EXPECT_ERROR(rc == -1, "tg_gradcheck: gradients are disabled here");
    tg_release(x);
}

ERROR_CASE(tg_gradcheck, input_not_leaf, "an input was made by an op")
{
    tg_tensor *x = leaf3();
    tg_tensor *y = tg_mul_scalar(x, 2.0);
    EXPECT_ERROR(tg_gradcheck(f_square, NULL, &y, 1, NULL, NULL) == -1,
                 "tg_gradcheck: input 0 was made by MulBackward0, it is not "
                 "a leaf");
    tg_release(y);
    tg_release(x);
}

ERROR_CASE(tg_gradcheck, input_stride_zero,
           "an input repeats one element (an expanded view)")
{
    tg_tensor *one = tg_ones(TG_SHAPE(1), TG_FLOAT64);
    tg_tensor *x = tg_expand(one, TG_SHAPE(3));
    tg_set_requires_grad(x, true);
    EXPECT_ERROR(tg_gradcheck(f_square, NULL, &x, 1, NULL, NULL) == -1,
                 "tg_gradcheck: input 0 of shape (3,) has stride 0 in dim 0");
    tg_release(x);
    tg_release(one);
}

ERROR_CASE(tg_gradcheck, inputs_share_memory,
           "two inputs share memory (the same tensor twice)")
{
    tg_tensor *x = leaf3();
    tg_tensor *in[2] = {x, x};
    EXPECT_ERROR(tg_gradcheck(f_square, NULL, in, 2, NULL, NULL) == -1,
                 "tg_gradcheck: inputs 0 and 1 share memory (the same "
                 "tensor twice)");
    tg_release(x);
}

ERROR_CASE(tg_gradcheck, no_input_requires_grad,
           "no input requires grad")
{
    tg_tensor *x = tg_ones(TG_SHAPE(3), TG_FLOAT64);
    EXPECT_ERROR(tg_gradcheck(f_square, NULL, &x, 1, NULL, NULL) == -1,
                 "tg_gradcheck: no input requires grad (1 given)");
    tg_release(x);
}

ERROR_CASE(tg_gradcheck, integer_output, "f returns an int64 tensor")
{
    tg_tensor *x = leaf3();
    EXPECT_ERROR(tg_gradcheck(f_argmax, NULL, &x, 1, NULL, NULL) == -1,
                 "tg_gradcheck: f gave an int64 tensor");
    tg_release(x);
}

ERROR_CASE(tg_gradcheck, output_changes_size,
           "f gives a different number of elements from one call to the "
           "next")
{
    tg_tensor *x = leaf3();
    int64_t len = 3;
    EXPECT_ERROR(tg_gradcheck(f_shrinking, &len, &x, 1, NULL, NULL) == -1,
                 "tg_gradcheck: f gave 3 elements, then 2");
    tg_release(x);
}

ERROR_CASE(tg_gradcheck, f_fails_silently,
           "f returns NULL without reporting why")
{
    tg_tensor *x = leaf3();
    EXPECT_ERROR(tg_gradcheck(f_null, NULL, &x, 1, NULL, NULL) == -1,
                 "tg_gradcheck: f returned NULL without saying why");
    tg_release(x);
}

static tg_tensor *f_log(const tg_tensor *const *x, int n, void *user)
{
    (void)n, (void)user;
    return tg_log(x[0]);
}

ERROR_CASE(tg_gradcheck, output_not_finite,
           "f's output is NaN or infinite at the inputs given (outside "
           "f's domain)")
{
    tg_tensor *x = leaf3(); // log(-2.0) is nan
    EXPECT_ERROR(tg_gradcheck(f_log, NULL, &x, 1, NULL, NULL) == -1,
                 "tg_gradcheck: f's output is nan at element 1 (output "
                 "shape (3,)), at the inputs as given");
    tg_release(x);
}

ERROR_CASE(tg_gradcheck, jacobians_out_of_memory,
           "no memory for the two Jacobians")
{
    tg_tensor *x = leaf3();
    int rc = tg_gradcheck(f_then_no_memory, NULL, &x, 1, NULL, NULL);
    tg_fail_allocations_after(-1);
    EXPECT_ERROR(rc == -1,
                 "tg_gradcheck: out of memory for two 3 x 3 Jacobians");
    tg_release(x);
}

ERROR_CASE(tg_gradcheck, work_arrays_out_of_memory,
           "no memory for the work arrays (fast mode)")
{
    tg_tensor *x = leaf3();
    tg_gradcheck_options o = tg_gradcheck_defaults();
    o.fast_mode = true;
    int rc = tg_gradcheck(f_then_no_memory, NULL, &x, 1, &o, NULL);
    tg_fail_allocations_after(-1);
    EXPECT_ERROR(rc == -1,
                 "tg_gradcheck: out of memory for the Jacobian work arrays");
    tg_release(x);
}

ERROR_CASE(tg_gradcheck, null_input,
           "an input is NULL (an earlier call failed)")
{
    tg_tensor *x = NULL;
    EXPECT_SILENT(tg_gradcheck(f_square, NULL, &x, 1, NULL, NULL) == -1);
}

/* Not a row: a float32 input is checked with a warning written to the
 * report, and the warning is not an error. */
TG_TEST(tg_gradcheck_catalogue, float32_warning_is_not_an_error)
{
    FILE *f = tmpfile();
    cr_assert_not_null(f);
    tg_tensor *x = tg_from_array((float[]){0.5f, -1.25f, 2.0f}, TG_SHAPE(3),
                                 TG_FLOAT32);
    tg_set_requires_grad(x, true);
    tg_gradcheck_options o = tg_gradcheck_defaults();
    o.report = f;
    o.eps = 1e-3;
    o.atol = o.rtol = 1e-2;
    tg_clear_error();
    cr_assert_eq(tg_gradcheck(f_square, NULL, &x, 1, &o, NULL), 1);
    cr_assert_str_eq(tg_last_error(), "");
    char text[512] = {0};
    rewind(f);
    cr_assert(fread(text, 1, sizeof text - 1, f) > 0);
    cr_assert(strstr(text, "warning: input 0 is float32"), "%s", text);
    fclose(f);
    tg_release(x);
}

/* ----------------------------------------- comparing hand gradients */

/* A (3, 1) float32 leaf whose .grad is filled (ones). New reference. */
static tg_tensor *leaf31_with_grad(void)
{
    tg_tensor *x = tg_zeros(TG_SHAPE(3, 1), TG_FLOAT32);
    tg_set_requires_grad(x, true);
    tg_tensor *s = tg_sum(x, NULL, 0, false);
    cr_assert_eq(tg_backward(s), 0);
    tg_release(s);
    return x;
}

ERROR_CASE(tg_cmp, shape_mismatch,
           "dt's shape differs from t.grad's (a sum that lost its keepdim)")
{
    tg_tensor *x = leaf31_with_grad();
    tg_tensor *dt = tg_ones(TG_SHAPE(3), TG_FLOAT32);
    EXPECT_ERROR(tg_cmp("bnmeani", dt, x) == -1,
                 "tg_cmp: cannot compare dbnmeani of shape (3,) with "
                 "bnmeani.grad of shape (3, 1)");
    tg_release(dt);
    tg_release(x);
}

ERROR_CASE(tg_cmp, no_grad, "t has no .grad (no retain_grad, no backward)")
{
    tg_tensor *x = tg_zeros(TG_SHAPE(3, 1), TG_FLOAT32);
    tg_tensor *dt = tg_ones(TG_SHAPE(3, 1), TG_FLOAT32);
    EXPECT_ERROR(tg_cmp("h", dt, x) == -1,
                 "tg_cmp: h has no gradient to compare with");
    tg_release(dt);
    tg_release(x);
}

ERROR_CASE(tg_cmp, dtype_mismatch, "dt's dtype differs from t.grad's")
{
    tg_tensor *x = leaf31_with_grad();
    tg_tensor *dt = tg_ones(TG_SHAPE(3, 1), TG_FLOAT64);
    EXPECT_ERROR(tg_cmp("h", dt, x) == -1,
                 "tg_cmp: cannot compare dh (float64) with h.grad (float32)");
    tg_release(dt);
    tg_release(x);
}

ERROR_CASE(tg_cmp, null_name, "name is NULL")
{
    tg_tensor *x = leaf31_with_grad();
    EXPECT_ERROR(tg_cmp(NULL, x->grad, x) == -1, "tg_cmp: name is NULL");
    tg_release(x);
}

ERROR_CASE(tg_cmp, null_tensor, "dt is NULL (an earlier call failed)")
{
    tg_tensor *x = leaf31_with_grad();
    EXPECT_SILENT(tg_cmp("x", NULL, x) == -1);
    tg_release(x);
}

ERROR_CASE(tg_cmp, null_variable, "t is NULL (an earlier call failed)")
{
    tg_tensor *dt = tg_ones(TG_SHAPE(3, 1), TG_FLOAT32);
    EXPECT_SILENT(tg_cmp("x", dt, NULL) == -1);
    tg_release(dt);
}

ERROR_CASE(tg_cmp_format, shape_mismatch, "dt's shape differs from t.grad's")
{
    tg_tensor *x = leaf31_with_grad();
    tg_tensor *dt = tg_ones(TG_SHAPE(1, 3), TG_FLOAT32);
    char line[128];
    EXPECT_ERROR(tg_cmp_format("x", dt, x, line, sizeof line) == -1,
                 "tg_cmp_format: cannot compare dx of shape (1, 3) with "
                 "x.grad of shape (3, 1)");
    tg_release(dt);
    tg_release(x);
}

ERROR_CASE(tg_cmp_format, no_grad, "t has no .grad")
{
    tg_tensor *x = tg_zeros(TG_SHAPE(3, 1), TG_FLOAT32);
    char line[128];
    EXPECT_ERROR(tg_cmp_format("x", x, x, line, sizeof line) == -1,
                 "tg_cmp_format: x has no gradient to compare with");
    tg_release(x);
}

ERROR_CASE(tg_cmp_format, dtype_mismatch, "dt is not float or not t.grad's dtype")
{
    tg_tensor *x = leaf31_with_grad();
    tg_tensor *dt = tg_ones(TG_SHAPE(3, 1), TG_INT64);
    char line[128];
    EXPECT_ERROR(tg_cmp_format("x", dt, x, line, sizeof line) == -1,
                 "tg_cmp_format: cannot compare dx (int64) with x.grad "
                 "(float32)");
    tg_release(dt);
    tg_release(x);
}

ERROR_CASE(tg_cmp_format, null_name, "name is NULL")
{
    tg_tensor *x = leaf31_with_grad();
    char line[128];
    EXPECT_ERROR(tg_cmp_format(NULL, x->grad, x, line, sizeof line) == -1,
                 "tg_cmp_format: name is NULL");
    tg_release(x);
}

ERROR_CASE(tg_cmp_format, null_tensor,
           "dt or t is NULL (an earlier call failed)")
{
    char line[128];
    EXPECT_SILENT(tg_cmp_format("x", NULL, NULL, line, sizeof line) == -1);
}
