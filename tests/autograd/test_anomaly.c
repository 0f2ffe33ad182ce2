/*
 * tests/autograd/test_anomaly.c - anomaly detection (tg_set_detect_anomaly):
 * the first NaN or infinity made by a recorded op stops it (NULL) and the
 * first one made by a backward stops tg_backward (-1), each with a message
 * naming the op, the shapes, the element and the place on the tape; with
 * detection off the same programs give the NaN silently; nothing leaks and
 * the tape stays consistent; the setting is per thread, and
 * TG_DETECT_ANOMALY turns it on.
 *
 * The finite test behind it (tg_first_nonfinite) is checked on its own:
 * the first bad element at either end, in both float dtypes, through a
 * non-contiguous layout, and never on large finite values.
 *
 * The environment tests rely on Criterion running each test in a process
 * of its own (its default): the variable is read once per process.
 */
#include "../common.h"

#include "autograd/anomaly.h"

#include <float.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static tg_tensor *leaf_f64(const double *v, const int64_t *shape, int ndim)
{
    tg_tensor *t = tg_from_array(v, shape, ndim, TG_FLOAT64);
    tg_set_requires_grad(t, true);
    return t;
}

/* -------------------------------------------------- the finite test */

TG_TEST(anomaly_check, nan_at_index_0_f64)
{
    tg_tensor *t =
        tg_from_array((double[]){NAN, 1, 2}, TG_SHAPE(3), TG_FLOAT64);
    double v = 0;
    cr_assert_eq(tg_first_nonfinite(t, &v), 0);
    cr_assert(isnan(v));
    tg_release(t);
}

TG_TEST(anomaly_check, inf_at_last_index_f32)
{
    tg_tensor *t = tg_from_array((float[]){1, 2, 3, 4, 5, -INFINITY},
                                 TG_SHAPE(2, 3), TG_FLOAT32);
    double v = 0;
    cr_assert_eq(tg_first_nonfinite(t, &v), 5);
    cr_assert(isinf(v) && v < 0);
    tg_release(t);
}

TG_TEST(anomaly_check, nan_at_last_index_f64_and_first_of_two)
{
    tg_tensor *t =
        tg_from_array((double[]){1, 2, 3, NAN}, TG_SHAPE(4), TG_FLOAT64);
    cr_assert_eq(tg_first_nonfinite(t, NULL), 3);
    tg_tensor *u = tg_from_array((float[]){1, INFINITY, 3, NAN}, TG_SHAPE(4),
                                 TG_FLOAT32);
    cr_assert_eq(tg_first_nonfinite(u, NULL), 1);
    tg_release(u);
    tg_release(t);
}

TG_TEST(anomaly_check, large_finite_values_pass)
{
    tg_tensor *f = tg_from_array((float[]){3e38f, -FLT_MAX, FLT_MIN, 0},
                                 TG_SHAPE(4), TG_FLOAT32);
    tg_tensor *d = tg_from_array((double[]){DBL_MAX, -DBL_MAX, 4.9e-324},
                                 TG_SHAPE(3), TG_FLOAT64);
    tg_tensor *i = tg_from_array((int64_t[]){INT64_MAX, INT64_MIN},
                                 TG_SHAPE(2), TG_INT64);
    tg_tensor *e = tg_zeros(TG_SHAPE(0, 3), TG_FLOAT32);
    cr_assert_eq(tg_first_nonfinite(f, NULL), -1);
    cr_assert_eq(tg_first_nonfinite(d, NULL), -1);
    cr_assert_eq(tg_first_nonfinite(i, NULL), -1);
    cr_assert_eq(tg_first_nonfinite(e, NULL), -1);
    tg_release(e);
    tg_release(i);
    tg_release(d);
    tg_release(f);
}

/* Long tensors go through the blocked fast path: the bad element first,
 * last, at either edge of a block and in the short tail, in both dtypes,
 * the answer equal to that of the plain element-by-element walk over a
 * non-contiguous copy (whose gaps hold NaN that must not be seen). */
