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

/* The checks above can fail: fed a wrong first line, a call that did not
 * fail, or a message where silence was expected, each records a failure
 * (on stderr, marked as expected). */
static void checks_can_fail(void)
{
    fprintf(stderr, "[rank %d] the next three failures are expected:\n",
            mt_rank);
    tg_tensor *y = tg_reshape(NULL, TG_SHAPE(2)); // NULL: silent
    tg_tensor *x = tg_zeros(TG_SHAPE(2, 3), TG_FLOAT32);
    tg_tensor *z = tg_reshape(x, TG_SHAPE(4)); // an error
    bool caught[3];
    catalogue_expect_error(z == NULL, "z == NULL", "tg_reshape: not this line",
                           __FILE__, __LINE__);
    caught[0] = mt_failed(true);
    catalogue_expect_error(y != NULL, "y != NULL", "tg_reshape: anything",
                           __FILE__, __LINE__);
    caught[1] = mt_failed(true);
    catalogue_expect_silent(z == NULL, "z == NULL", __FILE__, __LINE__);
    caught[2] = mt_failed(true);
    for (int i = 0; i < 3; i++)
        MT_CHECK(caught[i], "check %d let a wrong answer through", i);
    tg_release(z);
    tg_release(x);
    tg_release(y);
}

int main(int argc, char **argv)
{
    catalogue_register("the row checks fail on wrong answers",
                       checks_can_fail);
    if (nrows > MAX_ROWS) {
        printf("Bail out! more than %d rows: raise MAX_ROWS\n", MAX_ROWS);
        return 1;
    }
    return mt_main(argc, argv, rows, nrows);
}
