/*
 * tests/nn/test_words.c - word lists and the makemore data sets
 * (nn/words.c).
 *
 * The lectures' split of data/names.txt (found through TG_DATA_DIR, which
 * tests/meson.build sets) against the lectures' own Python run on the same
 * file (scripts/reference/gen_words.py): the vocabulary, the row counts
 * 182625 / 22655 / 22866 for block_size 3, the first 50 rows of X and Y of
 * each set and a checksum of all of them, for block_size 3 and 8. The
 * comparison can fail: another seed's split and a single changed element
 * are rejected. Then a small list worked by hand from the lectures'
 * build_dataset, slices and shuffles agreeing with the split, the file
 * format (line ends, the last line, the longest word) and every error:
 * empty lines, bytes that are not printable ASCII, '.', long words, empty
 * files, missing files, directories, FIFOs (refused without blocking),
 * devices and symbolic links. Files are written in a fresh folder under
 * /tmp and removed at the end of each test.
 */
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L // mkdtemp, mkfifo, symlink
#endif

#include "../common.h"

#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

static const char *names_path(void)
{
    static char path[4096];
    const char *dir = getenv("TG_DATA_DIR");
    cr_assert_not_null(dir, "TG_DATA_DIR is not set (meson test sets it)");
    snprintf(path, sizeof path, "%s/names.txt", dir);
    return path;
}

/* ------------------------------------------------- a scratch folder */

static char scratch[64];
static char file_path[128];

static void scratch_make(void)
{
    snprintf(scratch, sizeof scratch, "/tmp/tg_words_XXXXXX");
    cr_assert_not_null(mkdtemp(scratch));
}

/* The path of name in the scratch folder (a static buffer). */
static const char *in_scratch(const char *name)
{
    snprintf(file_path, sizeof file_path, "%s/%s", scratch, name);
    return file_path;
}

/* Writes len bytes to the file name in the scratch folder; its path. */
static const char *write_file(const char *name, const char *bytes,
                              size_t len)
{
    const char *path = in_scratch(name);
    FILE *f = fopen(path, "wb");
    cr_assert_not_null(f);
    cr_assert_eq(fwrite(bytes, 1, len, f), len);
    fclose(f);
    return path;
}

static const char *write_text(const char *name, const char *text)
{
    return write_file(name, text, strlen(text));
}

/* Removes the files these tests make (no subfolders) and the folder. */
static void scratch_remove(void)
{
    static const char *names[] = {"list", "fifo", "dir", "link", "dirlink"};
    for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
        const char *path = in_scratch(names[i]);
        if (unlink(path) != 0)
            rmdir(path);
    }
    cr_assert_eq(rmdir(scratch), 0, "scratch folder %s not empty", scratch);
}

/* Loads text as a word list (it must load). */
static tg_words *words_of(const char *text)
{
    tg_words *w = tg_words_load(write_text("list", text));
    cr_assert_not_null(w, "%s", tg_last_error());
    return w;
}

/* Loading text fails, with each fragment in the message. */
#define assert_load_fails(text, ...)                                        \
    do {                                                                    \
        tg_clear_error();                                                   \
        cr_assert_null(tg_words_load(write_text("list", (text))));          \
        tg_assert_error(__VA_ARGS__);                                       \
    } while (0)

/* ----------------------------------------------- the lectures' split */

/* Whether the set (x, y) matches the references of prefix: the first 50
 * rows of x and y, then the row count and sum(v), sum((i + 1) v[i]) of x
 * (row-major) and of y. report says what differs. */
