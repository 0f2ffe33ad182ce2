/*
 * tensor/error.c - error messages and the replaceable error handler.
 *
 * Every public function that fails records one message for tg_last_error()
 * and passes it to the handler. Both are per thread, so two threads that
 * train two models never see each other's errors. This file is not where
 * messages are written: each function writes its own, naming itself, the
 * values involved, the rule and a hint (see STYLE.md).
 */
#include "internal.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TG_ERROR_MAX 2048

static _Thread_local char last_error[TG_ERROR_MAX];
static _Thread_local tg_error_handler handler = tg_error_handler_print;

void tg_error_handler_print(const char *message)
{
    fprintf(stderr, "%s\n", message);
}

void tg_error_handler_abort(const char *message)
{
    fprintf(stderr, "%s\n", message);
    abort();
}

void tg_error_handler_quiet(const char *message)
{
    (void)message;
}

tg_error_handler tg_set_error_handler(tg_error_handler h)
{
    tg_error_handler previous = handler;
    handler = h ? h : tg_error_handler_print;
    return previous;
}

const char *tg_last_error(void)
{
    return last_error;
}

void tg_clear_error(void)
{
    last_error[0] = '\0';
}

void tg_error(const char *fn, const char *fmt, ...)
{
    int n = snprintf(last_error, sizeof last_error, "%s: ", fn);
    if (n < 0 || (size_t)n >= sizeof last_error)
        n = 0;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(last_error + n, sizeof last_error - (size_t)n, fmt, ap);
    va_end(ap);
    handler(last_error);
}

/* ------------------------------------------------ environment switches */

int tg_env_choice(const char *var, const char *const *names, int n,
                  int fallback, const char *fallback_says)
{
    const char *s = getenv(var);
    if (!s || !*s)
        return fallback;
    for (int k = 0; k < n; k++)
        if (strcmp(s, names[k]) == 0)
            return k;
    /* Not a library error (no call failed): a warning, so that a misspelt
     * switch is never silently ignored. */
    char choices[256] = "";
    for (int k = 0; k < n; k++)
        snprintf(choices + strlen(choices), sizeof choices - strlen(choices),
                 "%s%s", k == 0 ? "" : k == n - 1 ? " or " : ", ", names[k]);
    fprintf(stderr,
            "tapegrad: %s=\"%s\" is not understood; %s\n"
            "  rule: %s is %s\n",
            var, s, fallback_says, var, choices);
    return fallback;
}

/* Messages are cut at TG_ERROR_MAX bytes; a path of any length (PATH_MAX is
 * 4096, and a name may be longer still) would push the rule and hint out,
 * so one longer than TG_PATH_SHOWN_MAX keeps its first and last bytes. The
 * cuts move back to the start of a UTF-8 character, never into one. */
const char *tg_path_shown(const char *path, char buf[TG_PATH_SHOWN_MAX + 1])
{
    size_t len = strlen(path);
    if (len <= TG_PATH_SHOWN_MAX)
        return path;
    static const char dots[] = "...";
    const size_t keep = TG_PATH_SHOWN_MAX - (sizeof dots - 1);
    size_t head = keep / 2;
    size_t tail = len - (keep - head); // where the kept end starts
    while (head > 0 && ((unsigned char)path[head] & 0xC0) == 0x80)
        head--; // path[head] would continue a character: cut before it
    while (tail < len && ((unsigned char)path[tail] & 0xC0) == 0x80)
        tail++;
    memcpy(buf, path, head);
    memcpy(buf + head, dots, sizeof dots - 1);
    memcpy(buf + head + sizeof dots - 1, path + tail, len - tail + 1);
    return buf;
}
