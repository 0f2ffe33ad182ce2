/*
 * tests/tsan/standin.c - the runner of the Criterion stand-in
 * (criterion/criterion.h here): runs the registered tests in this one
 * process, in the order of their files, and says which ran.
 *
 *   tsan_threads                 every test but the disabled ones
 *   tsan_threads suite/name ...  only those (disabled ones too)
 *
 * Exit status 0 when every test ran to its end; a failed assertion ends
 * the program with status 1, and ThreadSanitizer ends it with its own
 * status (66) after any report, as tests/meson.build's TSAN_OPTIONS ask.
 */
#include "criterion/criterion.h"

static tg_standin_test *first, *last;
static const tg_standin_test *running;

void tg_standin_register(tg_standin_test *test)
{
    test->next = NULL;
    if (last)
        last->next = test;
    else
        first = test;
    last = test;
}

_Noreturn void tg_standin_fail(const char *file, int line,
                               const char *assertion)
{
    fprintf(stderr, "FAIL %s/%s: %s:%d: assertion failed: %s\n",
            running ? running->suite : "?", running ? running->name : "?",
            file, line, assertion);
    exit(1);
}

static bool named(const tg_standin_test *t, int argc, char **argv)
{
    char full[256];
    snprintf(full, sizeof full, "%s/%s", t->suite, t->name);
    for (int i = 1; i < argc; i++)
        if (strcmp(argv[i], full) == 0)
            return true;
    return false;
}

int main(int argc, char **argv)
{
    int ran = 0;
    for (const tg_standin_test *t = first; t; t = t->next) {
        if (argc > 1 ? !named(t, argc, argv) : t->disabled)
            continue;
        running = t;
        fprintf(stderr, "run  %s/%s\n", t->suite, t->name);
        if (t->init)
            t->init();
        t->body();
        if (t->fini)
            t->fini();
        fprintf(stderr, "ok   %s/%s\n", t->suite, t->name);
        ran++;
    }
    running = NULL;
    if (ran == 0 || (argc > 1 && ran != argc - 1)) {
        fprintf(stderr, "%d tests ran: a name given matches no test\n", ran);
        return 1;
    }
    fprintf(stderr, "%d tests passed\n", ran);
    return 0;
}
