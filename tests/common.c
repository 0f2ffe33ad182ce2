/*
 * tests/common.c - setup, teardown and comparison helpers for the tests.
 */
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L // open_memstream
#endif

#include "common.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h> // _exit
#ifdef TG_TEST_HAVE_VALGRIND
#include <valgrind/memcheck.h>
#endif

void tg_test_setup(void)
{
    tg_set_error_handler(tg_error_handler_quiet);
    tg_clear_error();
}

bool tg_test_no_live_tensors(char *report, size_t report_size)
{
    if (tg_live_tensors() == 0) {
        snprintf(report, report_size, "no tensor is alive");
        return true;
    }
    /* tg_print_live_tensors' lines: "1 tensor is still alive: (32, 27)
     * float32 made by tg_matmul (#412)", or a count and a list. */
    char *list = NULL;
    size_t size = 0;
    FILE *f = open_memstream(&list, &size);
    if (f) {
        tg_print_live_tensors(f);
        fclose(f);
    }
    if (list && size && list[size - 1] == '\n')
        list[size - 1] = '\0';
    snprintf(report, report_size,
             "%s\n(at the end of the test: a missing tg_release?)",
             list ? list : "tensors are still alive");
    free(list);
    return false;
}

void tg_test_teardown(void)
{
    char report[4096];
    cr_assert(tg_test_no_live_tensors(report, sizeof report), "%s", report);
    cr_assert_eq(tg_tape_size(), 0,
                 "%lld %s still on the tape at the end of the test",
                 (long long)tg_tape_size(),
                 tg_tape_size() == 1 ? "node is" : "nodes are");
    cr_assert(tg_is_grad_enabled(), "a tg_no_grad_begin without its end");
    /* Under valgrind, the test body's leaks: the leak check valgrind makes
     * when a process ends comes after Criterion has counted the test as
     * passed, so the test asks for one here. */
    cr_assert(tg_test_valgrind_no_leaks(report, sizeof report), "%s",
              report);
}

const char *tg_test_ref_path(const char *name)
{
    static char path[4096];
    const char *dir = getenv("TG_REFERENCE_DIR");
    snprintf(path, sizeof path, "%s/%s", dir ? dir : "tests/reference",
             name);
    return path;
}

tg_tensor *tg_test_load_ref(const char *name)
{
    char file[512];
    snprintf(file, sizeof file, "%s.npy", name);
    tg_tensor *t = tg_load_npy(tg_test_ref_path(file));
    cr_assert_not_null(t, "cannot load reference %s: %s", file,
                       tg_last_error());
    return t;
}

/* Element i (C order) of an int64 tensor of any layout, exactly. */
static int64_t tg_test_i64_at(const tg_tensor *x, int64_t i)
{
    const int64_t *base = x->storage->data;
    int64_t off = x->offset;
    for (int d = x->ndim - 1; d >= 0; d--) {
        off += (i % x->shape[d]) * x->strides[d];
        i /= x->shape[d];
    }
    return base[off];
}

