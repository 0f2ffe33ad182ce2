/*
 * tests/dist/catalogue_mpi.h - ERROR_CASE for the rows of dist/dist.h
 * (tests/errors/catalogue_dist.c), which run on real MPI processes
 * through the plain harness of mpi_test.h instead of Criterion (whose
 * forked tests MPI_Init does not survive). The other row macros are
 * tests/errors/catalogue_rows.h's, shared with catalogue.h, so
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
#include "../errors/catalogue_rows.h" // the macros but ERROR_CASE

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

void catalogue_expect_from_rank(int rank);

#endif
