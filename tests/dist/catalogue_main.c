/*
 * tests/dist/catalogue_main.c - runs the rows of
 * tests/errors/catalogue_dist.c (catalogue_mpi.h) as TAP tests on real
 * MPI processes (meson starts it with 2 ranks).
 */
#include "catalogue_mpi.h"

#include <stdio.h>

enum { MAX_ROWS = 64 };
static mt_case rows[MAX_ROWS];
static int nrows;
static int from_rank; // the next EXPECT_ checks ranks >= from_rank

void catalogue_register(const char *name, void (*run)(void))
{
    if (nrows < MAX_ROWS)
        rows[nrows++] = (mt_case){name, run, 1};
    else
        nrows++; // main bails out
}

void catalogue_expect_from_rank(int rank)
{
    from_rank = rank;
}

void catalogue_expect_error(bool failed, const char *failed_text,
                            const char *first_line, const char *file, int line)
{
    bool mine = mt_rank >= from_rank;
    from_rank = 0;
    if (!mine)
        return;
    if (!failed) {
        mt_fail(file, line, "the call did not fail (%s is false)",
                failed_text);
        return;
    }
    if (!mt_first_line_is(first_line))
        mt_fail(file, line, "the message's first line differs from the "
                "catalogue's\n  catalogue: %s\n  library:   %s",
                first_line, tg_last_error());
}

void catalogue_expect_silent(bool failed, const char *failed_text,
                             const char *file, int line)
{
    bool mine = mt_rank >= from_rank;
    from_rank = 0;
    if (!mine)
        return;
    if (!failed)
        mt_fail(file, line, "the call did not fail (%s is false)",
                failed_text);
    else if (tg_last_error()[0] != '\0')
        mt_fail(file, line, "the call failed on a NULL argument but reported "
                "a new message");
}

int main(int argc, char **argv)
{
    if (nrows > MAX_ROWS) {
        printf("Bail out! more than %d rows: raise MAX_ROWS\n", MAX_ROWS);
        return 1;
    }
    return mt_main(argc, argv, rows, nrows);
}
