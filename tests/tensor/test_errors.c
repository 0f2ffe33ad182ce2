/*
 * tests/tensor/test_errors.c - the error machinery and the bad inputs of the
 * tensor core: every failure returns NULL or -1, names the function, states
 * the rule, and never crashes. The op families test their own errors.
 */
#include "../common.h"

#include <math.h>
#include <signal.h>

static int calls;
static char seen[2048];

static void counting_handler(const char *message)
{
    calls++;
    snprintf(seen, sizeof seen, "%s", message);
}

TG_TEST(handler, receives_each_message_once)
{
    calls = 0;
    tg_error_handler previous = tg_set_error_handler(counting_handler);
    cr_assert_eq(previous, tg_error_handler_quiet);
    tg_tensor *t = tg_zeros(TG_SHAPE(2, -1), TG_FLOAT32);
    cr_assert_null(t);
    cr_assert_eq(calls, 1);
    cr_assert_str_eq(seen, tg_last_error());
    tg_set_error_handler(previous);
}

TG_TEST(handler, null_arguments_propagate_without_a_second_message)
{
    calls = 0;
    tg_set_error_handler(counting_handler);
    tg_tensor *bad = tg_ones(TG_SHAPE(-3), TG_FLOAT32); // one message
    tg_tensor *a = tg_add(bad, bad);                   // NULL in: silent
    tg_tensor *b = tg_exp(a);
    tg_tensor *c = tg_zeros_like(b);
    cr_assert_null(c);
    cr_assert_eq(calls, 1);
    tg_assert_error("tg_ones");
    cr_assert_eq(tg_copy_(NULL, NULL), -1);
    cr_assert_eq(tg_fill_(NULL, 1), -1);
    cr_assert(isnan(tg_item(NULL)));
    cr_assert_eq(calls, 1);
}

TG_TEST(handler, clear_error_and_default_restore)
{
    tg_zeros(TG_SHAPE(-1), TG_FLOAT32);
    cr_assert_neq(tg_last_error()[0], '\0');
    tg_clear_error();
    cr_assert_str_eq(tg_last_error(), "");
    cr_assert_eq(tg_set_error_handler(NULL), tg_error_handler_quiet);
    cr_assert_eq(tg_set_error_handler(tg_error_handler_quiet),
                 tg_error_handler_print);
}

Test(handler, abort_handler_aborts, .signal = SIGABRT)
{
    tg_set_error_handler(tg_error_handler_abort);
    tg_zeros(TG_SHAPE(-1), TG_FLOAT32);
}

TG_TEST(shapes, negative_size)
{
    cr_assert_null(tg_zeros(TG_SHAPE(2, -1), TG_FLOAT32));
    tg_assert_error("tg_zeros", "(2, -1)", "rule: sizes must be >= 0");
}

TG_TEST(shapes, too_many_dims)
{
    int64_t shape[9] = {1, 1, 1, 1, 1, 1, 1, 1, 1};
    cr_assert_null(tg_empty(shape, 9, TG_FLOAT32));
    tg_assert_error("tg_empty", "9 dims", "[0, 8]");
    cr_assert_null(tg_empty(shape, -1, TG_FLOAT32));
}

TG_TEST(shapes, null_shape_with_dims)
{
    cr_assert_null(tg_ones(NULL, 2, TG_FLOAT32));
    tg_assert_error("tg_ones", "NULL", "hint:");
}

TG_TEST(shapes, overflowing_product)
{
    cr_assert_null(tg_zeros(TG_SHAPE(INT64_C(1) << 40, INT64_C(1) << 40),
                            TG_FLOAT32));
    tg_assert_error("tg_zeros", "too many elements");
    /* Near the int64 limit, where a naive product would wrap to a small
     * positive number. */
    cr_assert_null(tg_zeros(TG_SHAPE(INT64_C(3037000500),
                                     INT64_C(3037000500), 4),
                            TG_FLOAT64));
    tg_assert_error("too many elements");
}

TG_TEST(shapes, out_of_memory_is_an_error_not_a_crash)
{
    /* 2^58 bytes passes the shape check but no machine has it. */
    cr_assert_null(tg_empty(TG_SHAPE(INT64_C(1) << 55), TG_FLOAT64));
    tg_assert_error("out of memory", "(36028797018963968,)");
}

