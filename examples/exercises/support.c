/*
 * examples/exercises/support.c - the stub marker of the exercises.
 *
 * EX_NOT_IMPLEMENTED() reports the stub as a library error would (so a
 * program of your own that calls a stub says why it got NULL) and records
 * it for the grader, which then fails with "not implemented yet" before
 * looking at the result.
 */
#include "exercises.h"

#include <stddef.h>

static const char *stub_file;
static const char *stub_fn;

void ex_not_implemented(const char *file, const char *fn)
{
    stub_file = file;
    stub_fn = fn;
    tg_error(fn, "not implemented yet\n  hint: write it in %s", file);
}

/* For the graders (tests/exercises/grade.h): the last stub that ran since
 * ex_stub_reset(), or false. */
bool ex_stub_ran(const char **file, const char **fn);
void ex_stub_reset(void);

bool ex_stub_ran(const char **file, const char **fn)
{
    if (stub_fn == NULL)
        return false;
    *file = stub_file;
    *fn = stub_fn;
    return true;
}

void ex_stub_reset(void)
{
    stub_file = NULL;
    stub_fn = NULL;
}
