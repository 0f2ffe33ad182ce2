/*
 * tests/fuzz/fuzz_common.h - what the fuzz targets share: the check that
 * stops the process when an invariant breaks, and a per-process scratch
 * folder.
 *
 * A broken invariant calls abort(), which libFuzzer reports as a crash
 * (and saves the input), and which fails the replay test. Not a test
 * framework: the targets run under libFuzzer or replay.c, never Criterion.
 */
#ifndef TG_FUZZ_COMMON_H
#define TG_FUZZ_COMMON_H

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tapegrad.h"

#if defined(__GNUC__)
__attribute__((format(printf, 1, 2), noreturn))
#endif
static inline void fuzz_fail(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "fuzz: invariant broken: ");
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, "\nfuzz: last error: %s\n", tg_last_error());
    abort();
}

/* FUZZ_CHECK(cond, "what, with %d values", ...) */
#define FUZZ_CHECK(cond, ...)                                               \
    do {                                                                    \
        if (!(cond))                                                        \
            fuzz_fail(__VA_ARGS__);                                         \
    } while (0)

/* Makes a fresh folder $TMPDIR/tg-fuzz-<what>-XXXXXX into dir (size
 * cap); aborts if it cannot. */
static inline void fuzz_scratch_dir(const char *what, char *dir, size_t cap)
{
    const char *tmp = getenv("TMPDIR");
    snprintf(dir, cap, "%s/tg-fuzz-%s-XXXXXX", tmp && tmp[0] ? tmp : "/tmp",
             what);
    FUZZ_CHECK(mkdtemp(dir) != NULL, "cannot make a scratch folder %s",
               dir);
}

/* Reads a whole file into a malloc'd buffer; NULL if it cannot. */
static inline unsigned char *fuzz_read_file(const char *path, size_t *n)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    size_t cap = 1024, len = 0;
    unsigned char *buf = malloc(cap);
    while (buf) {
        len += fread(buf + len, 1, cap - len, f);
        if (len < cap)
            break;
        unsigned char *bigger = realloc(buf, cap * 2);
        if (!bigger) {
            free(buf);
            buf = NULL;
            break;
        }
        buf = bigger;
        cap *= 2;
    }
    if (buf && ferror(f)) {
        free(buf);
        buf = NULL;
    }
    fclose(f);
    *n = len;
    return buf;
}

/* Writes n bytes to path; aborts if it cannot (the scratch folder is
 * ours). */
static inline void fuzz_write_file(const char *path, const void *data,
                                   size_t n)
{
    FILE *f = fopen(path, "wb");
    FUZZ_CHECK(f != NULL, "cannot write %s", path);
    FUZZ_CHECK(n == 0 || fwrite(data, 1, n, f) == n, "cannot write %s",
               path);
    FUZZ_CHECK(fclose(f) == 0, "cannot close %s", path);
}

#endif