TG_TEST(anomaly_check, blocked_scan_agrees_with_the_plain_walk)
{
    const int64_t n = 1000; // 3 blocks of 256 and a tail of 232
    const int64_t at[] = {0, 1, 255, 256, 511, 767, 768, 998, 999};
    tg_dtype dtypes[] = {TG_FLOAT32, TG_FLOAT64};
    for (int d = 0; d < 2; d++) {
        for (size_t k = 0; k < sizeof at / sizeof *at; k++) {
            tg_tensor *x = tg_full(TG_SHAPE(n), 3e38, dtypes[d]);
            tg_set(x, TG_SHAPE(at[k]), k % 2 ? INFINITY : NAN);
            if (at[k] + 1 < n) // a later bad one must not win
                tg_set(x, TG_SHAPE(n - 1), -INFINITY);
            tg_tensor *strided = tg_test_non_contiguous(x, true);
            cr_assert(!tg_is_contiguous(strided));
            int64_t expect = at[k];
            cr_assert_eq(tg_first_nonfinite(x, NULL), expect,
                         "%s, bad at %lld: got %lld",
                         tg_dtype_name(dtypes[d]), (long long)at[k],
                         (long long)tg_first_nonfinite(x, NULL));
            cr_assert_eq(tg_first_nonfinite(strided, NULL), expect);
            tg_release(strided);
            tg_release(x);
        }
        tg_tensor *big = tg_full(TG_SHAPE(n), -3e38, dtypes[d]);
        cr_assert_eq(tg_first_nonfinite(big, NULL), -1);
        tg_release(big);
    }
}

/* The flat index is in C order of the tensor's shape, not of its storage:
 * in the transpose of a (2, 3) holding NaN at storage position 1 ([0, 1]),
 * the NaN is element [1, 0], flat index 2. */
TG_TEST(anomaly_check, non_contiguous_index_is_c_order)
{
    tg_tensor *a = tg_from_array((double[]){0, NAN, 2, 3, 4, 5},
                                 TG_SHAPE(2, 3), TG_FLOAT64);
    tg_tensor *t = tg_transpose(a, 0, 1); // (3, 2)
    cr_assert(!tg_is_contiguous(t));
    cr_assert_eq(tg_first_nonfinite(t, NULL), 2);
    tg_tensor *s = tg_select(t, 1, 1); // column 1 of t: a's row 1, finite
    cr_assert_eq(tg_first_nonfinite(s, NULL), -1);
    tg_release(s);
    tg_release(t);
    tg_release(a);
}

/* ------------------------------------------------------------ the switch */

TG_TEST(anomaly_switch, off_by_default_and_returns_previous)
{
    cr_assert(!tg_is_anomaly_enabled());
    cr_assert(!tg_set_detect_anomaly(true));
    cr_assert(tg_is_anomaly_enabled());
    cr_assert(tg_set_detect_anomaly(false));
    cr_assert(!tg_is_anomaly_enabled());
}

static void *thread_sees(void *arg)
{
    bool *seen = arg;
    seen[0] = tg_is_anomaly_enabled();
    /* The same NaN passes here: this thread's detection is off. */
    tg_tensor *x = leaf_f64((double[]){-1}, TG_SHAPE(1));
    tg_tensor *y = tg_log(x);
    seen[1] = y != NULL && isnan(tg_item(y));
    tg_release(y);
    tg_release(x);
    return NULL;
}

TG_TEST(anomaly_switch, per_thread)
{
    tg_set_detect_anomaly(true);
    bool seen[2] = {true, false};
    pthread_t th;
    cr_assert_eq(pthread_create(&th, NULL, thread_sees, seen), 0);
    pthread_join(th, NULL);
    cr_assert(!seen[0], "a new thread starts with detection off");
    cr_assert(seen[1], "the other thread's log(-1) was stopped");
    cr_assert(tg_is_anomaly_enabled(), "this thread's setting moved");
    tg_set_detect_anomaly(false);
}

static void *thread_default(void *arg)
{
    *(bool *)arg = tg_is_anomaly_enabled();
    return NULL;
}

