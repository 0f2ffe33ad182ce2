/*
 * tests/tensor/test_print.c - tg_format against PyTorch 1.13's repr.
 *
 * tests/reference/print_cases.txt holds tensors and the exact text PyTorch
 * printed for them (written by scripts/reference/torch_print_cases.py; its
 * header describes the format). Every case must match character for
 * character: printing is exact, so there is no tolerance. The checker is
 * also fed a wrong expected text to show that it can fail.
 */
#include "../common.h"

#include <stdio.h>
#include <stdlib.h>

#define MAX_CASES 256

/* One parsed case of print_cases.txt. */
typedef struct print_case {
    char name[128];
    tg_print_options options;
    tg_dtype dtype;
    bool requires_grad, transpose;
    int ndim;
    int64_t shape[TG_MAX_DIMS];
    bool arange;
    double start, step;  // arange: value i is start + i * step
    double *values;      // list: (numel,) as double (floats)
    int64_t *ivalues;    // list: (numel,) exact (int64)
    char *expected;      // the repr, lines joined with '\n'
} print_case;

static const tg_print_options defaults = {4, -1, 1000, 3, 80};

static void case_free(print_case *c)
{
    free(c->values);
    free(c->ivalues);
    free(c->expected);
}

static int64_t case_numel(const print_case *c)
{
    int64_t n = 1;
    for (int d = 0; d < c->ndim; d++)
        n *= c->shape[d];
    return n;
}

/* Reads the next line without its '\n'; false at the end of the file. */
static bool next_line(FILE *f, char **line, size_t *cap)
{
    ssize_t n = getline(line, cap, f);
    if (n < 0)
        return false;
    if (n > 0 && (*line)[n - 1] == '\n')
        (*line)[n - 1] = '\0';
    return true;
}

/* Parses every case of the file into cases[]; returns how many. */
static int load_cases(print_case *cases, int max)
{
    const char *path = tg_test_ref_path("print_cases.txt");
    FILE *f = fopen(path, "r");
    cr_assert_not_null(f, "cannot open %s", path);
    char *line = NULL;
    size_t cap = 0;
    int n = 0;
    while (next_line(f, &line, &cap)) {
        if (line[0] == '#' || line[0] == '\0')
            continue;
        cr_assert(strncmp(line, "case ", 5) == 0, "expected a case: %s",
                  line);
        cr_assert(n < max, "more than %d cases", max);
        print_case *c = &cases[n++];
        memset(c, 0, sizeof *c);
        snprintf(c->name, sizeof c->name, "%s", line + 5);

        cr_assert(next_line(f, &line, &cap));
        long long threshold, edgeitems;
        cr_assert_eq(sscanf(line, "options %d %d %lld %lld %d",
                            &c->options.precision, &c->options.sci_mode,
                            &threshold, &edgeitems, &c->options.linewidth),
                     5, "%s: bad options line", c->name);
        c->options.threshold = threshold;
        c->options.edgeitems = edgeitems;

        cr_assert(next_line(f, &line, &cap));
        char dtype[16];
        int rg, tr, used;
        cr_assert_eq(sscanf(line, "tensor %15s %d %d%n", dtype, &rg, &tr,
                            &used),
                     3, "%s: bad tensor line", c->name);
        c->dtype = strcmp(dtype, "float32") == 0   ? TG_FLOAT32
                   : strcmp(dtype, "float64") == 0 ? TG_FLOAT64
                                                   : TG_INT64;
        c->requires_grad = rg;
        c->transpose = tr;
        char *p = line + used, *end;
        for (long long s; (s = strtoll(p, &end, 10)), end != p; p = end)
            c->shape[c->ndim++] = s;

        cr_assert(next_line(f, &line, &cap));
        int64_t numel = case_numel(c);
        if (strncmp(line, "values arange ", 14) == 0) {
            c->arange = true;
            p = line + 14;
            c->start = strtod(p, &p);
            c->step = strtod(p, &p);
        } else {
            cr_assert(strncmp(line, "values list", 11) == 0, "%s: %s",
                      c->name, line);
            c->values = calloc((size_t)numel + 1, sizeof(double));
            c->ivalues = calloc((size_t)numel + 1, sizeof(int64_t));
            p = line + 11;
            for (int64_t i = 0; i < numel; i++) {
                if (c->dtype == TG_INT64)
                    c->ivalues[i] = strtoll(p, &end, 10);
                else
                    c->values[i] = strtod(p, &end);
                cr_assert(end != p, "%s: value %lld missing", c->name,
                          (long long)i);
                p = end;
            }
        }

        cr_assert(next_line(f, &line, &cap));
        int nlines;
        cr_assert_eq(sscanf(line, "expect %d", &nlines), 1);
        size_t len = 0, room = 256;
        c->expected = malloc(room);
        c->expected[0] = '\0';
        for (int k = 0; k < nlines; k++) {
            cr_assert(next_line(f, &line, &cap), "%s: text cut short",
                      c->name);
            size_t add = strlen(line) + 2;
            while (len + add >= room)
                c->expected = realloc(c->expected, room *= 2);
            len += (size_t)sprintf(c->expected + len, "%s%s",
                                   k ? "\n" : "", line);
        }
    }
    free(line);
    fclose(f);
    return n;
}