static bool set_matches(const tg_dataset *d, const char *prefix,
                        char *report, size_t size)
{
    char name[96];
    snprintf(name, sizeof name, "%s_sums", prefix);
    tg_tensor *sums = tg_test_load_ref(name);
    const int64_t *want = tg_data_i64(sums);
    int64_t rows = d->x->shape[0], bs = d->x->shape[1];
    const int64_t *x = tg_data_i64(d->x), *y = tg_data_i64(d->y);
    int64_t got[5] = {rows, 0, 0, 0, 0};
    for (int64_t i = 0; i < rows * bs; i++) {
        got[1] += x[i];
        got[2] += (i + 1) * x[i];
    }
    for (int64_t i = 0; i < rows; i++) {
        got[3] += y[i];
        got[4] += (i + 1) * y[i];
    }
    bool same = true;
    for (int k = 0; k < 5 && same; k++)
        if (got[k] != want[k]) {
            snprintf(report, size, "%s: checksum %d is %lld, Python's %lld",
                     prefix, k, (long long)got[k], (long long)want[k]);
            same = false;
        }
    tg_release(sums);
    for (int k = 0; k < 2 && same; k++) {
        snprintf(name, sizeof name, "%s_%s_head", prefix, k ? "y" : "x");
        tg_tensor *head = tg_test_load_ref(name);
        tg_tensor *mine = tg_narrow(k ? d->y : d->x, 0, 0, head->shape[0]);
        same = tg_test_close(mine, head, 0, 0, true, report, size);
        tg_release(mine);
        tg_release(head);
    }
    return same;
}

static void check_split(int block_size, const int64_t rows[3])
{
    tg_words *w = tg_words_load(names_path());
    cr_assert_not_null(w, "%s", tg_last_error());
    tg_dataset sets[3];
    cr_assert_eq(tg_words_split(w, block_size, 42, &sets[0], &sets[1],
                                &sets[2]), 0, "%s", tg_last_error());
    const char *names[3] = {"tr", "dev", "te"};
    for (int s = 0; s < 3; s++) {
        const tg_dataset *d = &sets[s];
        cr_assert_eq(d->x->dtype, TG_INT64);
        cr_assert_eq(d->y->dtype, TG_INT64);
        cr_assert_eq(d->x->ndim, 2);
        cr_assert_eq(d->x->shape[0], rows[s], "%s has %lld rows", names[s],
                     (long long)d->x->shape[0]);
        cr_assert_eq(d->x->shape[1], block_size);
        cr_assert_eq(d->y->ndim, 1);
        cr_assert_eq(d->y->shape[0], rows[s]);
        cr_assert(!d->x->requires_grad && !d->y->requires_grad);
        char prefix[32], report[512];
        snprintf(prefix, sizeof prefix, "words_b%d_%s", block_size, names[s]);
        cr_assert(set_matches(d, prefix, report, sizeof report), "%s",
                  report);
        tg_dataset_free(&sets[s]);
    }
    tg_words_free(w);
}

TG_TEST(words, names_split_as_the_lectures_block_size_3)
{
    check_split(3, (const int64_t[]){182625, 22655, 22866});
}

TG_TEST(words, names_split_as_the_lectures_block_size_8)
{
    check_split(8, (const int64_t[]){182625, 22655, 22866});
}

TG_TEST(words, names_vocabulary_is_the_lectures)
{
    tg_words *w = tg_words_load(names_path());
    cr_assert_eq(tg_words_count(w), 32033);
    cr_assert_str_eq(tg_words_get(w, 0), "emma"); // the file's first lines
    cr_assert_str_eq(tg_words_get(w, 1), "olivia");
    cr_assert_str_eq(tg_words_get(w, 32032), "zzyzx");
    const char *vocab = tg_words_vocab(w);
    cr_assert_str_eq(vocab, ".abcdefghijklmnopqrstuvwxyz");
    tg_tensor *ref = tg_test_load_ref("words_vocab");
    cr_assert_eq(ref->numel, 27);
    cr_assert_eq((int64_t)strlen(vocab), ref->numel);
    for (int i = 0; i < 27; i++) {
        cr_assert_eq(vocab[i], (char)tg_data_i64(ref)[i]);
        cr_assert_eq(tg_words_stoi(w, vocab[i]), i);
    }
    tg_release(ref);
    tg_words_free(w);
}

/* The comparison can fail: the split of another seed has the same sizes
 * but not the same rows, and one element changed anywhere in a set
 * changes its checksum. */