TG_TEST(anomaly_switch, environment_turns_it_on)
{
    setenv("TG_DETECT_ANOMALY", "1", 1);
    cr_assert(tg_is_anomaly_enabled());
    bool other = false;
    pthread_t th;
    cr_assert_eq(pthread_create(&th, NULL, thread_default, &other), 0);
    pthread_join(th, NULL);
    cr_assert(other, "a new thread starts from the environment's setting");
    /* Read once: a later change does not count. */
    setenv("TG_DETECT_ANOMALY", "0", 1);
    tg_set_detect_anomaly(false);
    cr_assert(!tg_is_anomaly_enabled());
    cr_assert_eq(pthread_create(&th, NULL, thread_default, &other), 0);
    pthread_join(th, NULL);
    cr_assert(other);
    unsetenv("TG_DETECT_ANOMALY");
}

TG_TEST(anomaly_switch, environment_zero_is_off)
{
    setenv("TG_DETECT_ANOMALY", "0", 1);
    cr_assert(!tg_is_anomaly_enabled());
    unsetenv("TG_DETECT_ANOMALY");
}

/* A value that is neither 0 nor 1 leaves detection off and says so on
 * stderr (no call failed, so it is not an error). */
TG_TEST(anomaly_switch, environment_unknown_value_warns)
{
    setenv("TG_DETECT_ANOMALY", "yes", 1);
    fflush(stderr);
    FILE *log = tmpfile();
    cr_assert_not_null(log);
    int saved = dup(2);
    dup2(fileno(log), 2);
    bool on = tg_is_anomaly_enabled();
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    char buf[512] = {0};
    rewind(log);
    size_t n = fread(buf, 1, sizeof buf - 1, log);
    fclose(log);
    unsetenv("TG_DETECT_ANOMALY");
    cr_assert(!on);
    cr_assert(n > 0 && strstr(buf, "TG_DETECT_ANOMALY=\"yes\"") &&
                  strstr(buf, "stays off"),
              "got: %s", buf);
}

/* --------------------------------------------------------------- forward */

TG_TEST(anomaly_forward, log_of_negative)
{
    tg_set_detect_anomaly(true);
    tg_tensor *x = tg_from_array((float[]){1, -2, 3}, TG_SHAPE(3),
                                 TG_FLOAT32);
    tg_set_requires_grad(x, true);
    tg_tensor *y = tg_log(x);
    cr_assert_null(y);
    tg_assert_error("LogBackward0: the op gave nan at index 1 of its "
                    "output, float32 (3,), with anomaly detection on",
                    "op 1 of this thread's tape",
                    "inputs: 0: float32 (3,), finite, -2 at index 1",
                    "rule: while anomaly detection is on",
                    "this op made the nan");
    cr_assert_eq(tg_tape_size(), 0, "the failed op left a node");
    cr_assert_eq(tg_live_tensors(), 1, "the output was not released");
    tg_release(x);
    tg_set_detect_anomaly(false);
}

TG_TEST(anomaly_forward, div_by_zero_with_broadcast_and_tape_place)
{
    tg_set_detect_anomaly(true);
    tg_tensor *a = leaf_f64((double[]){1, 2, 3, 4, 5, 6}, TG_SHAPE(2, 3));
    tg_tensor *b = tg_from_array((double[]){1, 2, 0}, TG_SHAPE(3),
                                 TG_FLOAT64);
    tg_tensor *a2 = tg_mul_scalar(a, 2.0); // op 1
    tg_tensor *q = tg_div(a2, b);          // op 2: 6 / 0 = inf
    cr_assert_null(q);
    tg_assert_error("DivBackward0: the op gave inf at index 2 (element "
                    "[0, 2]) of its output, float64 (2, 3)",
                    "op 2 of this thread's tape",
                    "inputs: 0: float64 (2, 3), finite, 6 at index 2; "
                    "1: float64 (3,), finite",
                    "this op made the inf");
    cr_assert_eq(tg_tape_size(), 1);
    tg_release(a2);
    tg_release(b);
    tg_release(a);
    tg_set_detect_anomaly(false);
}