/* The case's tensor, built as the generator built it. New reference. */
static tg_tensor *case_tensor(const print_case *c)
{
    int64_t numel = case_numel(c);
    tg_tensor *t = tg_empty(c->shape, c->ndim, c->dtype);
    cr_assert_not_null(t, "%s: %s", c->name, tg_last_error());
    for (int64_t i = 0; i < numel; i++) {
        double v = c->arange ? (double)i * c->step + c->start
                             : c->values[i];
        if (c->dtype == TG_FLOAT32)
            tg_data_f32(t)[i] = (float)v;
        else if (c->dtype == TG_FLOAT64)
            tg_data_f64(t)[i] = v;
        else
            tg_data_i64(t)[i] = c->arange ? (int64_t)v : c->ivalues[i];
    }
    if (c->transpose) {
        tg_tensor *v = tg_transpose(t, 0, 1);
        tg_release(t);
        t = v;
        cr_assert_not_null(t);
        if (c->shape[0] > 1 && c->shape[1] > 1)
            cr_assert_not(tg_is_contiguous(t));
    }
    t->requires_grad = c->requires_grad;
    return t;
}

/* Formats the case's tensor with its options and compares with expected.
 * On a mismatch, says where the texts part in report (malloc'd). */
static bool case_matches(const print_case *c, const char *expected,
                         char **report)
{
    tg_tensor *t = case_tensor(c);
    tg_set_print_options(c->options);
    char *got = tg_format(t);
    tg_set_print_options(defaults);
    tg_release(t);
    bool same = got && strcmp(got, expected) == 0;
    if (!same) {
        size_t at = 0;
        while (got && got[at] && got[at] == expected[at])
            at++;
        size_t size = strlen(expected) + (got ? strlen(got) : 0) + 256;
        *report = malloc(size);
        snprintf(*report, size,
                 "case %s differs at character %zu\n"
                 "--- PyTorch\n%s\n--- tg_format\n%s\n",
                 c->name, at, expected, got ? got : tg_last_error());
    }
    free(got);
    return same;
}

TG_TEST(print, every_pytorch_case_matches_exactly)
{
    static print_case cases[MAX_CASES];
    int n = load_cases(cases, MAX_CASES);
    cr_assert_geq(n, 40, "only %d cases in print_cases.txt", n);
    int failed = 0;
    for (int i = 0; i < n; i++) {
        char *report = NULL;
        if (!case_matches(&cases[i], cases[i].expected, &report)) {
            cr_log_error("%s", report);
            failed++;
        }
        free(report);
    }
    for (int i = 0; i < n; i++)
        case_free(&cases[i]);
    cr_assert_eq(failed, 0, "%d of %d cases differ from PyTorch", failed,
                 n);
}

/* The checker above must notice a single wrong character, a missing
 * trailing character and a missing line. */
TG_TEST(print, a_wrong_expected_text_is_detected)
{
    static print_case cases[MAX_CASES];
    int n = load_cases(cases, MAX_CASES);
    int checked = 0;
    for (int i = 0; i < n; i++) {
        print_case *c = &cases[i];
        char *report = NULL;
        cr_assert(case_matches(c, c->expected, &report), "%s", report);
        size_t len = strlen(c->expected);
        char *wrong = malloc(len + 1);

        /* One character changed in the middle (a digit, a space or a
         * bracket: each becomes something else). */
        memcpy(wrong, c->expected, len + 1);
        wrong[len / 2] = wrong[len / 2] == '0' ? '1' : '0';
        cr_assert_not(case_matches(c, wrong, &report), "%s", c->name);
        cr_assert(strstr(report, "differs at character") != NULL);
        free(report);
        report = NULL;

        /* The closing ')' dropped. */
        wrong[len / 2] = c->expected[len / 2];
        wrong[len - 1] = '\0';
        cr_assert_not(case_matches(c, wrong, &report), "%s", c->name);
        free(report);
        report = NULL;

        /* The first line only, for texts of several lines. */
        char *nl = strchr(wrong, '\n');
        if (nl) {
            *nl = '\0';
            cr_assert_not(case_matches(c, wrong, &report), "%s", c->name);
            free(report);
        }
        free(wrong);
        checked++;
    }
    cr_assert_eq(checked, n);
    for (int i = 0; i < n; i++)
        case_free(&cases[i]);
}

