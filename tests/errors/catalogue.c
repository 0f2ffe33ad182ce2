/*
 * tests/errors/catalogue.c - the checks behind catalogue.h's EXPECT_ macros.
 */
#include "catalogue.h"

#include <stdio.h>

void catalogue_expect_error(bool failed, const char *failed_text,
                            const char *first_line, const char *file,
                            int line)
{
    cr_assert(failed, "%s:%d: the call did not fail (%s is false); last "
                      "error: \"%s\"",
              file, line, failed_text, tg_last_error());
    const char *msg = tg_last_error();
    size_t n = strcspn(msg, "\n");
    cr_assert(n == strlen(first_line) && strncmp(msg, first_line, n) == 0,
              "%s:%d: the message's first line differs from the "
              "catalogue's\n  catalogue: %s\n  library:   %.*s\n"
              "(full message:\n%s)",
              file, line, first_line, (int)n, msg, msg);
}

void catalogue_expect_silent(bool failed, const char *failed_text,
                             const char *file, int line)
{
    cr_assert(failed, "%s:%d: the call did not fail (%s is false)", file,
              line, failed_text);
    cr_assert(tg_last_error()[0] == '\0',
              "%s:%d: the call failed on a NULL argument but reported a "
              "new message (it should fail silently):\n%s",
              file, line, tg_last_error());
}