TG_TEST(anomaly_forward, zero_over_zero)
{
    tg_set_detect_anomaly(true);
    tg_tensor *a = leaf_f64((double[]){0, 1}, TG_SHAPE(2));
    tg_tensor *z = tg_zeros(TG_SHAPE(2), TG_FLOAT64);
    tg_tensor *q = tg_div(a, z);
    cr_assert_null(q);
    tg_assert_error("DivBackward0: the op gave nan at index 0");
    tg_release(z);
    tg_release(a);
    tg_set_detect_anomaly(false);
}

/* 3e38 is finite in float32; twice it is not. */
TG_TEST(anomaly_forward, float32_overflow)
{
    tg_set_detect_anomaly(true);
    tg_tensor *x = tg_from_array((float[]){3e38f, 1}, TG_SHAPE(2),
                                 TG_FLOAT32);
    tg_set_requires_grad(x, true);
    tg_tensor *same = tg_mul_scalar(x, 1.0);
    cr_assert_not_null(same, "%s", tg_last_error());
    tg_tensor *twice = tg_add(x, same);
    cr_assert_null(twice);
    tg_assert_error("AddBackward0: the op gave inf at index 0",
                    "results too large for float32");
    tg_release(same);
    tg_release(x);
    tg_set_detect_anomaly(false);
}

TG_TEST(anomaly_forward, nan_input_leaf_is_upstream)
{
    tg_set_detect_anomaly(true);
    tg_tensor *data = tg_from_array((double[]){1, NAN, 3}, TG_SHAPE(3),
                                    TG_FLOAT64);
    tg_tensor *w = leaf_f64((double[]){2}, TG_SHAPE(1));
    tg_tensor *y = tg_mul(data, w);
    cr_assert_null(y);
    tg_assert_error("MulBackward0: the op gave nan at index 1",
                    "inputs: 0: float64 (3,), holds nan at index 1; "
                    "1: float64 (1,), finite",
                    "input 0 was already not finite, so the problem is "
                    "upstream",
                    "it has no history");
    tg_release(w);
    tg_release(data);
    tg_set_detect_anomaly(false);
}

/* A NaN made while detection was off is found at the next recorded op,
 * which names the op that made it. */
TG_TEST(anomaly_forward, nan_from_earlier_op_is_upstream)
{
    tg_tensor *x = leaf_f64((double[]){4, -1}, TG_SHAPE(2));
    tg_tensor *l = tg_log(x); // nan at index 1, not checked
    cr_assert_not_null(l);
    tg_set_detect_anomaly(true);
    tg_tensor *y = tg_mul_scalar(l, 3.0);
    cr_assert_null(y);
    tg_assert_error("MulBackward0: the op gave nan at index 1",
                    "it was made by LogBackward0, recorded before anomaly "
                    "detection was turned on");
    cr_assert_eq(tg_tape_size(), 1);
    tg_release(l);
    tg_release(x);
    tg_set_detect_anomaly(false);
}

/* An op with extra outputs fails whole: tg_layer_norm_ex returns NULL
 * with *mean and *rstd NULL too, so a caller that stops at the NULL
 * leaks nothing. */
TG_TEST(anomaly_forward, layer_norm_statistics_released_with_the_output)
{
    tg_set_detect_anomaly(true);
    tg_tensor *x = leaf_f64((double[]){1, 2, INFINITY, 4}, TG_SHAPE(2, 2));
    tg_tensor *mean = NULL, *rstd = NULL;
    tg_tensor *y = tg_layer_norm_ex(x, TG_SHAPE(2), NULL, NULL, 1e-5, &mean,
                                    &rstd);
    cr_assert_null(y);
    tg_assert_error("NativeLayerNormBackward0: the op gave nan at index 2",
                    "inputs: 0: float64 (2, 2), holds inf at index 2");
    cr_assert_null(mean, "the statistics outlived the failed output");
    cr_assert_null(rstd);
    tg_release(x);
    tg_set_detect_anomaly(false);
}