TG_TEST(words, split_check_rejects_wrong_sets)
{
    tg_words *w = tg_words_load(names_path());
    tg_dataset tr, dev, te;
    char report[512];
    cr_assert_eq(tg_words_split(w, 3, 43, &tr, &dev, &te), 0);
    cr_assert_not(set_matches(&tr, "words_b3_tr", report, sizeof report));
    cr_assert_not(set_matches(&te, "words_b3_te", report, sizeof report));
    tg_dataset_free(&tr);
    tg_dataset_free(&dev);
    tg_dataset_free(&te);

    cr_assert_eq(tg_words_split(w, 3, 42, &tr, &dev, &te), 0);
    cr_assert(set_matches(&dev, "words_b3_dev", report, sizeof report),
              "%s", report);
    int64_t *x = tg_data_i64(dev.x);
    x[3 * 20000 + 1] += 1; // one context, far past the first 50 rows
    cr_assert_not(set_matches(&dev, "words_b3_dev", report, sizeof report));
    x[3 * 20000 + 1] -= 1;
    int64_t *y = tg_data_i64(dev.y);
    int64_t t = y[100]; // two labels swapped: the same sum, another order
    y[100] = y[101];
    y[101] = t;
    cr_assert_neq(y[100], y[101]);
    cr_assert_not(set_matches(&dev, "words_b3_dev", report, sizeof report));
    tg_dataset_free(&tr);
    tg_dataset_free(&dev);
    tg_dataset_free(&te);
    tg_words_free(w);
}

/* ------------------------------------------------ build_dataset by hand */

/* build_dataset(['emma', 'ava']) with block_size 3, as the lecture prints
 * it (... ---> e, ..e ---> m, ...), over the vocabulary '.', a, e, m, v. */
TG_TEST(words, contexts_slide_as_the_lectures)
{
    scratch_make();
    tg_words *w = words_of("emma\nava\n");
    cr_assert_str_eq(tg_words_vocab(w), ".aemv");
    tg_dataset d;
    cr_assert_eq(tg_words_dataset(w, 0, 2, 3, &d), 0);
    const int64_t x[9][3] = {{0, 0, 0}, {0, 0, 2}, {0, 2, 3}, {2, 3, 3},
                             {3, 3, 1}, {0, 0, 0}, {0, 0, 1}, {0, 1, 4},
                             {1, 4, 1}};
    const int64_t y[9] = {2, 3, 3, 1, 0, 1, 4, 1, 0};
    tg_tensor *ex = tg_from_array(x, TG_SHAPE(9, 3), TG_INT64);
    tg_tensor *ey = tg_from_array(y, TG_SHAPE(9), TG_INT64);
    tg_assert_close(d.x, ex, 0, 0);
    tg_assert_close(d.y, ey, 0, 0);
    tg_dataset_free(&d);

    /* block_size 1: the bigram pairs; a block longer than the word: the
     * context never loses its leading dots */
    cr_assert_eq(tg_words_dataset(w, 1, 2, 1, &d), 0); // 'ava'
    const int64_t x1[4] = {0, 1, 4, 1}, y1[4] = {1, 4, 1, 0};
    tg_tensor *ex1 = tg_from_array(x1, TG_SHAPE(4, 1), TG_INT64);
    tg_tensor *ey1 = tg_from_array(y1, TG_SHAPE(4), TG_INT64);
    tg_assert_close(d.x, ex1, 0, 0);
    tg_assert_close(d.y, ey1, 0, 0);
    tg_dataset_free(&d);
    cr_assert_eq(tg_words_dataset(w, 1, 2, 6, &d), 0);
    const int64_t x6[4][6] = {{0, 0, 0, 0, 0, 0}, {0, 0, 0, 0, 0, 1},
                              {0, 0, 0, 0, 1, 4}, {0, 0, 0, 1, 4, 1}};
    tg_tensor *ex6 = tg_from_array(x6, TG_SHAPE(4, 6), TG_INT64);
    tg_assert_close(d.x, ex6, 0, 0);
    tg_assert_close(d.y, ey1, 0, 0);
    tg_dataset_free(&d);

    /* an empty slice: (0, block_size) and (0,) */
    cr_assert_eq(tg_words_dataset(w, 2, 2, 3, &d), 0);
    cr_assert_eq(d.x->ndim, 2);
    cr_assert_eq(d.x->shape[0], 0);
    cr_assert_eq(d.x->shape[1], 3);
    cr_assert_eq(d.y->shape[0], 0);
    tg_dataset_free(&d);

    tg_release(ex);
    tg_release(ey);
    tg_release(ex1);
    tg_release(ey1);
    tg_release(ex6);
    tg_words_free(w);
    scratch_remove();
}

