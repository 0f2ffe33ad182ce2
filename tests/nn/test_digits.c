/*
 * tests/nn/test_digits.c - the 8x8 handwritten digits (nn/digits.c).
 *
 * data/digits.csv.gz (found through TG_DATA_DIR, which tests/meson.build
 * sets) against the same file read by NumPy (scripts/reference/
 * gen_digits.py): the shapes and dtypes, the class histogram, six whole
 * images and their labels, and a checksum of every pixel and label that
 * also sees their order. The comparisons can fail: one changed pixel, a
 * changed label and two swapped images are rejected. The seeded split:
 * the same seed gives the same sets, another seed other sets, and the two
 * sets together are the images of the file, each once (the partition
 * check rejects a set with an image twice). Then small files written
 * here: plain text and "\r\n" are read, and every format error names its
 * line and field. Files are written in a fresh folder under /tmp and
 * removed at the end of each test.
 */
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L // mkdtemp
#endif

#include "../common.h"

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include <zlib.h>

static const char *digits_path(void)
{
    static char path[4096];
    const char *dir = getenv("TG_DATA_DIR");
    cr_assert_not_null(dir, "TG_DATA_DIR is not set (meson test sets it)");
    snprintf(path, sizeof path, "%s/digits.csv.gz", dir);
    return path;
}

static tg_dataset load_digits(void)
{
    tg_dataset d;
    cr_assert_eq(tg_digits_load(digits_path(), &d), 0, "%s",
                 tg_last_error());
    return d;
}

/* ------------------------------------------------ against NumPy's read */

/* Whether d is the file as NumPy read it: the checksums of
 * gen_digits.py (count, pixel sums, label sums) and the six images and
 * labels saved whole. report says what differs. */
static bool digits_match(const tg_dataset *d, char *report, size_t size)
{
    tg_tensor *sums = tg_test_load_ref("digits_sums");
    const int64_t *want = tg_data_i64(sums);
    int64_t n = d->x->shape[0];
    const float *x = tg_data_f32(d->x);
    const int64_t *y = tg_data_i64(d->y);
    int64_t got[5] = {n, 0, 0, 0, 0};
    for (int64_t i = 0; i < n * TG_DIGITS_PIXELS; i++) {
        got[1] += (int64_t)x[i];
        got[2] += (i + 1) * (int64_t)x[i];
    }
    for (int64_t i = 0; i < n; i++) {
        got[3] += y[i];
        got[4] += (i + 1) * y[i];
    }
    bool same = true;
    for (int k = 0; k < 5 && same; k++)
        if (got[k] != want[k]) {
            snprintf(report, size, "checksum %d is %lld, NumPy's %lld", k,
                     (long long)got[k], (long long)want[k]);
            same = false;
        }
    tg_release(sums);
    tg_tensor *rows = tg_test_load_ref("digits_rows");
    tg_tensor *rx = tg_test_load_ref("digits_rows_x");
    tg_tensor *ry = tg_test_load_ref("digits_rows_y");
    for (int64_t r = 0; r < rows->numel && same; r++) {
        int64_t i = tg_data_i64(rows)[r];
        for (int p = 0; p < TG_DIGITS_PIXELS && same; p++)
            if (x[i * TG_DIGITS_PIXELS + p] !=
                tg_data_f32(rx)[r * TG_DIGITS_PIXELS + p]) {
                snprintf(report, size,
                         "image %lld pixel (%d, %d) is %g, NumPy's %g",
                         (long long)i, p / 8, p % 8,
                         (double)x[i * TG_DIGITS_PIXELS + p],
                         (double)tg_data_f32(rx)[r * TG_DIGITS_PIXELS + p]);
                same = false;
            }
        if (same && y[i] != tg_data_i64(ry)[r]) {
            snprintf(report, size, "label %lld is %lld, NumPy's %lld",
                     (long long)i, (long long)y[i],
                     (long long)tg_data_i64(ry)[r]);
            same = false;
        }
    }
    tg_release(rows);
    tg_release(rx);
    tg_release(ry);
    return same;
}

