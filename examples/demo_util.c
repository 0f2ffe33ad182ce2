/*
 * examples/demo_util.c - what the two training demos (train_mlp.c and
 * deep_mlp_diagnostics.c) share: reading their options, making their
 * output folder and files, running gnuplot on the scripts in
 * scripts/plots/, and the check at exit. See demo_util.h.
 *
 * It is not part of the library: only the demos are built with it (the
 * graph example uses its folders and its Graphviz call), and nothing of
 * it is installed.
 */
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L // popen, pclose, mkdir, access, posix_spawnp
#endif

#include "demo_util.h"

#include "tapegrad.h"

#include <errno.h>
#include <math.h>
#include <spawn.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

/* ------------------------------------------------------------- options */

int demo_next_option(int argc, char **argv, int *i, const char *const *names,
                     const char **value, bool *plots)
{
    const char *arg;
    for (;;) {
        if (++*i >= argc)
            return DEMO_OPT_END;
        arg = argv[*i];
        if (strcmp(arg, "--help") == 0 || strcmp(arg, "-h") == 0)
            return DEMO_OPT_HELP;
        if (strcmp(arg, "--no-plots") != 0)
            break;
        *plots = false;
    }
    /* the others take a value: "--name value" or "--name=value" */
    const char *eq = strchr(arg, '=');
    size_t len = eq ? (size_t)(eq - arg) : strlen(arg);
    int k = 0;
    while (names[k] && !(strlen(names[k]) == len &&
                         strncmp(arg, names[k], len) == 0))
        k++;
    if (!names[k]) {
        fprintf(stderr, "unknown option %s\n", arg);
        return DEMO_OPT_BAD;
    }
    if (eq)
        *value = eq + 1;
    else if (*i + 1 < argc)
        *value = argv[++*i];
    else {
        fprintf(stderr, "option %s needs a value\n", names[k]);
        return DEMO_OPT_BAD;
    }
    return k;
}

int demo_usage_exit(int parsed, demo_usage_fn *usage, const char *prog)
{
    usage(parsed > 0 ? stdout : stderr, prog);
    return parsed > 0 ? 0 : 2;
}

bool demo_parse_int(const char *s, long long lo, long long hi,
                    long long *out)
{
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (errno || end == s || *end || v < lo || v > hi)
        return false;
    *out = v;
    return true;
}

bool demo_parse_positive(const char *s, double *out)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || end == s || *end || !isfinite(v) || !(v > 0.0))
        return false;
    *out = v;
    return true;
}

/* ------------------------------------------------------------- files */

static int make_dirs(const char *path)
{
    char buf[4096];
    size_t len = strlen(path);
    if (len == 0 || len >= sizeof buf) {
        errno = ENAMETOOLONG;
        return -1;
    }
    memcpy(buf, path, len + 1);
    /* each prefix that ends before a '/', then the whole path */
    for (size_t i = 1; i <= len; i++) {
        if (buf[i] != '/' && buf[i] != '\0')
            continue;
        char c = buf[i];
        buf[i] = '\0';
        if (mkdir(buf, 0777) != 0 && errno != EEXIST)
            return -1;
        buf[i] = c;
    }
    /* EEXIST is also what mkdir says about a file of that name */
    struct stat st;
    if (stat(path, &st) != 0)
        return -1;
    if (!S_ISDIR(st.st_mode)) {
        errno = ENOTDIR;
        return -1;
    }
    return 0;
}

int demo_make_dirs(const char *path)
{
    if (make_dirs(path) == 0)
        return 0;
    int e = errno;
    fprintf(stderr, "cannot create the folder %s: %s\n", path, strerror(e));
    errno = e;
    return -1;
}

bool demo_join(char *buf, size_t size, const char *dir, const char *name)
{
    int n = snprintf(buf, size, "%s/%s", dir, name);
    if (n < 0 || (size_t)n >= size) {
        fprintf(stderr, "path too long: %s/%s\n", dir, name);
        return false;
    }
    return true;
}

FILE *demo_open_out(const char *dir, const char *name)
{
    char path[4096];
    if (!demo_join(path, sizeof path, dir, name))
        return NULL;
    FILE *f = fopen(path, "w");
    if (!f)
        fprintf(stderr, "cannot write %s: %s\n", path, strerror(errno));
    return f;
}

/* ------------------------------------------------------------- gnuplot */

bool demo_on_path(const char *name)
{
    const char *path = getenv("PATH");
    if (!path || !*path)
        return false;
    char buf[4096];
    for (const char *p = path;;) {
        const char *colon = strchr(p, ':');
        size_t len = colon ? (size_t)(colon - p) : strlen(p);
        /* an empty entry means the current folder */
        int n = snprintf(buf, sizeof buf, "%.*s/%s", (int)(len ? len : 1),
                         len ? p : ".", name);
        if (n > 0 && (size_t)n < sizeof buf && access(buf, X_OK) == 0)
            return true;
        if (!colon)
            return false;
        p = colon + 1;
    }
}

