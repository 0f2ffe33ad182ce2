/*
 * tests/errors/catalogue.h - the rows of docs/errors.md, as tests.
 *
 * Each ERROR_CASE is one row of the table: the public function, the
 * mistake (the "when" column) and, through the EXPECT_ macro in its body,
 * the exact first line of the message the library reports. The body makes
 * the mistake for real, so a row whose message changes, or whose mistake
 * stops failing, fails the suite. scripts/gen_error_catalogue.py reads
 * these files (not the binaries) to write docs/errors.md, and checks that
 * every public function has a row and that every message the library can
 * format is matched by at least one row.
 *
 *     ERROR_CASE(tg_reshape, numel_mismatch,
 *                "the new shape has a different number of elements")
 *     {
 *         tg_tensor *x = tg_zeros((int64_t[]){2, 3}, 2, TG_FLOAT32);
 *         tg_tensor *y = tg_reshape(x, (int64_t[]){4}, 1);
 *         EXPECT_ERROR(y == NULL, "tg_reshape: cannot reshape ...");
 *         tg_release(x);
 *     }
 *
 * A case runs as a TG_TEST (quiet handler, no live tensors at the end)
 * with the last error cleared before the body.
 */
#ifndef TG_TESTS_ERRORS_CATALOGUE_H
#define TG_TESTS_ERRORS_CATALOGUE_H

#include "../common.h"

/* fn is checked to be a declared function; name is unique within fn;
 * situation is a string literal, the table's "when" column. */
#define ERROR_CASE(fn, name, situation)                                     \
    static void fn##_##name##_case(void);                                   \
    TG_TEST(fn, name)                                                       \
    {                                                                       \
        (void)(situation);                                                  \
        (void)&fn;                                                          \
        tg_clear_error();                                                   \
        fn##_##name##_case();                                               \
    }                                                                       \
    static void fn##_##name##_case(void)

#include "catalogue_rows.h" // EXPECT_ERROR, EXPECT_SILENT, NEVER_FAILS, ...

#endif