/* The split is the slices of the list shuffled by Python's random with
 * the same seed, and leaves the list itself in its order. */
TG_TEST(words, split_is_slices_of_the_shuffled_list)
{
    tg_words *w = tg_words_load(names_path());
    tg_dataset sets[3];
    cr_assert_eq(tg_words_split(w, 4, 7, &sets[0], &sets[1], &sets[2]), 0);
    cr_assert_str_eq(tg_words_get(w, 0), "emma"); // w is unchanged
    tg_pyrandom *r = tg_pyrandom_new(7);
    cr_assert_eq(tg_words_shuffle(w, r), 0);
    cr_assert_str_neq(tg_words_get(w, 0), "emma");
    int64_t n = tg_words_count(w);
    int64_t cut[4] = {0, (int64_t)(0.8 * (double)n),
                      (int64_t)(0.9 * (double)n), n};
    cr_assert_eq(cut[1], 25626);
    cr_assert_eq(cut[2], 28829);
    for (int s = 0; s < 3; s++) {
        tg_dataset d;
        cr_assert_eq(tg_words_dataset(w, cut[s], cut[s + 1], 4, &d), 0);
        tg_assert_close(d.x, sets[s].x, 0, 0);
        tg_assert_close(d.y, sets[s].y, 0, 0);
        tg_dataset_free(&d);
        tg_dataset_free(&sets[s]);
    }
    tg_pyrandom_free(r);
    tg_words_free(w);
}

/* A list of one word: int(0.8) = int(0.9) = 0 words for train and dev. */
TG_TEST(words, split_of_one_word)
{
    scratch_make();
    tg_words *w = words_of("ab");
    tg_dataset tr, dev, te;
    cr_assert_eq(tg_words_split(w, 2, 42, &tr, &dev, &te), 0);
    cr_assert_eq(tr.x->shape[0], 0);
    cr_assert_eq(dev.x->shape[0], 0);
    cr_assert_eq(te.x->shape[0], 3);
    cr_assert_eq(te.x->shape[1], 2);
    tg_dataset_free(&tr);
    tg_dataset_free(&dev);
    tg_dataset_free(&te);
    tg_words_free(w);
    scratch_remove();
}

/* --------------------------------------------------------- the format */

TG_TEST(words, line_ends_last_line_and_vocabulary_order)
{
    scratch_make();
    /* \r\n and \n mixed, no newline at the end; the vocabulary is sorted
     * by character code: space, digits, capitals, then small letters */
    tg_words *w = words_of("b a\r\nZed\n9x~");
    cr_assert_eq(tg_words_count(w), 3);
    cr_assert_str_eq(tg_words_get(w, 0), "b a");
    cr_assert_str_eq(tg_words_get(w, 1), "Zed");
    cr_assert_str_eq(tg_words_get(w, 2), "9x~");
    cr_assert_str_eq(tg_words_vocab(w), ". 9Zabdex~");
    cr_assert_eq(tg_words_stoi(w, ' '), 1);
    cr_assert_eq(tg_words_stoi(w, '~'), 9);
    tg_words_free(w);

    /* one newline at the end is not an empty line */
    w = words_of("ab\ncd\n");
    cr_assert_eq(tg_words_count(w), 2);
    tg_words_free(w);
    w = words_of("ab\r\n");
    cr_assert_eq(tg_words_count(w), 1);
    cr_assert_str_eq(tg_words_get(w, 0), "ab");
    tg_words_free(w);

    /* the longest word allowed, and one more */
    char longest[TG_WORD_MAX + 2];
    memset(longest, 'q', TG_WORD_MAX);
    longest[TG_WORD_MAX] = '\0';
    w = words_of(longest);
    cr_assert_eq(strlen(tg_words_get(w, 0)), TG_WORD_MAX);
    tg_words_free(w);
    longest[TG_WORD_MAX] = 'q';
    longest[TG_WORD_MAX + 1] = '\0';
    assert_load_fails(longest, "tg_words_load: line 1 of '",
                      "' is longer than 256 characters",
                      "rule: a word has at most TG_WORD_MAX = 256");
    scratch_remove();
}

