/*
 * nn/digits.c - the 8x8 handwritten digits (data/digits.csv.gz): 1,797
 * images of 8x8 pixels, each pixel the number of "on" pixels in a 4x4
 * block of a 32x32 bitmap (so 0 to 16), labelled 0 to 9. It is the test
 * set of the UCI "optical recognition of handwritten digits" data
 * (Alpaydin and Kaynak, 1998), as scikit-learn ships it; data/README.md
 * says where the file comes from.
 *
 * The file format, checked line by line so that a damaged file fails here
 * with its line and column rather than as strange accuracies later:
 * - gzip-compressed text (zlib reads an uncompressed file as it is, so a
 *   plain CSV is read too);
 * - one image a line, lines end with "\n" or "\r\n", the last line may
 *   lack its newline; no empty lines;
 * - 65 fields a line, separated by ',': the 64 pixels row by row (pixel
 *   (r, c) is field 8 r + c), then the label; each field is a decimal
 *   integer without sign or spaces, pixels 0..16 and labels 0..9;
 * - exactly TG_DIGITS_COUNT lines: a shorter or longer file is another
 *   data set, or a cut one.
 *
 * The images come out as (N, 1, 8, 8) float32, one channel, with the
 * pixel values as in the file (0..16, not scaled: dividing by 16 gives
 * [0, 1]). The split is tg_dataset_split's: a permutation drawn from a
 * tg_generator seeded with the seed, so the same seed gives the same two
 * sets on every machine.
 *
 * What this file is not: no other data set of the UCI collection (the
 * 32x32 bitmaps, the training set of 3,823 images), no augmentation.
 */
#include "nn.h"

#include "../tensor/internal.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#define DIGITS_FIELDS (TG_DIGITS_PIXELS + 1) // 64 pixels and the label
/* The uncompressed file is about 340 kB; more than this is not it (and
 * a small gzip file must not make the loader fill the memory). */
#define DIGITS_MAX_BYTES ((size_t)16 << 20)

/* The uncompressed bytes of the regular file at path with a NUL after
 * them (*size bytes before it): a buffer the caller frees, or NULL with an
 * error that shows the path as `shown`. */
static char *read_gzip(const char *fn, const char *path, const char *shown,
                       size_t *size)
{
    int fd;
    unsigned mode;
    uint64_t nbytes;
    int opened = tg_io_open_regular(path, &fd, &mode, &nbytes);
    if (opened == -1) {
        int err = errno;
        tg_error(fn,
                 "cannot open '%s': %s\n"
                 "  rule: the file must exist and be readable\n"
                 "  hint: the repository ships it as data/digits.csv.gz",
                 shown, strerror(err));
        return NULL;
    }
    if (opened == -2) {
        tg_error(fn,
                 "'%s' is %s, not a regular file\n"
                 "  rule: the digits are read from a regular file "
                 "(symbolic links are followed)\n"
                 "  hint: pass the path of data/digits.csv.gz",
                 shown, tg_file_kind(mode));
        return NULL;
    }
    gzFile gz = gzdopen(fd, "rb"); // takes fd: gzclose closes it
    size_t cap = 1 << 16, n = 0;
    char *buf = gz ? tg_malloc(cap) : NULL;
    if (!buf) {
        if (gz)
            gzclose(gz);
        else
            close(fd);
        tg_error(fn, "out of memory for the gzip reader of '%s'", shown);
        return NULL;
    }
    bool ok = true;
    for (;;) {
        if (n + 1 >= cap) {
            if (cap >= DIGITS_MAX_BYTES) {
                tg_error(fn,
                         "'%s' holds more than %zu bytes once "
                         "uncompressed\n"
                         "  rule: the digits file is about 340 kB "
                         "uncompressed\n"
                         "  hint: pass the path of data/digits.csv.gz",
                         shown, DIGITS_MAX_BYTES);
                ok = false;
                break;
            }
            char *bigger = tg_realloc(buf, cap * 2);
            if (!bigger) {
                tg_error(fn, "out of memory reading '%s'", shown);
                ok = false;
                break;
            }
            buf = bigger;
            cap *= 2;
        }
        int k = gzread(gz, buf + n, (unsigned)(cap - 1 - n));
        if (k <= 0)
            break; // the end, or an error: gzerror tells
        n += (size_t)k;
    }
    int code = Z_OK;
    const char *why = ok ? gzerror(gz, &code) : "";
    if (ok && code != Z_OK) {
        /* gzerror's text starts with the name zlib knows, "<fd:N>: " */
        const char *colon = strstr(why, ": ");
        if (why[0] == '<' && colon)
            why = colon + 2;
        tg_error(fn,
                 "'%s' is not a readable gzip file: %s\n"
                 "  rule: the file is gzip-compressed text (or plain "
                 "text)\n"
                 "  hint: test it with gzip -t",
                 shown, why);
        ok = false;
    }
    gzclose(gz);
    if (!ok) {
        free(buf);
        return NULL;
    }
    buf[n] = '\0';
    *size = n;
    return buf;
}

