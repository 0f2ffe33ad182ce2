/*
 * tests/errors/catalogue_rows.h - the row macros every catalogue harness
 * shares: EXPECT_ERROR, EXPECT_SILENT, NEVER_FAILS and
 * ERROR_NOT_TRIGGERED, with the checks they call. Each harness defines
 * ERROR_CASE itself, as its tests run differently: catalogue.h as
 * Criterion tests, tests/dist/catalogue_mpi.h as plain TAP tests on MPI
 * processes. The syntax is one, so scripts/gen_error_catalogue.py reads
 * every catalogue_<area>.c alike. Include it through one of the two.
 */
#ifndef TG_TESTS_ERRORS_CATALOGUE_ROWS_H
#define TG_TESTS_ERRORS_CATALOGUE_ROWS_H

#include <stdbool.h>

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
