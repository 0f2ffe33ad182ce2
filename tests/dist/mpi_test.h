/*
 * tests/dist/mpi_test.h - a tiny TAP harness for programs that run as
 * several MPI processes (mpiexec -n W). Criterion forks each test, which
 * MPI_Init does not survive, so these tests are plain C.
 *
 * Every rank runs every test. After each test the ranks combine their
 * verdicts (a failure on any rank fails the test) and rank 0 alone prints
 * the TAP line, so the output is one TAP stream whatever W is. A failing
 * rank prints its reason on stderr, prefixed with its rank. Each test must
 * end with zero live tensors on every rank, which is checked too.
 */
#ifndef TG_TESTS_DIST_MPI_TEST_H
#define TG_TESTS_DIST_MPI_TEST_H

#include "tapegrad.h"

#include <stdbool.h>

/* The group over MPI_COMM_WORLD, made by mt_main. */
extern tg_process_group *mt_pg;
extern int mt_rank, mt_size;

typedef struct mt_case {
    const char *name;
    void (*run)(void);
    int min_size; // skipped (TAP "# SKIP") when the world is smaller
} mt_case;

/* Runs the cases (quiet error handler, last error cleared before each),
 * prints TAP on rank 0, finalizes MPI. Returns the process exit code. */
int mt_main(int argc, char **argv, const mt_case *cases, int ncases);

/* Records a failure of the running test on this rank (printf format). */
void mt_fail(const char *file, int line, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Whether the running test has failed on this rank so far; with clear,
 * forgets it (for the harness's own checks, which fail on purpose). */
bool mt_failed(bool clear);

#define MT_CHECK(cond, ...)                                                 \
    do {                                                                    \
        if (!(cond))                                                        \
            mt_fail(__FILE__, __LINE__, __VA_ARGS__);                       \
    } while (0)

/* The first line of tg_last_error() equals first_line. */
bool mt_first_line_is(const char *first_line);

/* max |a - b| over the elements of two float64 tensors of one shape
 * (INFINITY if the shapes differ). */
double mt_max_abs_diff(const tg_tensor *a, const tg_tensor *b);

/* How many MPI_Allreduce and MPI_Allgather calls this rank has made, in a
 * test linked with mpi_calls.c (which interposes the two). */
extern int mt_mpi_calls;

#endif