TG_TEST(digits, file_as_numpy_reads_it)
{
    tg_dataset d = load_digits();
    cr_assert_eq(d.x->dtype, TG_FLOAT32);
    cr_assert_eq(d.x->ndim, 4);
    cr_assert(d.x->shape[0] == 1797 && d.x->shape[1] == 1 &&
              d.x->shape[2] == 8 && d.x->shape[3] == 8);
    cr_assert_eq(d.y->dtype, TG_INT64);
    cr_assert_eq(d.y->ndim, 1);
    cr_assert_eq(d.y->shape[0], TG_DIGITS_COUNT);
    cr_assert(!d.x->requires_grad && !d.y->requires_grad);
    char report[256];
    cr_assert(digits_match(&d, report, sizeof report), "%s", report);
    /* the first image's corner pixels, read off the file's first line */
    const float *x = tg_data_f32(d.x);
    cr_assert(x[0] == 0 && x[2] == 5 && x[3] == 13 && x[10] == 13);
    cr_assert_eq(tg_data_i64(d.y)[0], 0);
    tg_dataset_free(&d);
}

TG_TEST(digits, class_histogram)
{
    tg_dataset d = load_digits();
    int64_t counts[10] = {0};
    const float *x = tg_data_f32(d.x);
    for (int64_t i = 0; i < d.y->numel; i++) {
        int64_t c = tg_data_i64(d.y)[i];
        cr_assert(c >= 0 && c <= 9);
        counts[c]++;
    }
    for (int64_t i = 0; i < d.x->numel; i++)
        cr_assert(x[i] >= 0 && x[i] <= 16 && x[i] == (float)(int)x[i]);
    tg_tensor *want = tg_test_load_ref("digits_class_counts");
    for (int c = 0; c < 10; c++)
        cr_assert_eq(counts[c], tg_data_i64(want)[c], "digit %d: %lld", c,
                     (long long)counts[c]);
    cr_assert_eq(counts[8], 174); // the rarest, as data/README.md says
    cr_assert_eq(counts[3], 183); // the commonest
    tg_release(want);
    tg_dataset_free(&d);
}

/* The checker must be able to fail: a changed pixel, a changed label, and
 * two images swapped (the sums of pixels stay, the weighted sum moves). */
TG_TEST(digits, comparison_rejects_wrong_data)
{
    tg_dataset d = load_digits();
    char report[256];
    float *x = tg_data_f32(d.x);
    int64_t *y = tg_data_i64(d.y);

    x[100 * 64 + 20] += 1;
    cr_assert(!digits_match(&d, report, sizeof report));
    x[100 * 64 + 20] -= 1;
    cr_assert(digits_match(&d, report, sizeof report), "%s", report);

    y[1000] = (y[1000] + 1) % 10;
    cr_assert(!digits_match(&d, report, sizeof report));
    y[1000] = (y[1000] + 9) % 10;

    float tmp[64];
    memcpy(tmp, x + 5 * 64, sizeof tmp);
    memcpy(x + 5 * 64, x + 6 * 64, sizeof tmp);
    memcpy(x + 6 * 64, tmp, sizeof tmp);
    cr_assert(!digits_match(&d, report, sizeof report));
    cr_assert(strstr(report, "checksum 2") != NULL, "%s", report);
    tg_dataset_free(&d);
}

/* --------------------------------------------------------- the split */

/* An image and its label as 65 bytes, for sorting. */
typedef struct {
    unsigned char v[TG_DIGITS_PIXELS + 1];
} row_key;

static int key_cmp(const void *a, const void *b)
{
    return memcmp(a, b, sizeof(row_key));
}

static void keys_of(const tg_dataset *d, row_key *out)
{
    const float *x = tg_data_f32(d->x);
    for (int64_t i = 0; i < d->y->numel; i++) {
        for (int p = 0; p < TG_DIGITS_PIXELS; p++)
            out[i].v[p] = (unsigned char)x[i * TG_DIGITS_PIXELS + p];
        out[i].v[TG_DIGITS_PIXELS] = (unsigned char)tg_data_i64(d->y)[i];
    }
}

/* Whether train and val together hold the images of all, each as often
 * as all holds it: the split is a partition (no image in both sets
 * unless the file holds it twice, none lost). */
static bool is_partition(const tg_dataset *all, const tg_dataset *train,
                         const tg_dataset *val)
{
    int64_t n = all->y->numel, nt = train->y->numel;
    if (nt + val->y->numel != n)
        return false;
    row_key *a = malloc((size_t)n * sizeof *a);
    row_key *b = malloc((size_t)n * sizeof *b);
    cr_assert(a && b);
    keys_of(all, a);
    keys_of(train, b);
    keys_of(val, b + nt);
    qsort(a, (size_t)n, sizeof *a, key_cmp);
    qsort(b, (size_t)n, sizeof *b, key_cmp);
    bool same = memcmp(a, b, (size_t)n * sizeof *a) == 0;
    free(a);
    free(b);
    return same;
}