/* A few cases written out here, so that the file format cannot hide an
 * error in both the file and its reader. */
TG_TEST(print, literal_examples)
{
    tg_tensor *a = tg_from_array((float[]){0.2961f, 0.5166f}, TG_SHAPE(1, 2),
                                 TG_FLOAT32);
    char *s = tg_format(a);
    cr_assert_str_eq(s, "tensor([[0.2961, 0.5166]])");
    free(s);

    tg_tensor *b = tg_scalar(1.5, TG_FLOAT32);
    s = tg_format(b);
    cr_assert_str_eq(s, "tensor(1.5000)");
    free(s);

    tg_tensor *c = tg_arange(0, 3, 1, TG_INT64);
    s = tg_format(c);
    cr_assert_str_eq(s, "tensor([0, 1, 2])");
    free(s);

    tg_tensor *d = tg_ones(TG_SHAPE(2), TG_FLOAT64);
    s = tg_format(d);
    cr_assert_str_eq(s, "tensor([1., 1.], dtype=torch.float64)");
    free(s);

    tg_tensor *e = tg_zeros(TG_SHAPE(0, 3), TG_INT64);
    s = tg_format(e);
    cr_assert_str_eq(s, "tensor([], size=(0, 3), dtype=torch.int64)");
    free(s);

    tg_release(a);
    tg_release(b);
    tg_release(c);
    tg_release(d);
    tg_release(e);
}

TG_TEST(print, fprint_writes_the_text_and_a_newline)
{
    tg_tensor *a = tg_from_array((double[]){-1, 2.5}, TG_SHAPE(2),
                                 TG_FLOAT64);
    FILE *f = tmpfile();
    cr_assert_not_null(f);
    cr_assert_eq(tg_fprint(f, a), 0);
    rewind(f);
    char buf[128] = "";
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    buf[n] = '\0';
    fclose(f);
    cr_assert_str_eq(buf, "tensor([-1.0000,  2.5000], dtype=torch.float64)\n");
    tg_release(a);
}

TG_TEST(print, null_arguments)
{
    cr_assert_null(tg_format(NULL));
    cr_assert_eq(tg_fprint(stdout, NULL), -1);
    cr_assert_eq(tg_print(NULL), -1);
    cr_assert_str_eq(tg_last_error(), "", "a NULL tensor adds no message");

    tg_tensor *a = tg_zeros(TG_SHAPE(1), TG_FLOAT32);
    cr_assert_eq(tg_fprint(NULL, a), -1);
    tg_assert_error("tg_fprint", "FILE is NULL", "rule:");
    tg_release(a);
}

TG_TEST(print, options_round_trip_and_validate)
{
    tg_print_options o = tg_get_print_options();
    cr_assert_eq(o.precision, 4);
    cr_assert_eq(o.sci_mode, -1);
    cr_assert_eq(o.threshold, 1000);
    cr_assert_eq(o.edgeitems, 3);
    cr_assert_eq(o.linewidth, 80);

    tg_print_options p = {2, 1, 10, 1, 60};
    tg_set_print_options(p);
    o = tg_get_print_options();
    cr_assert_eq(o.precision, 2);
    cr_assert_eq(o.sci_mode, 1);
    cr_assert_eq(o.threshold, 10);
    cr_assert_eq(o.edgeitems, 1);
    cr_assert_eq(o.linewidth, 60);

    /* Each bad field is rejected and leaves the options unchanged. */
    struct {
        tg_print_options o;
        const char *fragment;
    } bad[] = {
        {{-1, -1, 1000, 3, 80}, "precision is -1"},
        {{101, -1, 1000, 3, 80}, "precision is 101"},
        {{4, 2, 1000, 3, 80}, "sci_mode is 2"},
        {{4, -1, -5, 3, 80}, "threshold is -5"},
        {{4, -1, 1000, 0, 80}, "edgeitems is 0"},
        {{4, -1, 1000, 3, 0}, "linewidth is 0"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        tg_clear_error();
        tg_set_print_options(bad[i].o);
        tg_assert_error("tg_set_print_options", bad[i].fragment, "rule:");
        cr_assert_eq(tg_get_print_options().precision, 2);
        cr_assert_eq(tg_get_print_options().linewidth, 60);
    }
    tg_set_print_options(defaults);
}

TG_TEST(print, requires_grad_only_on_leaves)
{
    tg_tensor *a = tg_ones(TG_SHAPE(2), TG_FLOAT32);
    a->requires_grad = true;
    char *s = tg_format(a);
    cr_assert_str_eq(s, "tensor([1., 1.], requires_grad=True)");
    free(s);
    tg_release(a);
}
