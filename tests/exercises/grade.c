/*
 * tests/exercises/grade.c - the graders' shared checks (grade.h).
 */
#include "grade.h"

#include <string.h>

void ex_check_stub(const char *statement)
{
    const char *file, *fn;
    if (!ex_stub_ran(&file, &fn))
        return;
    /* __FILE__ is as the compiler saw it, relative to the build folder */
    const char *rel = strstr(file, "examples/exercises/");
    if (rel != NULL)
        file = rel;
    cr_assert_fail("%s() is not implemented yet.\n"
                   "    Write it in %s (replace the EX_NOT_IMPLEMENTED() stub);\n"
                   "    the statement is docs/exercises/%s.",
                   fn, file, statement);
}

tg_tensor *ex_require(tg_tensor *t, const char *what)
{
    if (t == NULL)
        cr_assert_fail("%s returned NULL; the last error was:\n%s", what,
                 tg_last_error()[0] ? tg_last_error() : "(none reported)");
    return t;
}