TG_TEST(words, format_errors_name_line_and_column)
{
    scratch_make();
    assert_load_fails("ab\n\ncd\n", "tg_words_load: line 2 of '",
                      "/list' is empty", "rule: one word per line",
                      "hint: remove them");
    assert_load_fails("ab\ncd\n\n", "line 3 of '", "' is empty");
    assert_load_fails("\n", "line 1 of '", "' is empty");
    assert_load_fails("ab\r\n\r\n", "line 2 of '", "' is empty");
    assert_load_fails("ab\nzo\xc3\xab\n", "line 2 of '",
                      "' has the non-ASCII byte 0xc3 at column 3",
                      "rule: words are printable ASCII",
                      "hint: for UTF-8 text, transliterate first");
    assert_load_fails("a\tb\n", "line 1 of '",
                      "' has the control byte 0x09 at column 2",
                      "hint: a tab, a lone \\r or a NUL");
    assert_load_fails("ab\rcd\n", "has the control byte 0x0d at column 3");
    assert_load_fails("ab\n\x7f\n", "line 2 of '",
                      "has the control byte 0x7f at column 1");
    assert_load_fails("ab\ncd\nj.r.\n", "line 3 of '",
                      "' contains '.' at column 2",
                      "rule: '.' (index 0) stands for the start and the end");
    assert_load_fails("", "tg_words_load: '", "/list' holds no words");
    /* a NUL inside a line is a byte like any other */
    cr_assert_null(tg_words_load(write_file("list", "ab\0c\n", 5)));
    tg_assert_error("line 1 of '", "has the control byte 0x00 at column 3");
    scratch_remove();
}

/* Only regular files are read: a FIFO with no writer is refused at once
 * (opening or reading it would otherwise wait for ever), and so are a
 * directory, a character device and a symbolic link to a directory; a
 * symbolic link to a regular file is followed. */
TG_TEST(words, only_regular_files)
{
    scratch_make();
    char msg[1024];
    const char *fifo = in_scratch("fifo");
    cr_assert_eq(mkfifo(fifo, 0600), 0);
    cr_assert_null(tg_words_load(fifo));
    snprintf(msg, sizeof msg, "tg_words_load: '%s' is a FIFO (named pipe)",
             fifo);
    tg_assert_error(msg, "rule: a word list is read from a regular file");

    const char *dir = in_scratch("dir");
    cr_assert_eq(mkdir(dir, 0700), 0);
    cr_assert_null(tg_words_load(dir));
    snprintf(msg, sizeof msg, "tg_words_load: '%s' is a folder", dir);
    tg_assert_error(msg);

    cr_assert_null(tg_words_load("/dev/null"));
    tg_assert_error("tg_words_load: '/dev/null' is a character device");

    char target[128];
    snprintf(target, sizeof target, "%s", in_scratch("dir"));
    const char *dirlink = in_scratch("dirlink");
    cr_assert_eq(symlink(target, dirlink), 0);
    cr_assert_null(tg_words_load(dirlink));
    tg_assert_error("' is a folder");

    snprintf(target, sizeof target, "%s", write_text("list", "x\ny\n"));
    const char *link = in_scratch("link");
    cr_assert_eq(symlink(target, link), 0);
    tg_words *w = tg_words_load(link);
    cr_assert_not_null(w, "%s", tg_last_error());
    cr_assert_eq(tg_words_count(w), 2);
    tg_words_free(w);
    scratch_remove();
}

TG_TEST(words, missing_file_and_null_path)
{
    cr_assert_null(tg_words_load("/nonexistent/names.txt"));
    tg_assert_error("tg_words_load: cannot open '/nonexistent/names.txt': "
                    "No such file or directory",
                    "rule: the file must exist and be readable");
    cr_assert_null(tg_words_load(NULL));
    tg_assert_error("tg_words_load: path is NULL");
}

/* -------------------------------------------------------- other errors */

