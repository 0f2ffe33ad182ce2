/*
 * tests/test_harness.c - the test helpers themselves must be able to fail:
 * the comparison helper is fed wrong answers and must reject each one.
 */
#include "common.h"

#include <math.h>

TG_TEST(harness, close_accepts_equal_and_within_tolerance)
{
    tg_tensor *a = tg_from_array((float[]){1, 2, 3}, TG_SHAPE(3), TG_FLOAT32);
    tg_tensor *b = tg_from_array((float[]){1, 2, 3.0001f}, TG_SHAPE(3),
                                 TG_FLOAT32);
    char report[256];
    cr_assert(tg_test_close(a, a, 0, 0, true, report, sizeof report));
    cr_assert(tg_test_close(a, b, 1e-4, 0, true, report, sizeof report));
    tg_release(a);
    tg_release(b);
}

TG_TEST(harness, close_rejects_a_wrong_value)
{
    tg_tensor *a = tg_from_array((float[]){1, 2, 3}, TG_SHAPE(3), TG_FLOAT32);
    tg_tensor *b = tg_from_array((float[]){1, 2.5f, 3}, TG_SHAPE(3),
                                 TG_FLOAT32);
    char report[256];
    cr_assert_not(tg_test_close(a, b, 1e-3, 1e-3, true, report,
                                sizeof report));
    cr_assert(strstr(report, "flat index 1") != NULL, "report: %s", report);
    tg_release(a);
    tg_release(b);
}

TG_TEST(harness, close_rejects_wrong_shape_dtype_and_nan)
{
    tg_tensor *a = tg_zeros(TG_SHAPE(2, 3), TG_FLOAT32);
    tg_tensor *b = tg_zeros(TG_SHAPE(3, 2), TG_FLOAT32);
    tg_tensor *c = tg_zeros(TG_SHAPE(2, 3), TG_FLOAT64);
    tg_tensor *d = tg_full(TG_SHAPE(2, 3), NAN, TG_FLOAT32);
    char report[256];
    cr_assert_not(tg_test_close(a, b, 1, 1, true, report, sizeof report));
    cr_assert_not(tg_test_close(a, c, 1, 1, true, report, sizeof report));
    cr_assert(tg_test_close(a, c, 1, 1, false, report, sizeof report));
    cr_assert_not(tg_test_close(a, d, 1, 1, true, report, sizeof report));
    cr_assert(tg_test_close(d, d, 0, 0, true, report, sizeof report));
    tg_release(a);
    tg_release(b);
    tg_release(c);
    tg_release(d);
}

/* INT64_MAX and INT64_MAX - 1 are the same double: the int64 comparison
 * must still see them differ, whatever the tolerance. */
TG_TEST(harness, close_compares_int64_exactly)
{
    tg_tensor *a = tg_from_array((int64_t[]){1, INT64_MAX}, TG_SHAPE(2),
                                 TG_INT64);
    tg_tensor *b = tg_from_array((int64_t[]){1, INT64_MAX - 1}, TG_SHAPE(2),
                                 TG_INT64);
    char report[256];
    cr_assert(tg_test_close(a, a, 0, 0, true, report, sizeof report));
    cr_assert_not(tg_test_close(a, b, 1, 1, true, report, sizeof report));
    cr_assert(strstr(report, "int64 element 1") != NULL, "report: %s",
              report);
    tg_release(a);
    tg_release(b);
}

/* The teardown's check must catch a leaked tensor. */
TG_TEST(harness, leak_check_catches_a_live_tensor)
{
    char report[256];
    cr_assert(tg_test_no_live_tensors(report, sizeof report));
    tg_tensor *leaked = tg_zeros(TG_SHAPE(2), TG_FLOAT32);
    cr_assert_not(tg_test_no_live_tensors(report, sizeof report));
    cr_assert(strstr(report, "1 tensors are still alive") != NULL, "%s",
              report);
    tg_release(leaked);
}