TG_TEST(anomaly_forward, unrecorded_ops_are_not_checked)
{
    tg_set_detect_anomaly(true);
    tg_tensor *c = tg_from_array((double[]){-1}, TG_SHAPE(1), TG_FLOAT64);
    tg_tensor *a = tg_log(c); // no input needs a gradient
    cr_assert(a && isnan(tg_item(a)));
    tg_tensor *w = leaf_f64((double[]){-1}, TG_SHAPE(1));
    tg_no_grad_begin();
    tg_tensor *b = tg_log(w); // gradients disabled
    tg_no_grad_end();
    cr_assert(b && isnan(tg_item(b)));
    cr_assert_str_empty(tg_last_error());
    tg_release(b);
    tg_release(w);
    tg_release(a);
    tg_release(c);
    tg_set_detect_anomaly(false);
}

TG_TEST(anomaly_forward, off_gives_the_nan_silently)
{
    tg_tensor *x = tg_from_array((float[]){1, -2, 3}, TG_SHAPE(3),
                                 TG_FLOAT32);
    tg_set_requires_grad(x, true);
    tg_tensor *y = tg_log(x);
    cr_assert_not_null(y);
    cr_assert(isnan(tg_read_flat(y, 1)));
    tg_tensor *b = tg_from_array((double[]){1, 0}, TG_SHAPE(2), TG_FLOAT64);
    tg_tensor *a = leaf_f64((double[]){1, 1}, TG_SHAPE(2));
    tg_tensor *q = tg_div(a, b);
    cr_assert(q && isinf(tg_read_flat(q, 1)));
    cr_assert_str_empty(tg_last_error());
    tg_release(q);
    tg_release(a);
    tg_release(b);
    tg_release(y);
    tg_release(x);
}

/* ------------------------------------------------------ custom functions */

static tg_tensor *nan_forward(tg_ctx *ctx, const tg_tensor *const *in,
                              int n, const void *args)
{
    (void)ctx, (void)n, (void)args;
    return tg_div(in[0], in[0]); // 0 / 0 at x = 0
}

static int identity_backward(tg_ctx *ctx, const tg_tensor *g,
                             tg_tensor **grads)
{
    (void)ctx;
    grads[0] = tg_clone(g);
    return grads[0] ? 0 : -1;
}

static const tg_function nan_fn = {"SelfRatioBackward", nan_forward,
                                   identity_backward, 0};

TG_TEST(anomaly_function, forward_nan)
{
    tg_set_detect_anomaly(true);
    tg_tensor *x = leaf_f64((double[]){1, 2, 0}, TG_SHAPE(3));
    const tg_tensor *in[] = {x};
    tg_tensor *y = tg_function_apply(&nan_fn, in, 1, NULL);
    cr_assert_null(y);
    tg_assert_error("tg_function_apply: the forward of SelfRatioBackward "
                    "gave nan at index 2 of its output, float64 (3,)",
                    "inputs: 0: float64 (3,), finite, 0 at index 2");
    cr_assert_eq(tg_tape_size(), 0);
    tg_release(x);
    tg_set_detect_anomaly(false);
}

static tg_tensor *copy_forward(tg_ctx *ctx, const tg_tensor *const *in,
                               int n, const void *args)
{
    (void)ctx, (void)n, (void)args;
    return tg_clone(in[0]);
}

static int nan_backward(tg_ctx *ctx, const tg_tensor *g, tg_tensor **grads)
{
    (void)ctx;
    grads[0] = tg_full(g->shape, g->ndim, NAN, g->dtype);
    return grads[0] ? 0 : -1;
}

static const tg_function bad_backward_fn = {"BadBackward", copy_forward,
                                            nan_backward, 0};

