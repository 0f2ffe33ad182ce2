/*
 * tests/dist/catalogue_mpi.h - catalogue.h's row macros for the rows of
 * dist/dist.h (tests/errors/catalogue_dist.c), which run on real MPI
 * processes through the plain harness of mpi_test.h instead of Criterion
 * (whose forked tests MPI_Init does not survive). Same syntax, so
 * scripts/gen_error_catalogue.py reads these rows like the others.
 *
 * Each row runs on every rank. Rows about ranks that disagree make their
 * mistake on some ranks only; catalogue_expect_from_rank(r) then limits
 * the next EXPECT_ to the ranks >= r (the others' outcome is a different
 * row's business, e.g. the rank that passed NULL stays silent).
 */
#ifndef TG_TESTS_DIST_CATALOGUE_MPI_H
#define TG_TESTS_DIST_CATALOGUE_MPI_H

#include <mpi.h> // before tapegrad.h: declares tg_process_group_new

#include "mpi_test.h"

#include <string.h>

void catalogue_register(const char *name, void (*run)(void));

#define ERROR_CASE(fn, name, situation)                                     \
    static void fn##_##name##_case(void);                                   \
    __attribute__((constructor)) static void fn##_##name##_register(void)   \
    {                                                                       \
        (void)(situation);                                                  \
        (void)&fn;                                                          \
        catalogue_register(#fn "/" #name, fn##_##name##_case);              \
    }                                                                       \
    static void fn##_##name##_case(void)

#define EXPECT_ERROR(failed, first_line)                                    \
    catalogue_expect_error((failed), #failed, (first_line), __FILE__,       \
                           __LINE__)
#define EXPECT_SILENT(failed)                                               \
    catalogue_expect_silent((failed), #failed, __FILE__, __LINE__)

#define NEVER_FAILS(fn, reason)                                             \
    __attribute__((unused)) static void (*const fn##_never_fails)(void) =  \
        (void (*)(void))fn
#define ERROR_NOT_TRIGGERED(fn, first_line, reason)                         \
    CATALOGUE_NOT_TRIGGERED_(fn, __LINE__)
#define CATALOGUE_NOT_TRIGGERED_(fn, line) CATALOGUE_NOT_TRIGGERED__(fn, line)
#define CATALOGUE_NOT_TRIGGERED__(fn, line)                                 \
    __attribute__((unused)) static void (*const fn##_not_triggered_##line)( \
        void) = (void (*)(void))fn

void catalogue_expect_from_rank(int rank);
void catalogue_expect_error(bool failed, const char *failed_text,
                            const char *first_line, const char *file,
                            int line);
void catalogue_expect_silent(bool failed, const char *failed_text,
                             const char *file, int line);

#endif