bool demo_have_gnuplot(void)
{
    if (demo_on_path("gnuplot"))
        return true;
    printf("gnuplot was not found on PATH: no plots (the CSV files are "
           "written).\nTo draw them: apt-get install gnuplot-nox, then run "
           "this again.\n");
    return false;
}

const char *demo_plots_dir(void)
{
    const char *dir = getenv("TG_PLOTS_DIR");
    return dir && *dir ? dir : TG_PLOTS_DIR;
}

bool demo_scripts_readable(const char *dir, const char *const *scripts,
                           int n)
{
    for (int k = 0; k < n; k++) {
        char path[4096];
        if (demo_join(path, sizeof path, dir, scripts[k]) &&
            access(path, R_OK) == 0)
            continue;
        fprintf(stderr,
                "no plots: cannot read the gnuplot script %s/%s\n"
                "(the scripts are in scripts/plots/ of the source tree; set "
                "TG_PLOTS_DIR to that folder)\n",
                dir, scripts[k]);
        return false;
    }
    return true;
}

/* In a single-quoted gnuplot string only the quote itself is special,
 * written twice. */
void demo_gp_string(FILE *gp, const char *s)
{
    fputc('\'', gp);
    for (const char *c = s; *c; c++) {
        if (*c == '\'')
            fputc('\'', gp);
        fputc(*c, gp);
    }
    fputc('\'', gp);
}

void demo_gp_set(FILE *gp, const char *name, const char *value)
{
    fprintf(gp, "%s = ", name);
    demo_gp_string(gp, value);
    fputc('\n', gp);
}

/* The settings and the script go to gnuplot's standard input as gnuplot
 * statements: the paths are gnuplot strings, never seen by a shell. */
int demo_run_gnuplot(const char *dir, const char *script, const char *out,
                     const char *subtitle, demo_gp_settings *settings,
                     const void *arg)
{
    char path[4096];
    if (!demo_join(path, sizeof path, dir, script))
        return -1;
    /* a newline would end the string early */
    if (strchr(out, '\n') || strchr(path, '\n')) {
        fprintf(stderr, "cannot plot: a path contains a newline\n");
        return -1;
    }
    fflush(stdout); // what the demo printed comes before gnuplot's output
    FILE *gp = popen("gnuplot", "w");
    if (!gp) {
        fprintf(stderr, "cannot run gnuplot: %s\n", strerror(errno));
        return -1;
    }
    demo_gp_set(gp, "outdir", out);
    demo_gp_set(gp, "subtitle", subtitle);
    if (settings)
        settings(gp, arg);
    fputs("load ", gp);
    demo_gp_string(gp, path);
    fputc('\n', gp);
    int status = pclose(gp);
    if (status != 0) {
        fprintf(stderr, "gnuplot failed on %s (status %d)\n", path, status);
        return -1;
    }
    return 0;
}

/* ------------------------------------------------------------- programs */

extern char **environ;

int demo_run_program(char *const argv[])
{
    fflush(stdout); // what the demo printed comes before the program's output
    pid_t pid;
    int err = posix_spawnp(&pid, argv[0], NULL, NULL, argv, environ);
    if (err != 0) {
        fprintf(stderr, "cannot run %s: %s\n", argv[0], strerror(err));
        return -1;
    }
    int status;
    while (waitpid(pid, &status, 0) < 0) {
        if (errno != EINTR) {
            fprintf(stderr, "cannot wait for %s: %s\n", argv[0],
                    strerror(errno));
            return -1;
        }
    }
    if (!WIFEXITED(status)) {
        fprintf(stderr, "%s was stopped by a signal\n", argv[0]);
        return -1;
    }
    return WEXITSTATUS(status);
}

int demo_render_dot(const char *dot_path, const char *png_path,
                    const char *svg_path)
{
    if (!demo_on_path("dot")) {
        fprintf(stderr, "Graphviz's dot was not found on PATH: the graph "
                        "is not rendered.\nTo render it: apt-get install "
                        "graphviz, then run this again.\n");
        return 0;
    }
    const char *const formats[2][2] = {{"-Tpng", png_path},
                                       {"-Tsvg", svg_path}};
    for (int k = 0; k < 2; k++) {
        char *argv[] = {"dot", (char *)formats[k][0], (char *)dot_path, "-o",
                        (char *)formats[k][1], NULL};
        int status = demo_run_program(argv);
        if (status != 0) {
            if (status > 0)
                fprintf(stderr, "dot failed on %s (status %d)\n", dot_path,
                        status);
            return -1;
        }
    }
    return 1;
}

/* ------------------------------------------------------------ the end */

int demo_exit_status(int rc)
{
    if (rc != 0 && *tg_last_error())
        fprintf(stderr, "stopped after an error (above)\n");
    /* everything made was released */
    if (tg_live_tensors() != 0) {
        tg_print_live_tensors(stderr); // each one, with what made it
        rc = 1;
    }
    return rc;
}
