/*
 * tests/fuzz/replay.c - runs one fuzz target over saved inputs without
 * libFuzzer, so that every build with tests (gcc or clang, with or without
 * sanitizers) replays the seed corpus and every input that once found a
 * bug.
 *
 * Usage: fuzz_replay_<target> DIR_OR_FILE...
 * Each argument is a file, or a folder whose files are run in name order
 * (names starting with '.' and README files are skipped). A folder that
 * does not exist counts as empty, so a target may have no regressions yet;
 * but at least one input must run, so a mistyped corpus path fails.
 * Each input is copied into a buffer of exactly its size, so that a read
 * past its end is caught by AddressSanitizer as it would be under
 * libFuzzer.
 *
 * This file is not a fuzzer: it generates nothing. The targets themselves
 * (fuzz_*.c) abort() on a broken invariant, which fails the test.
 */
#include <dirent.h>
#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* Defined by the target (fuzz_npy.c, fuzz_checkpoint.c, fuzz_shapes.c). */
int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static long inputs_run;

static void run_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "replay: cannot open %s: %s\n", path,
                strerror(errno));
        exit(1);
    }
    size_t cap = 4096, n = 0;
    unsigned char *buf = malloc(cap);
    for (;;) {
        if (!buf) {
            fprintf(stderr, "replay: out of memory reading %s\n", path);
            exit(1);
        }
        n += fread(buf + n, 1, cap - n, f);
        if (n < cap)
            break;
        cap *= 2;
        buf = realloc(buf, cap);
    }
    if (ferror(f)) {
        fprintf(stderr, "replay: cannot read %s\n", path);
        exit(1);
    }
    fclose(f);
    /* Exactly n bytes, so that ASan sees any read past the end. */
    unsigned char *exact = malloc(n ? n : 1);
    if (!exact) {
        fprintf(stderr, "replay: out of memory for %s\n", path);
        exit(1);
    }
    memcpy(exact, buf, n);
    free(buf);
    printf("replay: %s (%zu bytes)\n", path, n);
    fflush(stdout);
    LLVMFuzzerTestOneInput(exact, n);
    free(exact);
    inputs_run++;
}

static int by_name(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static bool skipped(const char *name)
{
    return name[0] == '.' || strncmp(name, "README", 6) == 0;
}

static void run_folder(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d) {
        printf("replay: no folder %s (no inputs there)\n", dir);
        return;
    }
    char **names = NULL;
    size_t count = 0, cap = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (skipped(e->d_name))
            continue;
        if (count == cap) {
            cap = cap ? cap * 2 : 64;
            names = realloc(names, cap * sizeof *names);
        }
        size_t len = strlen(dir) + strlen(e->d_name) + 2;
        char *path = names ? malloc(len) : NULL;
        if (!path) {
            fprintf(stderr, "replay: out of memory listing %s\n", dir);
            exit(1);
        }
        snprintf(path, len, "%s/%s", dir, e->d_name);
        names[count++] = path;
    }
    closedir(d);
    if (count)
        qsort(names, count, sizeof *names, by_name);
    for (size_t i = 0; i < count; i++) {
        struct stat st;
        if (stat(names[i], &st) == 0 && S_ISREG(st.st_mode))
            run_file(names[i]);
        free(names[i]);
    }
    free(names);
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: %s DIR_OR_FILE...\n", argv[0]);
        return 2;
    }
    LLVMFuzzerInitialize(&argc, &argv);
    for (int i = 1; i < argc; i++) {
        struct stat st;
        if (stat(argv[i], &st) == 0 && S_ISREG(st.st_mode))
            run_file(argv[i]);
        else
            run_folder(argv[i]);
    }
    if (inputs_run == 0) {
        fprintf(stderr, "replay: no inputs found in the given paths\n");
        return 1;
    }
    printf("replay: %ld inputs, no invariant broken\n", inputs_run);
    return 0;
}
