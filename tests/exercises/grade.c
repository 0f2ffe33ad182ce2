/*
 * tests/exercises/grade.c - the graders' shared checks (grade.h).
 */
#include "grade.h"

#include <stdio.h>
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

const char *ex_shape_text(const int64_t *shape, int ndim, char *buf,
                          size_t size)
{
    size_t k = (size_t)snprintf(buf, size, "(");
    for (int d = 0; d < ndim && k < size; d++)
        k += (size_t)snprintf(buf + k, size - k, "%s%lld", d ? ", " : "",
                              (long long)shape[d]);
    if (k < size)
        snprintf(buf + k, size - k, ndim == 1 ? ",)" : ")");
    return buf;
}

void ex_check_shape(const tg_tensor *t, const char *what,
                    const int64_t *shape, int ndim, const char *hint_2d)
{
    char got[TG_SHAPE_STR_MAX], want[TG_SHAPE_STR_MAX];
    ex_shape_text(shape, ndim, want, sizeof want);
    bool same = t->ndim == ndim;
    for (int i = 0; same && i < ndim; i++)
        same = t->shape[i] == shape[i];
    bool slip = hint_2d != NULL && ndim == 1 && t->ndim == 2;
    cr_assert(same, "%s has shape %s but must have shape %s%s%s%s", what,
              tg_shape_str(t, got), want, slip ? " (" : "",
              slip ? hint_2d : "", slip ? ")" : "");
    cr_assert(t->dtype == TG_FLOAT64, "%s is %s but must be float64", what,
              tg_dtype_name(t->dtype));
}

void ex_check_close(const tg_tensor *actual, const tg_tensor *expected,
                    const char *what, double rtol, double atol)
{
    char report[1024];
    cr_assert(tg_test_close(actual, expected, rtol, atol, true, report,
                            sizeof report),
              "%s: %s", what, report);
}