TG_TEST(words, errors)
{
    scratch_make();
    tg_words *w = words_of("emma\nava\n");
    tg_dataset d = {NULL, NULL}, a, b, c;
    cr_assert_null(tg_words_get(w, 2));
    tg_assert_error("tg_words_get: index 2 is out of range for 2 words");
    cr_assert_null(tg_words_get(w, -1));
    tg_assert_error("tg_words_get: index -1 is out of range");
    cr_assert_eq(tg_words_stoi(w, 'z'), -1);
    tg_assert_error("tg_words_stoi: the character 122 ('z') is not in the "
                    "vocabulary",
                    "\".aemv\"");
    cr_assert_eq(tg_words_stoi(w, 200), -1);
    tg_assert_error("the character 200 ('?')");

    cr_assert_eq(tg_words_dataset(w, 0, 2, 0, &d), -1);
    cr_assert_null(d.x);
    cr_assert_null(d.y);
    tg_assert_error("tg_words_dataset: block_size is 0",
                    "hint: the lectures use 3");
    cr_assert_eq(tg_words_dataset(w, 1, 3, 3, &d), -1);
    tg_assert_error("tg_words_dataset: the words [1, 3) are not a range of "
                    "the 2 words");
    cr_assert_eq(tg_words_dataset(w, 2, 1, 3, &d), -1);
    tg_assert_error("the words [2, 1) are not a range");
    cr_assert_eq(tg_words_dataset(w, -1, 1, 3, &d), -1);
    tg_assert_error("the words [-1, 1) are not a range");
    cr_assert_eq(tg_words_dataset(w, 0, 2, 3, NULL), -1);
    tg_assert_error("tg_words_dataset: out is NULL");

    cr_assert_eq(tg_words_split(w, 3, 42, &a, &a, &c), -1);
    tg_assert_error("tg_words_split: train, dev and test must be three "
                    "different datasets to fill");
    cr_assert_eq(tg_words_split(w, 3, 42, &a, &b, NULL), -1);
    tg_assert_error("tg_words_split: train, dev and test must be three");
    cr_assert_eq(tg_words_split(w, -2, 42, &a, &b, &c), -1);
    cr_assert(!a.x && !b.x && !c.x && !a.y && !b.y && !c.y);
    tg_assert_error("tg_words_split: block_size is -2");

    /* memory running out at any allocation of a split or a load: an
     * error, NULL outputs, nothing leaked */
    for (int64_t k = 0; k < 8; k++) {
        tg_fail_allocations_after(k);
        int rc = tg_words_split(w, 3, 42, &a, &b, &c);
        tg_fail_allocations_after(-1);
        if (rc == 0) {
            tg_dataset_free(&a);
            tg_dataset_free(&b);
            tg_dataset_free(&c);
            cr_assert_geq(k, 7); // 1 order + 6 tensors
            continue;
        }
        cr_assert(!a.x && !b.x && !c.x && !a.y && !b.y && !c.y);
        cr_assert_str_not_empty(tg_last_error());
        tg_clear_error();
    }
    for (int64_t k = 0; k < 3; k++) {
        tg_fail_allocations_after(k);
        tg_words *v = tg_words_load(in_scratch("list"));
        tg_fail_allocations_after(-1);
        cr_assert_null(v, "allocation %lld", (long long)k);
        tg_assert_error("tg_words_load: out of memory");
    }
    tg_words_free(w);
    scratch_remove();
}

/* A NULL list (tg_words_load failed and said why) fails without a second
 * message. */
TG_TEST(words, null_list_is_silent)
{
    tg_clear_error();
    tg_dataset a, b, c;
    tg_pyrandom *r = tg_pyrandom_new(1);
    cr_assert_eq(tg_words_count(NULL), -1);
    cr_assert_null(tg_words_get(NULL, 0));
    cr_assert_null(tg_words_vocab(NULL));
    cr_assert_eq(tg_words_stoi(NULL, 'a'), -1);
    cr_assert_eq(tg_words_shuffle(NULL, r), -1);
    cr_assert_eq(tg_words_dataset(NULL, 0, 1, 3, &a), -1);
    cr_assert_null(a.x);
    cr_assert_eq(tg_words_split(NULL, 3, 42, &a, &b, &c), -1);
    cr_assert(!a.x && !b.x && !c.x);
    tg_words_free(NULL);
    cr_assert_str_empty(tg_last_error());
    tg_pyrandom_free(r);
}
