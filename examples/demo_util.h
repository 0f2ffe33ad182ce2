/*
 * examples/demo_util.h - what the two training demos (train_mlp.c and
 * deep_mlp_diagnostics.c) share: reading their options, making their
 * output folder and files, running gnuplot on the scripts in
 * scripts/plots/, and the check at exit that every tensor was released.
 *
 * It is not part of the library: nothing here is installed, and the names
 * start with demo_, not tg_. Errors are printed for the person running the
 * demo, not recorded with tg_error.
 */
#ifndef TG_EXAMPLES_DEMO_UTIL_H
#define TG_EXAMPLES_DEMO_UTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

/* The folder of the gnuplot scripts when the environment variable
 * TG_PLOTS_DIR is not set: the build passes the source tree's
 * scripts/plots/; a build without it looks in ./scripts/plots. */
#ifndef TG_PLOTS_DIR
#define TG_PLOTS_DIR "scripts/plots"
#endif

/* ------------------------------------------------------------- options */

/* What demo_next_option returns when it has not read an option of the
 * demo's list. */
enum {
    DEMO_OPT_END = -1,  // no options left
    DEMO_OPT_HELP = -2, // --help or -h
    DEMO_OPT_BAD = -3,  // not an option, or one without its value; printed
};

/* Reads the next option of the command line, the one after argv[*i]
 * (*i = 0 to start), and moves *i to its last argument. Besides --help
 * (-h) and --no-plots, which sets *plots to false and is passed over, a
 * demo's options are the ones in names (up to a NULL), each with a value
 * given as "--name value" or "--name=value". Returns the index in names of
 * the option read, with *value pointing to its value in argv, or one of
 * DEMO_OPT_*. */
int demo_next_option(int argc, char **argv, int *i, const char *const *names,
                     const char **value, bool *plots);

/* Prints a demo's usage text to f; prog is argv[0]. */
typedef void demo_usage_fn(FILE *f, const char *prog);

/* The exit status of a demo whose options say not to run, parsed being
 * what its option parser returned: 1 for --help, which prints the usage on
 * stdout, status 0; -1 after a bad option (said), which prints it on
 * stderr, status 2. */
int demo_usage_exit(int parsed, demo_usage_fn *usage, const char *prog);

/* Parses s, a whole decimal integer in [lo, hi], into *out; false (and
 * *out unchanged) when s is not one. */
bool demo_parse_int(const char *s, long long lo, long long hi,
                    long long *out);

/* Parses s, a whole finite number > 0 (such as 0.1 or 3e-4), into *out;
 * false (and *out unchanged) when s is not one. */
bool demo_parse_positive(const char *s, double *out);

/* ------------------------------------------------------------- files */

/* mkdir -p: makes path and its missing parents. Returns 0, or -1 after
 * saying "cannot create the folder PATH: reason" on stderr (errno set;
 * ENOTDIR when path is a file). */
int demo_make_dirs(const char *path);

/* dir/name into buf of size bytes; false (with a message) when it does not
 * fit. */
bool demo_join(char *buf, size_t size, const char *dir, const char *name);

/* Opens dir/name for writing; NULL (with a message) on error. */
FILE *demo_open_out(const char *dir, const char *name);

/* ------------------------------------------------------------- gnuplot */

/* Whether an executable file called name is in a folder of $PATH. */
bool demo_on_path(const char *name);

/* Whether gnuplot is on $PATH; when it is not, says so on stdout (the
 * demo then writes its CSV files only, which is not an error). */
bool demo_have_gnuplot(void);

/* The folder of the gnuplot scripts: $TG_PLOTS_DIR when set and not
 * empty, else TG_PLOTS_DIR as the demo was built. */
const char *demo_plots_dir(void);

/* Whether every one of scripts[0 .. n) can be read in dir; if one cannot,
 * says which and where the scripts are, once. */
bool demo_scripts_readable(const char *dir, const char *const *scripts,
                           int n);

/* Writes s to gp as a gnuplot string. */
void demo_gp_string(FILE *gp, const char *s);

/* Writes the gnuplot assignment `name = 's'`. */
void demo_gp_set(FILE *gp, const char *name, const char *value);

/* Writes a demo's own gnuplot variables; arg is the demo's. */
typedef void demo_gp_settings(FILE *gp, const void *arg);

/* Runs gnuplot on dir/script with the variables outdir = out, subtitle and
 * those settings(gp, arg) writes (settings may be NULL). Returns 0, or -1
 * with a message. */
int demo_run_gnuplot(const char *dir, const char *script, const char *out,
                     const char *subtitle, demo_gp_settings *settings,
                     const void *arg);

/* ------------------------------------------------------------- programs */

/* Runs argv[0] (found on $PATH) with the arguments argv[1 ..] (argv ends
 * with NULL), without a shell, and waits for it. Returns its exit status,
 * or -1 with a message when it could not be started or was killed. */
int demo_run_program(char *const argv[]);

/* Renders the Graphviz DOT file dot_path into the PNG and SVG files
 * png_path and svg_path with Graphviz's dot, when it is on $PATH. Returns
 * 1 when both were rendered, 0 when dot is not installed (said on stderr,
 * with how to get it), -1 after an error (with a message). */
int demo_render_dot(const char *dot_path, const char *png_path,
                    const char *svg_path);

/* ------------------------------------------------------------ the end */

/* The exit status of a demo that ends with rc (0, or 1 after an error)
 * once it has released all it made: 1 as well when tensors are still
 * alive, which it says, as it says that the demo stopped after a library
 * error (printed when it happened). */
int demo_exit_status(int rc);

#endif