TG_TEST(anomaly_function, backward_nan_names_the_function)
{
    tg_set_detect_anomaly(true);
    tg_tensor *x = leaf_f64((double[]){1, 2, 3, 4}, TG_SHAPE(2, 2));
    const tg_tensor *in[] = {x};
    tg_tensor *y = tg_function_apply(&bad_backward_fn, in, 1, NULL);
    tg_tensor *L = tg_sum(y, NULL, 0, false);
    cr_assert_eq(tg_backward(L), -1);
    tg_assert_error("tg_backward: the backward of BadBackward gave nan at "
                    "index 0 (element [0, 0]) of the gradient of its input "
                    "0, float64 (2, 2)",
                    "op 1 of the 2 alive on this thread's tape",
                    "inputs of BadBackward at forward time: 0: float64 "
                    "(2, 2)",
                    "incoming gradient dL/d(output): float64 (2, 2), finite",
                    "so this backward made the non-finite value");
    cr_assert_null(x->grad, "the bad gradient reached the leaf");
    tg_release(L);
    tg_release(y);
    tg_release(x);
    tg_set_detect_anomaly(false);
}

/* A float64 gradient for a float32 input is narrowed before it is
 * checked: 1e300 is finite in float64, inf in float32. */
static int huge_backward(tg_ctx *ctx, const tg_tensor *g, tg_tensor **grads)
{
    (void)ctx;
    grads[0] = tg_full(g->shape, g->ndim, 1e300, TG_FLOAT64);
    return grads[0] ? 0 : -1;
}

static const tg_function huge_fn = {"HugeBackward", copy_forward,
                                    huge_backward, 0};

TG_TEST(anomaly_function, backward_overflow_in_the_cast)
{
    tg_set_detect_anomaly(true);
    tg_tensor *x = tg_ones(TG_SHAPE(2), TG_FLOAT32);
    tg_set_requires_grad(x, true);
    const tg_tensor *in[] = {x};
    tg_tensor *y = tg_function_apply(&huge_fn, in, 1, NULL);
    tg_tensor *L = tg_sum(y, NULL, 0, false);
    cr_assert_eq(tg_backward(L), -1);
    tg_assert_error("the backward of HugeBackward gave inf at index 0 of "
                    "the gradient of its input 0, float32 (2,)");
    tg_release(L);
    tg_release(y);
    tg_release(x);
    tg_set_detect_anomaly(false);
}

/* -------------------------------------------------------------- backward */

/* sqrt at 0: the forward is 0, the backward 1 / (2 sqrt(0)) = inf. */
TG_TEST(anomaly_backward, sqrt_at_zero)
{
    tg_set_detect_anomaly(true);
    tg_tensor *x = leaf_f64((double[]){4, 0, 1}, TG_SHAPE(3));
    tg_tensor *s = tg_sqrt(x);
    cr_assert_not_null(s, "%s", tg_last_error());
    tg_tensor *L = tg_sum(s, NULL, 0, false);
    cr_assert_eq(tg_backward(L), -1);
    tg_assert_error("tg_backward: the backward of SqrtBackward0 gave inf "
                    "at index 1 of the gradient of its input 0, float64 "
                    "(3,), with anomaly detection on",
                    "op 1 of the 2 alive on this thread's tape",
                    "inputs of SqrtBackward0 at forward time: 0: float64 "
                    "(3,)",
                    "incoming gradient dL/d(output): float64 (3,), finite",
                    "rule: while anomaly detection is on, every gradient a "
                    "backward gives must be finite");
    cr_assert_null(x->grad);
    /* The tape is intact: with detection off the same backward runs and
     * gives PyTorch's answer, inf. */
    tg_set_detect_anomaly(false);
    cr_assert_eq(tg_backward(L), 0, "%s", tg_last_error());
    cr_assert(isinf(tg_read_flat(x->grad, 1)));
    cr_assert_float_eq(tg_read_flat(x->grad, 0), 0.25, 1e-15);
    tg_release(L);
    tg_release(s);
    tg_release(x);
}

/* A NaN in the gradient backward starts from is reported at the first
 * node, as already there. */
