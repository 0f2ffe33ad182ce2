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

/* The call failed (failed is the caller's test of its result, e.g.
 * `y == NULL` or `rc == -1`) and the first line of tg_last_error() is
 * exactly first_line, a string literal that starts with the reporting
 * function's name and ": ". */
#define EXPECT_ERROR(failed, first_line)                                    \
    catalogue_expect_error((failed), #failed, (first_line), __FILE__,       \
                           __LINE__)

/* The call failed WITHOUT a new message: a NULL tensor argument means an
 * earlier call already failed and reported, so a chain of calls reports
 * once (STYLE.md). The last error must still be empty. */
#define EXPECT_SILENT(failed)                                               \
    catalogue_expect_silent((failed), #failed, __FILE__, __LINE__)

/* A function that cannot report an error, with the reason (a string
 * literal) shown in the table. Checks at compile time that fn exists. */
#define NEVER_FAILS(fn, reason)                                             \
    __attribute__((unused)) static void (*const fn##_never_fails)(void) =  \
        (void (*)(void))fn

/* A message the library can format but no test can make it print, with
 * the reason (e.g. a check that guards an internal invariant). first_line
 * is the message's first line as its format string writes it. */
#define ERROR_NOT_TRIGGERED(fn, first_line, reason)                         \
    CATALOGUE_NOT_TRIGGERED_(fn, __LINE__)
#define CATALOGUE_NOT_TRIGGERED_(fn, line) CATALOGUE_NOT_TRIGGERED__(fn, line)
#define CATALOGUE_NOT_TRIGGERED__(fn, line)                                 \
    __attribute__((unused)) static void (*const fn##_not_triggered_##line)( \
        void) = (void (*)(void))fn

void catalogue_expect_error(bool failed, const char *failed_text,
                            const char *first_line, const char *file,
                            int line);
void catalogue_expect_silent(bool failed, const char *failed_text,
                             const char *file, int line);

#endif