/* Parses the line [line, line + len) (its line end cut off), line number
 * lineno, into row[0 .. 65). */
static int parse_line(const char *fn, const char *path, int64_t lineno,
                      const char *line, size_t len, uint8_t *row)
{
    if (len == 0) {
        tg_error(fn,
                 "line %lld of '%s' is empty\n"
                 "  rule: one image a line: 64 pixels and the label, "
                 "separated by ','",
                 (long long)lineno, path);
        return -1;
    }
    size_t i = 0;
    int field = 0;
    for (;;) {
        size_t start = i;
        unsigned value = 0;
        while (i < len && line[i] >= '0' && line[i] <= '9' && i - start < 3)
            value = value * 10 + (unsigned)(line[i++] - '0');
        bool digits = i > start && (i == len || line[i] == ',');
        bool label = field == TG_DIGITS_PIXELS;
        unsigned top = label ? 9 : 16;
        if (field >= DIGITS_FIELDS) {
            int64_t fields = field;
            for (size_t k = start; k < len; k++)
                fields += line[k] == ',';
            tg_error(fn,
                     "line %lld of '%s' has %lld fields\n"
                     "  rule: each line holds %d fields: %d pixels, then "
                     "the label",
                     (long long)lineno, path, (long long)fields + 1,
                     DIGITS_FIELDS, TG_DIGITS_PIXELS);
            return -1;
        }
        if (!digits || value > top) {
            while (i < len && line[i] != ',')
                i++;
            tg_error(fn,
                     "line %lld of '%s': field %d is '%.*s'\n"
                     "  rule: %s is a decimal integer from 0 to %u\n"
                     "  hint: is this the digits file, with %d fields a "
                     "line?",
                     (long long)lineno, path, field + 1,
                     (int)(i - start < 20 ? i - start : 20), line + start,
                     label ? "the label (field 65)" : "a pixel", top,
                     DIGITS_FIELDS);
            return -1;
        }
        row[field++] = (uint8_t)value;
        if (i == len)
            break;
        i++; // the ','
    }
    if (field != DIGITS_FIELDS) {
        tg_error(fn,
                 "line %lld of '%s' has %d fields\n"
                 "  rule: each line holds %d fields: %d pixels, then the "
                 "label",
                 (long long)lineno, path, field, DIGITS_FIELDS,
                 TG_DIGITS_PIXELS);
        return -1;
    }
    return 0;
}