static bool same_values(const tg_tensor *a, const tg_tensor *b)
{
    char report[256];
    return tg_test_close(a, b, 0, 0, true, report, sizeof report);
}

TG_TEST(digits, split_is_seeded_and_disjoint)
{
    tg_dataset all = load_digits();
    tg_dataset tr1, va1, tr2, va2, tr3, va3;
    cr_assert_eq(tg_digits_split(digits_path(), 0.2, 7, &tr1, &va1), 0);
    cr_assert_eq(tg_digits_split(digits_path(), 0.2, 7, &tr2, &va2), 0);
    cr_assert_eq(tg_digits_split(digits_path(), 0.2, 8, &tr3, &va3), 0);
    /* round(0.2 * 1797) = 359 held out */
    cr_assert_eq(va1.y->numel, 359);
    cr_assert_eq(tr1.y->numel, 1438);
    cr_assert_eq(tr1.x->ndim, 4);
    cr_assert_eq(tr1.x->shape[0], 1438);
    cr_assert(same_values(tr1.x, tr2.x) && same_values(tr1.y, tr2.y));
    cr_assert(same_values(va1.x, va2.x) && same_values(va1.y, va2.y));
    cr_assert(!same_values(va1.x, va3.x), "seed 8 split as seed 7");
    cr_assert(is_partition(&all, &tr1, &va1));
    cr_assert(is_partition(&all, &tr3, &va3));
    /* every class is in both sets */
    for (int s = 0; s < 2; s++) {
        int64_t counts[10] = {0};
        const tg_dataset *d = s ? &va1 : &tr1;
        for (int64_t i = 0; i < d->y->numel; i++)
            counts[tg_data_i64(d->y)[i]]++;
        for (int c = 0; c < 10; c++)
            cr_assert(counts[c] > 0);
    }
    /* the partition check fails for a set holding an image twice */
    float *v = tg_data_f32(va1.x);
    memcpy(v, tg_data_f32(tr1.x), TG_DIGITS_PIXELS * sizeof *v);
    tg_data_i64(va1.y)[0] = tg_data_i64(tr1.y)[0];
    cr_assert(!is_partition(&all, &tr1, &va1));
    tg_dataset_free(&all);
    tg_dataset_free(&tr1);
    tg_dataset_free(&va1);
    tg_dataset_free(&tr2);
    tg_dataset_free(&va2);
    tg_dataset_free(&tr3);
    tg_dataset_free(&va3);
}

/* ---------------------------------------------- small files, errors */

static char scratch[64];
static char file_path[128];

static void scratch_make(void)
{
    snprintf(scratch, sizeof scratch, "/tmp/tg_digits_XXXXXX");
    cr_assert_not_null(mkdtemp(scratch));
    snprintf(file_path, sizeof file_path, "%s/d.csv.gz", scratch);
}

static void scratch_remove(void)
{
    unlink(file_path);
    cr_assert_eq(rmdir(scratch), 0, "scratch folder %s not empty", scratch);
}

/* Writes a digits file of n lines, gzip-compressed or plain: line i
 * (from 1) holds pixels (i + p) % 17 and label i % 10, except line
 * bad_line, which is bad_text; eol ends each line. */
static void write_digits(int n, int bad_line, const char *bad_text,
                         const char *eol, bool gzip)
{
    gzFile gz = gzopen(file_path, gzip ? "wb" : "wbT"); // T: no compression
    cr_assert_not_null(gz);
    for (int i = 1; i <= n; i++) {
        if (i == bad_line) {
            gzprintf(gz, "%s%s", bad_text, eol);
            continue;
        }
        for (int p = 0; p < 64; p++)
            gzprintf(gz, "%d,", (i + p) % 17);
        gzprintf(gz, "%d%s", i % 10, eol);
    }
    cr_assert_eq(gzclose(gz), Z_OK);
}

static void check_small(const tg_dataset *d)
{
    const float *x = tg_data_f32(d->x);
    for (int i = 1; i <= TG_DIGITS_COUNT; i += 449) {
        for (int p = 0; p < 64; p++)
            cr_assert_eq(x[(i - 1) * 64 + p], (float)((i + p) % 17));
        cr_assert_eq(tg_data_i64(d->y)[i - 1], i % 10);
    }
}