TG_TEST(anomaly_backward, incoming_gradient_already_nan)
{
    tg_set_detect_anomaly(true);
    tg_tensor *x = leaf_f64((double[]){1, 2}, TG_SHAPE(2));
    tg_tensor *y = tg_mul_scalar(x, 3.0);
    tg_tensor *g = tg_from_array((double[]){1, NAN}, TG_SHAPE(2),
                                 TG_FLOAT64);
    tg_backward_options o = {.grad = g};
    cr_assert_eq(tg_backward_ex(y, &o), -1);
    tg_assert_error("the backward of MulBackward0 gave nan at index 1",
                    "incoming gradient dL/d(output): float64 (2,), holds "
                    "nan at index 1",
                    "the incoming gradient was already not finite");
    tg_release(g);
    tg_release(y);
    tg_release(x);
    tg_set_detect_anomaly(false);
}

TG_TEST(anomaly_backward, finite_graph_is_unchanged)
{
    tg_set_detect_anomaly(true);
    tg_tensor *w = leaf_f64((double[]){0.5, -1, 2}, TG_SHAPE(3));
    tg_tensor *x = tg_from_array((double[]){1, 2, 3}, TG_SHAPE(3),
                                 TG_FLOAT64);
    tg_tensor *h = tg_mul(w, x);
    tg_tensor *t = tg_tanh(h);
    tg_tensor *L = tg_sum(t, NULL, 0, false);
    cr_assert_eq(tg_backward(L), 0, "%s", tg_last_error());
    for (int i = 0; i < 3; i++) {
        double xi = i + 1.0, wi = tg_read_flat(w, i), th = tanh(wi * xi);
        cr_assert_float_eq(tg_read_flat(w->grad, i), xi * (1 - th * th),
                           1e-12);
    }
    tg_release(L);
    tg_release(t);
    tg_release(h);
    tg_release(x);
    tg_release(w);
    tg_set_detect_anomaly(false);
}

/* ------------------------------------------------------- a training loop */

/* Plain gradient descent on a linear regression with a step far too big:
 * the weights grow by a factor each step until something overflows. With
 * detection off the loop runs to the end on a loss of inf or NaN; with it
 * on, it stops at the first anomaly, and the NULL (or -1) it gets says
 * so. Returns the step it stopped at, or `steps`. */
static int diverging_fit(int steps, double *last_loss)
{
    tg_manual_seed(0);
    tg_tensor *x = tg_randn(TG_SHAPE(16, 4), TG_FLOAT32);
    tg_tensor *y = tg_randn(TG_SHAPE(16, 1), TG_FLOAT32);
    tg_module *lin = tg_linear_new(4, 1, true);
    tg_sgd_config cfg = {.lr = 20.0};
    tg_optimizer *opt = tg_sgd_new(lin, &cfg);
    int step = 0;
    *last_loss = 0;
    for (; step < steps; step++) {
        tg_tensor *pred = tg_module_forward(lin, x);
        tg_tensor *loss = tg_mse_loss(pred, y, TG_REDUCTION_MEAN);
        tg_optimizer_zero_grad(opt);
        int rc = tg_backward(loss);
        if (rc == 0)
            *last_loss = tg_item(loss);
        tg_release(loss);
        tg_release(pred);
        if (rc != 0 || tg_optimizer_step(opt) != 0)
            break;
    }
    tg_optimizer_free(opt);
    tg_module_free(lin);
    tg_release(y);
    tg_release(x);
    return step;
}

TG_TEST(anomaly_training, stops_at_the_first_anomaly)
{
    double loss;
    int off = diverging_fit(200, &loss);
    cr_assert_eq(off, 200, "without detection the loop runs to the end");
    cr_assert(!isfinite(loss), "the loss ends at %g", loss);
    cr_assert_str_empty(tg_last_error());

    tg_set_detect_anomaly(true);
    int on = diverging_fit(200, &loss);
    cr_assert_lt(on, 200, "the loop did not stop");
    cr_assert(isfinite(loss), "a non-finite loss got through");
    tg_assert_error("with anomaly detection on");
    tg_set_detect_anomaly(false);
}
