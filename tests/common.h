/*
 * tests/common.h - what every test file shares.
 *
 * TG_TEST(suite, name) is a Criterion test that installs the quiet error
 * handler before it runs and, after its body, fails unless every tensor it
 * made was released, the tape is empty and gradients are enabled again.
 * The comparison helpers load NumPy references and report the worst
 * element when a result is off.
 */
#ifndef TG_TESTS_COMMON_H
#define TG_TESTS_COMMON_H

#include <criterion/criterion.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "tapegrad.h"

void tg_test_setup(void);
void tg_test_teardown(void);

/* (Criterion 2.4 ignores failed assertions in .fini, so the leak check runs
 * at the end of the test body instead.) */
#define TG_TEST(suite, name)                                                \
    static void suite##_##name##_body(void);                                \
    Test(suite, name, .init = tg_test_setup)                                \
    {                                                                       \
        suite##_##name##_body();                                            \
        tg_test_teardown();                                                 \
    }                                                                       \
    static void suite##_##name##_body(void)

/* The check behind the teardown: true when no tensor is alive; otherwise
 * says how many are in report. */
bool tg_test_no_live_tensors(char *report, size_t report_size);

/* Loads tests/reference/<name>.npy (new reference); fails the test if it
 * cannot. The folder comes from TG_REFERENCE_DIR, set by meson test. */
tg_tensor *tg_test_load_ref(const char *name);
/* A new tensor with x's values and no history, laid out so that it is not
 * contiguous: for ndim >= 2 (unless strided) the dims are stored in
 * reverse order (x transposed in memory, a permute of a contiguous
 * buffer); otherwise every other element of a buffer twice as long, the
 * gaps filled with NaN (-7 for int64) so that reading one shows. x is
 * borrowed. */
tg_tensor *tg_test_non_contiguous(const tg_tensor *x, bool strided);
/* Path of a file in the reference folder (static buffer). */
const char *tg_test_ref_path(const char *name);

/* Compares element by element: shapes must match, dtypes must match when
 * check_dtype, and |actual - expected| <= atol + rtol * |expected| must hold
 * everywhere (NaN matches NaN, inf matches the same inf); int64 against
 * int64 must match exactly. Returns true when
 * close; otherwise writes the first mismatch or the worst element into
 * report. */
bool tg_test_close(const tg_tensor *actual, const tg_tensor *expected,
                   double rtol, double atol, bool check_dtype, char *report,
                   size_t report_size);

/* Compares actual with the reference array `name` (tg_test_close with the
 * dtype checked) and asserts, naming the reference on failure. Takes
 * ownership of actual: it is released here. */
void tg_test_check_ref(tg_tensor *actual, const char *name, double rtol,
                       double atol);

/* Asserts tg_test_close, printing the report on failure. */
#define tg_assert_close(actual, expected, rtol, atol)                       \
    do {                                                                    \
        char report_[1024];                                                 \
        cr_assert(tg_test_close((actual), (expected), (rtol), (atol), true, \
                                report_, sizeof report_),                   \
                  "%s", report_);                                           \
    } while (0)

/* Asserts the last error message contains each of the given fragments. */
#define tg_assert_error(...)                                                \
    do {                                                                    \
        const char *frags_[] = {__VA_ARGS__};                               \
        for (size_t i_ = 0; i_ < sizeof frags_ / sizeof *frags_; i_++)      \
            cr_assert(strstr(tg_last_error(), frags_[i_]) != NULL,          \
                      "expected \"%s\" in the error message, got:\n%s",     \
                      frags_[i_], tg_last_error());                         \
    } while (0)

/* File-system faults (tg_set_io_hook): from now on, on this thread, the
 * n-th step (counting from 0) of kind `step` fails with err; any kind
 * when step is -1. With crash, the process ends there instead (_exit(0)),
 * as a power cut would stop it. bytes_left >= 0 makes writes succeed for
 * that many bytes in all, then fail with ENOSPC (a full disk). Returns
 * nothing; tg_test_io_steps() says how many steps were seen since.
 * n = TG_TEST_IO_EVERY fails every step of that kind. */
#define TG_TEST_IO_EVERY (-2L)
void tg_test_fail_io(int step, long n, int err, bool crash, long bytes_left);
/* Besides that, every step of kind `step` fails with err (e.g. the swap
 * refused with EINVAL, as where the file system cannot swap folders). */
void tg_test_fail_io_also(int step, int err);
void tg_test_io_off(void);
long tg_test_io_steps(void);

/* A float's position on the number line counted in ulps: consecutive
 * floats differ by 1, -0 and +0 are both 0; two results are
 * |tg_test_ulp_position(a) - tg_test_ulp_position(b)| ulps apart. */
static inline int64_t tg_test_ulp_position(float f)
{
    int32_t i;
    memcpy(&i, &f, sizeof i);
    return i < 0 ? -(int64_t)(i & INT32_MAX) : (int64_t)i;
}

/* An array of tensors as a gradcheck function takes it (C does not
 * convert tg_tensor ** to const tg_tensor *const * by itself), for tests
 * that call such a function directly with the array they gradcheck. */
static inline const tg_tensor *const *tg_test_inputs(tg_tensor *const *in)
{
    return (const tg_tensor *const *)in;
}
/* True when this process runs under valgrind (its preloaded libraries
 * are in LD_PRELOAD): for the few checks that measure what valgrind
 * distorts, resident memory or a child process's time, and say so when
 * they skip. */
bool tg_test_under_valgrind(void);
/* Under valgrind (and built with its headers: TG_TEST_HAVE_VALGRIND),
 * runs its leak check now and returns false when any block is definitely,
 * indirectly or possibly lost, with the bytes in report; true otherwise.
 * The teardown of every TG_TEST calls it. */
bool tg_test_valgrind_no_leaks(char *report, size_t report_size);

/* The lines of the section titled `title` in the reference file `file`
 * (tests/reference): those after its line "## title", up to the next line
 * starting "## ". Open fails the test when the file cannot be opened;
 * next returns each line without its newline (valid until the next call),
 * then NULL; found says whether the title was seen. Close after use. */
typedef struct tg_test_section {
    FILE *f;
    const char *title;
    bool inside, found, done;
    char line[256];
} tg_test_section;
void tg_test_section_open(tg_test_section *s, const char *file,
                          const char *title);
const char *tg_test_section_next(tg_test_section *s);
void tg_test_section_close(tg_test_section *s);

/* Reads the float32 bits (the first 0x... of each line) of the vector
 * titled `## title` in the reference file `file` into bits (at most max);
 * returns how many. Fails the test when the file or title is missing. */
int64_t tg_test_torch_bits(const char *file, const char *title,
                           uint32_t *bits, int64_t max);

/* Whether m prints (tg_module_format) exactly as expected; logs both when
 * not. m borrowed. */
bool tg_test_prints_as(const tg_module *m, const char *expected);
/* Asserts that m prints as `expected` (PyTorch 1.13's repr of the same
 * torch.nn model, written here as torch printed it), then frees m (a NULL
 * m fails the test with the last error). */
void tg_test_expect_print(tg_module *m, const char *expected);

#endif