TG_TEST(digits, reads_plain_text_and_crlf)
{
    scratch_make();
    tg_dataset d;
    write_digits(TG_DIGITS_COUNT, 0, "", "\n", false);
    cr_assert_eq(tg_digits_load(file_path, &d), 0, "%s", tg_last_error());
    check_small(&d);
    tg_dataset_free(&d);
    write_digits(TG_DIGITS_COUNT, 0, "", "\r\n", true);
    cr_assert_eq(tg_digits_load(file_path, &d), 0, "%s", tg_last_error());
    check_small(&d);
    tg_dataset_free(&d);
    scratch_remove();
}

/* Loading the file written with line bad_line = bad_text fails, with
 * each fragment in the message. */
#define assert_line_fails(bad_line, bad_text, ...)                          \
    do {                                                                    \
        tg_dataset d_;                                                      \
        write_digits(TG_DIGITS_COUNT, (bad_line), (bad_text), "\n", true);  \
        tg_clear_error();                                                   \
        cr_assert_eq(tg_digits_load(file_path, &d_), -1);                   \
        cr_assert(d_.x == NULL && d_.y == NULL);                            \
        tg_assert_error(__VA_ARGS__);                                       \
    } while (0)

TG_TEST(digits, bad_lines_are_named)
{
    scratch_make();
    char line[512] = "";
    for (int p = 0; p < 64; p++)
        strcat(line, "1,");
    size_t base = strlen(line);
    strcpy(line + base, "10"); // label 10
    assert_line_fails(5, line, "line 5 of", "field 65 is '10'",
                      "the label (field 65) is a decimal integer from 0 "
                      "to 9");
    strcpy(line + base, "1,1"); // 66 fields
    assert_line_fails(7, line, "line 7 of", "has 66 fields");
    strcpy(line + base, ""); // 64 fields and a trailing ','
    assert_line_fails(9, line, "line 9 of", "field 65 is ''");
    line[base - 1] = '\0'; // 64 fields
    assert_line_fails(11, line, "line 11 of", "has 64 fields");
    assert_line_fails(3, "0,17", "line 3 of", "field 2 is '17'",
                      "a pixel is a decimal integer from 0 to 16");
    assert_line_fails(4, "0, 1", "field 2 is ' 1'");
    assert_line_fails(4, "0,-1", "field 2 is '-1'");
    assert_line_fails(4, "0,1.0", "field 2 is '1.0'");
    assert_line_fails(4, "0,0016", "field 2 is '0016'");
    assert_line_fails(1797, "", "line 1797 of", "is empty");
    scratch_remove();
}

TG_TEST(digits, wrong_count_is_refused)
{
    scratch_make();
    tg_dataset d;
    write_digits(TG_DIGITS_COUNT - 1, 0, "", "\n", true);
    cr_assert_eq(tg_digits_load(file_path, &d), -1);
    tg_assert_error("holds 1796 images", "holds 1797 images");
    write_digits(TG_DIGITS_COUNT + 1, 0, "", "\n", true);
    cr_assert_eq(tg_digits_load(file_path, &d), -1);
    tg_assert_error("holds 1798 images");
    scratch_remove();
}

TG_TEST(digits, damaged_gzip_is_refused)
{
    scratch_make();
    write_digits(TG_DIGITS_COUNT, 0, "", "\n", true);
    /* cut the compressed file in half */
    FILE *f = fopen(file_path, "rb");
    cr_assert_not_null(f);
    static unsigned char bytes[1 << 20];
    size_t n = fread(bytes, 1, sizeof bytes, f);
    fclose(f);
    f = fopen(file_path, "wb");
    cr_assert_eq(fwrite(bytes, 1, n / 2, f), n / 2);
    fclose(f);
    tg_dataset d;
    cr_assert_eq(tg_digits_load(file_path, &d), -1);
    tg_assert_error("is not a readable gzip file");
    scratch_remove();
}

TG_TEST(digits, missing_file_and_split_arguments)
{
    tg_dataset a, b;
    cr_assert_eq(tg_digits_load("/nonexistent/digits.csv.gz", &a), -1);
    tg_assert_error("cannot open '/nonexistent/digits.csv.gz'",
                    "data/digits.csv.gz");
    cr_assert_eq(tg_digits_split(digits_path(), 1.0, 1, &a, &b), -1);
    tg_assert_error("val_fraction is 1");
    cr_assert(a.x == NULL && b.x == NULL);
    cr_assert_eq(tg_digits_split("/nonexistent", 0.2, 1, &a, &b), -1);
    tg_assert_error("tg_digits_split: cannot open '/nonexistent'");
}
