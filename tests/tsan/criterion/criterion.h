/*
 * tests/tsan/criterion/criterion.h - a stand-in for the few Criterion
 * macros the threaded tests use, so that those files build into a plain
 * program under ThreadSanitizer: Criterion 2.4 itself crashes at start-up
 * in a binary built with -fsanitize=thread. tests/tsan/meson.build puts
 * this folder first on the include path, so `#include
 * <criterion/criterion.h>` in tests/common.h finds this file there.
 *
 * Test(suite, name, .init = f, .fini = f, .disabled = b) registers a test
 * with the runner (standin.c); a failed cr_assert* prints the file, the
 * line and the assertion, and ends the program with status 1. No fork:
 * every test runs in the one process, one after the other.
 */
#ifndef TG_TSAN_CRITERION_STANDIN_H
#define TG_TSAN_CRITERION_STANDIN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct tg_standin_test {
    const char *suite, *name;
    void (*body)(void);
    void (*init)(void);
    void (*fini)(void);
    bool disabled; // runs only when named on the command line
    int end_;      // lets Test() be called with no option
    struct tg_standin_test *next;
} tg_standin_test;

void tg_standin_register(tg_standin_test *test);
_Noreturn void tg_standin_fail(const char *file, int line,
                               const char *assertion);

#define Test(...) TG_STANDIN_TEST_(__VA_ARGS__, .end_ = 0)
#define TG_STANDIN_TEST_(suite, name, ...)                                  \
    static void suite##_##name##_standin(void);                            \
    static tg_standin_test suite##_##name##_standin_entry = {              \
        #suite, #name, suite##_##name##_standin, __VA_ARGS__};             \
    __attribute__((constructor)) static void suite##_##name##_standin_reg( \
        void)                                                              \
    {                                                                      \
        tg_standin_register(&suite##_##name##_standin_entry);              \
    }                                                                      \
    static void suite##_##name##_standin(void)

/* The condition, then an optional printf-style message that the stand-in
 * prints only as source text. */
#define TG_STANDIN_FIRST_(a, ...) a
#define TG_STANDIN_SECOND_(a, b, ...) b
#define TG_STANDIN_CHECK_(ok, text)                                         \
    do {                                                                    \
        if (!(ok))                                                          \
            tg_standin_fail(__FILE__, __LINE__, text);                      \
    } while (0)
#define TG_STANDIN_CMP_(op, ...)                                            \
    TG_STANDIN_CHECK_((TG_STANDIN_FIRST_(__VA_ARGS__, 0))                   \
                          op(TG_STANDIN_SECOND_(__VA_ARGS__, 0, 0)),       \
                      #__VA_ARGS__)

#define cr_assert(...) \
    TG_STANDIN_CHECK_(TG_STANDIN_FIRST_(__VA_ARGS__, 0), #__VA_ARGS__)
#define cr_assert_not(...) \
    TG_STANDIN_CHECK_(!(TG_STANDIN_FIRST_(__VA_ARGS__, 0)), #__VA_ARGS__)
#define cr_assert_null(...) \
    TG_STANDIN_CHECK_((TG_STANDIN_FIRST_(__VA_ARGS__, 0)) == NULL, #__VA_ARGS__)
#define cr_assert_not_null(...) \
    TG_STANDIN_CHECK_((TG_STANDIN_FIRST_(__VA_ARGS__, 0)) != NULL, #__VA_ARGS__)
#define cr_assert_str_empty(...) \
    TG_STANDIN_CHECK_((TG_STANDIN_FIRST_(__VA_ARGS__, 0))[0] == '\0',       \
                      #__VA_ARGS__)
#define cr_assert_str_eq(...)                                               \
    TG_STANDIN_CHECK_(strcmp(TG_STANDIN_FIRST_(__VA_ARGS__, 0),             \
                             TG_STANDIN_SECOND_(__VA_ARGS__, 0, 0)) == 0,   \
                      #__VA_ARGS__)
#define cr_assert_eq(...) TG_STANDIN_CMP_(==, __VA_ARGS__)
#define cr_assert_neq(...) TG_STANDIN_CMP_(!=, __VA_ARGS__)
#define cr_assert_lt(...) TG_STANDIN_CMP_(<, __VA_ARGS__)
#define cr_assert_leq(...) TG_STANDIN_CMP_(<=, __VA_ARGS__)
#define cr_assert_gt(...) TG_STANDIN_CMP_(>, __VA_ARGS__)
#define cr_assert_geq(...) TG_STANDIN_CMP_(>=, __VA_ARGS__)
#define cr_assert_fail(...) tg_standin_fail(__FILE__, __LINE__, #__VA_ARGS__)

#endif