bool tg_test_close(const tg_tensor *actual, const tg_tensor *expected,
                   double rtol, double atol, bool check_dtype, char *report,
                   size_t report_size)
{
    char s1[TG_SHAPE_STR_MAX], s2[TG_SHAPE_STR_MAX];
    if (!actual || !expected) {
        snprintf(report, report_size, "a tensor is NULL (actual %p, "
                                      "expected %p); last error: %s",
                 (const void *)actual, (const void *)expected,
                 tg_last_error());
        return false;
    }
    if (!tg_same_shape(actual, expected)) {
        snprintf(report, report_size, "shape %s, expected %s",
                 tg_shape_str(actual, s1), tg_shape_str(expected, s2));
        return false;
    }
    if (check_dtype && actual->dtype != expected->dtype) {
        snprintf(report, report_size, "dtype %s, expected %s",
                 tg_dtype_name(actual->dtype),
                 tg_dtype_name(expected->dtype));
        return false;
    }
    int64_t n = actual->numel;
    double *a = malloc(sizeof(double) * (size_t)(n ? n : 1));
    double *e = malloc(sizeof(double) * (size_t)(n ? n : 1));
    tg_to_f64_array(actual, a);
    tg_to_f64_array(expected, e);
    int64_t bad = -1, worst = -1;
    double worst_excess = 0;
    for (int64_t i = 0; i < n; i++) {
        bool ok;
        if (isnan(e[i]) || isnan(a[i]))
            ok = isnan(e[i]) && isnan(a[i]);
        else if (isinf(e[i]) || isinf(a[i]))
            ok = a[i] == e[i];
        else {
            double excess = fabs(a[i] - e[i]) - (atol + rtol * fabs(e[i]));
            ok = excess <= 0;
            if (!ok && excess > worst_excess) {
                worst_excess = excess;
                worst = i;
            }
        }
        if (!ok && bad < 0)
            bad = i;
    }
    bool close = bad < 0;
    /* Doubles cannot tell large int64 values apart (INT64_MAX and
     * INT64_MAX - 1 are the same double): int64 against int64 is compared
     * exactly, element by element. */
    if (close && actual->dtype == TG_INT64 && expected->dtype == TG_INT64) {
        for (int64_t i = 0; i < n && close; i++) {
            int64_t ai = tg_test_i64_at(actual, i);
            int64_t ei = tg_test_i64_at(expected, i);
            if (ai != ei) {
                close = false;
                snprintf(report, report_size,
                         "int64 element %lld is %lld, expected %lld",
                         (long long)i, (long long)ai, (long long)ei);
            }
        }
        free(a);
        free(e);
        return close;
    }
    if (!close) {
        int64_t i = worst >= 0 ? worst : bad;
        snprintf(report, report_size,
                 "tensors of shape %s differ; the worst element is at flat "
                 "index %lld (C order): actual %.9g, expected %.9g (rtol "
                 "%g, atol %g; the first mismatch is at flat index %lld)",
                 tg_shape_str(actual, s1), (long long)i, a[i], e[i], rtol,
                 atol, (long long)bad);
    } else if (report_size) {
        report[0] = '\0';
    }
    free(a);
    free(e);
    return close;
}

void tg_test_check_ref(tg_tensor *actual, const char *name, double rtol,
                       double atol)
{
    tg_tensor *expected = tg_test_load_ref(name);
    char report[1024];
    bool ok = tg_test_close(actual, expected, rtol, atol, true, report,
                            sizeof report);
    tg_release(actual);
    tg_release(expected);
    cr_assert(ok, "%s: %s", name, report);
}

tg_tensor *tg_test_non_contiguous(const tg_tensor *x, bool strided)
{
    cr_assert(x && x->ndim >= 1, "a 0-d tensor is always contiguous");
    tg_tensor *view;
    if (x->ndim >= 2 && !strided) {
        int rev[TG_MAX_DIMS];
        for (int i = 0; i < x->ndim; i++)
            rev[i] = x->ndim - 1 - i;
        tg_tensor *t = tg_permute(x, rev, x->ndim);
        tg_tensor *buf = tg_contiguous(t);
        view = tg_permute(buf, rev, x->ndim);
        tg_release(buf);
        tg_release(t);
    } else {
        int64_t shape[TG_MAX_DIMS];
        for (int i = 0; i < x->ndim; i++)
            shape[i] = x->shape[i];
        int64_t last = x->shape[x->ndim - 1];
        shape[x->ndim - 1] = 2 * last;
        tg_tensor *buf = tg_full(shape, x->ndim,
                                 x->dtype == TG_INT64 ? -7.0 : NAN, x->dtype);
        view = tg_slice(buf, -1, 0, 2 * last, 2);
        tg_release(buf);
        cr_assert_eq(tg_copy_(view, x), 0, "%s", tg_last_error());
    }
    tg_tensor *out = tg_detach(view);
    tg_release(view);
    cr_assert(out && !tg_is_contiguous(out), "the copy is contiguous");
    return out;
}

/* ---------------------------------------------------- file-system faults */

static struct {
    int step;        // the kind of step that fails, or -1 for any
    long n;          // which one of them (0 = the first), or -1 for none
    int err;         // its errno
    bool crash;      // end the process instead of failing the step
    long bytes_left; // writes beyond this many bytes fail; -1: no limit
    int also_step;   // a kind of step that always fails, or -1
    int also_err;    // with this errno
    long seen;       // steps of that kind seen so far
    long all;        // steps of any kind seen so far
} io_fault;

static int io_fault_hook(tg_io_step step, const char *path, size_t *nbytes,
                         void *ctx)
{
    (void)path;
    (void)ctx;
    io_fault.all++;
    if (step == TG_IO_WRITE && io_fault.bytes_left >= 0) {
        if ((long)*nbytes > io_fault.bytes_left)
            *nbytes = (size_t)io_fault.bytes_left; // 0 fails with ENOSPC
        io_fault.bytes_left -= (long)*nbytes;
    }
    if ((int)step == io_fault.also_step)
        return io_fault.also_err;
    if (io_fault.step >= 0 && (int)step != io_fault.step)
        return 0;
    if (io_fault.seen++ != io_fault.n && io_fault.n != TG_TEST_IO_EVERY)
        return 0;
    if (io_fault.crash) {
#ifdef TG_TEST_HAVE_VALGRIND
        /* As a power cut would: nothing is freed, and what the process
         * held then is no leak (valgrind checks at every exit). */
        VALGRIND_CLO_CHANGE("--leak-check=no");
#endif
        _exit(0);
    }
    return io_fault.err;
}