TG_TEST(dtypes, unknown_dtype)
{
    cr_assert_null(tg_zeros(TG_SHAPE(2), (tg_dtype)7));
    tg_assert_error("tg_zeros", "unknown dtype 7", "TG_FLOAT32");
    cr_assert_str_eq(tg_dtype_name(TG_INT64), "int64");
    cr_assert_eq(tg_dtype_size(TG_FLOAT32), 4);
    cr_assert_eq(tg_dtype_size(TG_FLOAT64), 8);
}

TG_TEST(create_errors, from_array_null_data)
{
    cr_assert_null(tg_from_array(NULL, TG_SHAPE(3), TG_FLOAT32));
    tg_assert_error("tg_from_array", "NULL");
    /* No elements: no data needed. */
    tg_tensor *empty = tg_from_array(NULL, TG_SHAPE(0), TG_FLOAT32);
    cr_assert_not_null(empty);
    tg_release(empty);
}

TG_TEST(create_errors, arange_and_linspace)
{
    cr_assert_null(tg_arange(0, 10, 0, TG_FLOAT32));
    tg_assert_error("tg_arange", "steps of 0", "rule:");
    cr_assert_null(tg_arange(0, 10, -1, TG_FLOAT32));
    tg_assert_error("tg_arange", "towards end");
    cr_assert_null(tg_arange(0, INFINITY, 1, TG_FLOAT32));
    tg_assert_error("tg_arange", "finite");
    cr_assert_null(tg_arange(0, 1e300, 1e-300, TG_FLOAT32));
    tg_assert_error("tg_arange", "too many elements");
    cr_assert_null(tg_linspace(0, 1, -2, TG_FLOAT32));
    tg_assert_error("tg_linspace", "steps is -2");
    cr_assert_null(tg_eye(-1, 2, TG_FLOAT32));
    tg_assert_error("tg_eye", "(-1, 2)");
}

TG_TEST(access_errors, item_of_many_elements)
{
    tg_tensor *t = tg_zeros(TG_SHAPE(2, 2), TG_FLOAT32);
    cr_assert(isnan(tg_item(t)));
    tg_assert_error("tg_item", "(2, 2)", "4 elements", "hint:");
    tg_release(t);
}

TG_TEST(access_errors, get_and_set_out_of_range)
{
    tg_tensor *t = tg_zeros(TG_SHAPE(2, 3), TG_FLOAT32);
    double v;
    cr_assert_eq(tg_get(t, TG_SHAPE(0, 3), &v), -1);
    tg_assert_error("tg_get", "index 3", "dim 1", "[-3, 2]");
    cr_assert_eq(tg_set(t, TG_SHAPE(-3, 0), 1), -1);
    tg_assert_error("tg_set", "index -3", "dim 0");
    cr_assert_eq(tg_get(t, TG_SHAPE(0), &v), -1);
    tg_assert_error("tg_get", "got 1 indices", "(2, 3)");
    cr_assert_eq(tg_size(t, 2), -1);
    tg_assert_error("tg_size", "dim 2 is out of range");
    cr_assert_eq(tg_to_f64_array(t, NULL), -1);
    tg_assert_error("tg_to_f64_array", "NULL");
    tg_release(t);
}

/* A broadcast that fails because a reduction dropped its dim says so, with
 * the shape keepdim would have given; other failures keep the general
 * hint. */
TG_TEST(errors, broadcast_after_a_reduction_hints_at_keepdim)
{
    tg_tensor *x = tg_zeros(TG_SHAPE(4, 27), TG_FLOAT32);
    tg_tensor *m = tg_sum(x, TG_DIMS(1), false); // (4,)
    cr_assert_null(tg_sub(x, m));
    tg_assert_error("tg_sub: cannot broadcast (4, 27) with (4,)",
                    "but 27 != 4 at dim -1",
                    "hint: if (4,) comes from a reduction over dim 1, keep "
                    "that dim (keepdim true): as (4, 1) it lines up");
    tg_tensor *y = tg_zeros(TG_SHAPE(3), TG_FLOAT32);
    cr_assert_null(tg_add(x, y)); // (4, 27) with (3,): no dim to put back
    tg_assert_error("hint: use tg_unsqueeze or tg_reshape");
    tg_release(y);
    tg_release(m);
    tg_release(x);
}