/* Parses text (size bytes) into out: x (N, 1, 8, 8) float32, y (N,). */
static int parse(const char *fn, const char *path, const char *text,
                 size_t size, tg_dataset *out)
{
    int64_t lines = 0;
    for (size_t i = 0; i < size; i++)
        lines += text[i] == '\n';
    lines += size > 0 && text[size - 1] != '\n'; // a last line without \n
    uint8_t *rows = tg_malloc((size_t)(lines > 0 ? lines : 1) *
                              DIGITS_FIELDS);
    if (!rows) {
        tg_error(fn, "out of memory for the %lld lines of '%s'",
                 (long long)lines, path);
        return -1;
    }
    const char *line = text;
    for (int64_t k = 0; k < lines; k++) {
        const char *end = memchr(line, '\n', (size_t)(text + size - line));
        const char *next = end ? end + 1 : text + size;
        if (!end)
            end = text + size;
        if (end > line && end[-1] == '\r') // "\r\n"
            end--;
        if (parse_line(fn, path, k + 1, line, (size_t)(end - line),
                       rows + k * DIGITS_FIELDS) != 0) {
            free(rows);
            return -1;
        }
        line = next;
    }
    if (lines != TG_DIGITS_COUNT) {
        tg_error(fn,
                 "'%s' holds %lld images\n"
                 "  rule: the digits file holds %d images, one a line\n"
                 "  hint: a cut file? compare its SHA-256 with "
                 "data/README.md",
                 path, (long long)lines, TG_DIGITS_COUNT);
        free(rows);
        return -1;
    }
    tg_tensor *x = tg_alloc(TG_SHAPE(lines, 1, 8, 8), TG_FLOAT32);
    tg_tensor *y = x ? tg_alloc(TG_SHAPE(lines), TG_INT64) : NULL;
    if (!y) {
        tg_release(x);
        free(rows);
        return -1;
    }
    float *xd = tg_data_f32(x);   // (N, 1, 8, 8)
    int64_t *yd = tg_data_i64(y); // (N,)
    for (int64_t k = 0; k < lines; k++) {
        const uint8_t *row = rows + k * DIGITS_FIELDS;
        for (int p = 0; p < TG_DIGITS_PIXELS; p++)
            xd[k * TG_DIGITS_PIXELS + p] = (float)row[p];
        yd[k] = row[TG_DIGITS_PIXELS];
    }
    free(rows);
    out->x = x;
    out->y = y;
    return 0;
}

static int load(const char *fn, const char *path, tg_dataset *out)
{
    if (!path) {
        tg_error(fn, "path is NULL\n"
                     "  rule: pass the path of the digits file, "
                     "data/digits.csv.gz");
        return -1;
    }
    char shown_buf[TG_PATH_SHOWN_MAX + 1];
    const char *shown = tg_path_shown(path, shown_buf);
    size_t size = 0;
    char *text = read_gzip(fn, path, shown, &size);
    if (!text)
        return -1;
    int rc = parse(fn, shown, text, size, out);
    free(text);
    return rc;
}

int tg_digits_load(const char *path, tg_dataset *out)
{
    const char *fn = "tg_digits_load";
    if (!out) {
        tg_error(fn,
                 "out is NULL\n"
                 "  rule: pass the address of a tg_dataset to fill\n"
                 "  hint: tg_dataset d; tg_digits_load(path, &d); ... "
                 "tg_dataset_free(&d);");
        return -1;
    }
    *out = (tg_dataset){NULL, NULL};
    return load(fn, path, out);
}

int tg_digits_split(const char *path, double val_fraction, uint64_t seed,
                    tg_dataset *train, tg_dataset *val)
{
    const char *fn = "tg_digits_split";
    if (!train || !val || train == val) {
        tg_error(fn,
                 "train and val must be two different datasets to fill\n"
                 "  rule: the split writes new tensors into *train and "
                 "*val\n"
                 "  hint: tg_dataset tr, va; tg_digits_split(path, 0.2, "
                 "42, &tr, &va);");
        if (train)
            *train = (tg_dataset){NULL, NULL};
        if (val)
            *val = (tg_dataset){NULL, NULL};
        return -1;
    }
    *train = *val = (tg_dataset){NULL, NULL};
    if (!(val_fraction > 0 && val_fraction < 1)) {
        tg_error(fn,
                 "val_fraction is %g\n"
                 "  rule: the share of images held out is in (0, 1)\n"
                 "  hint: 0.2 keeps a fifth of the images for validation",
                 val_fraction);
        return -1;
    }
    tg_dataset all;
    if (load(fn, path, &all) != 0)
        return -1;
    tg_generator *g = tg_generator_new(seed); // NULL: it said why
    int rc = g ? tg_dataset_split(&all, val_fraction, g, train, val) : -1;
    tg_generator_free(g);
    tg_dataset_free(&all);
    return rc;
}