void tg_test_fail_io(int step, long n, int err, bool crash, long bytes_left)
{
    io_fault.step = step;
    io_fault.n = n;
    io_fault.err = err;
    io_fault.crash = crash;
    io_fault.bytes_left = bytes_left;
    io_fault.also_step = -1;
    io_fault.seen = 0;
    io_fault.all = 0;
    tg_set_io_hook(io_fault_hook, NULL);
}

void tg_test_fail_io_also(int step, int err)
{
    io_fault.also_step = step;
    io_fault.also_err = err;
}

void tg_test_io_off(void)
{
    tg_set_io_hook(NULL, NULL);
}

long tg_test_io_steps(void)
{
    return io_fault.all;
}

bool tg_test_under_valgrind(void)
{
    const char *preload = getenv("LD_PRELOAD");
    return preload && strstr(preload, "/vgpreload_") != NULL;
}

bool tg_test_valgrind_no_leaks(char *report, size_t report_size)
{
    snprintf(report, report_size, "no leak check (not under valgrind)");
#ifdef TG_TEST_HAVE_VALGRIND
    if (!RUNNING_ON_VALGRIND)
        return true;
    VALGRIND_DO_LEAK_CHECK; // lists what it finds on stderr
    unsigned long leaked = 0, dubious = 0, reachable = 0, suppressed = 0;
    VALGRIND_COUNT_LEAKS(leaked, dubious, reachable, suppressed);
    (void)reachable;
    (void)suppressed;
    snprintf(report, report_size,
             "valgrind: %lu bytes definitely or indirectly lost, %lu "
             "possibly lost (the list is on stderr)",
             leaked, dubious);
    return leaked == 0 && dubious == 0;
#else
    return true;
#endif
}

void tg_test_section_open(tg_test_section *s, const char *file,
                          const char *title)
{
    *s = (tg_test_section){.title = title};
    s->f = fopen(tg_test_ref_path(file), "r");
    cr_assert_not_null(s->f, "cannot open %s", file);
}

const char *tg_test_section_next(tg_test_section *s)
{
    while (!s->done && fgets(s->line, sizeof s->line, s->f)) {
        s->line[strcspn(s->line, "\n")] = '\0';
        if (strncmp(s->line, "## ", 3) == 0) {
            if (s->inside)
                break; // the next section: this one has ended
            s->inside = strcmp(s->line + 3, s->title) == 0;
            s->found = s->found || s->inside;
            continue;
        }
        if (s->inside)
            return s->line;
    }
    s->done = true;
    return NULL;
}

void tg_test_section_close(tg_test_section *s)
{
    if (s->f)
        fclose(s->f);
    s->f = NULL;
}

int64_t tg_test_torch_bits(const char *file, const char *title,
                           uint32_t *bits, int64_t max)
{
    tg_test_section s;
    tg_test_section_open(&s, file, title);
    int64_t n = 0;
    for (const char *line; (line = tg_test_section_next(&s));) {
        const char *hex = strstr(line, "0x");
        if (hex) {
            cr_assert_lt(n, max);
            bits[n++] = (uint32_t)strtoul(hex, NULL, 16);
        }
    }
    tg_test_section_close(&s);
    cr_assert_gt(n, 0, "no vector titled \"%s\" in %s", title, file);
    return n;
}

bool tg_test_prints_as(const tg_module *m, const char *expected)
{
    char *s = tg_module_format(m);
    cr_assert_not_null(s, "%s", tg_last_error());
    bool same = strcmp(s, expected) == 0;
    free(s);
    return same;
}

void tg_test_expect_print(tg_module *m, const char *expected)
{
    cr_assert_not_null(m, "%s", tg_last_error());
    char *s = tg_module_format(m);
    tg_module_free(m);
    cr_assert_not_null(s, "%s", tg_last_error());
    bool same = strcmp(s, expected) == 0;
    if (!same)
        fprintf(stderr, "printed:\n%s\nexpected:\n%s\n", s, expected);
    free(s);
    cr_assert(same, "%s is printed differently", expected);
}
