/*
 * nn/words.c - a list of words read from a text file and the character
 * data sets of the makemore lectures made from it: contexts of block_size
 * characters, each labelled with the character that follows, split into
 * train, dev and test exactly as the lectures split names.txt.
 *
 * The lectures' Python (makemore parts 3 to 5), which this file follows
 * step by step:
 *
 *   words = open('names.txt', 'r').read().splitlines()
 *   chars = sorted(list(set(''.join(words))))     # the vocabulary
 *   stoi = {s: i + 1 for i, s in enumerate(chars)}; stoi['.'] = 0
 *   itos = {i: s for s, i in stoi.items()}
 *
 *   def build_dataset(words):                     # tg_words_dataset
 *       X, Y = [], []
 *       for w in words:
 *           context = [0] * block_size            # '.' '.' '.'
 *           for ch in w + '.':
 *               ix = stoi[ch]
 *               X.append(context); Y.append(ix)
 *               context = context[1:] + [ix]      # slide by one
 *       return torch.tensor(X), torch.tensor(Y)   # (N, block_size), (N,)
 *
 *   random.seed(42); random.shuffle(words)        # tg_words_split
 *   n1 = int(0.8 * len(words)); n2 = int(0.9 * len(words))
 *   Xtr, Ytr = build_dataset(words[:n1])          # 80%
 *   Xdev, Ydev = build_dataset(words[n1:n2])      # 10%
 *   Xte, Yte = build_dataset(words[n2:])          # 10%
 *
 * A word of L characters gives L + 1 rows: one per character and one for
 * the final '.', so N is the number of characters plus the number of
 * words. The shuffle is Python's (nn/pyrandom.c), so the same seed gives
 * the same three sets as the notebook; with names.txt and block_size 3:
 * 182625, 22655 and 22866 rows over a vocabulary of 27.
 *
 * The file format, stricter than splitlines() so that a wrong file fails
 * here rather than as a strange vocabulary later:
 * - one word per line; lines end with "\n" or "\r\n"; the last line may
 *   lack its newline;
 * - an empty line is an error (splitlines() would keep it as an empty
 *   word, which gives one row predicting '.' from '...');
 * - a word is printable ASCII, space to '~', other than '.', which stands
 *   for the start and the end of a word; any other byte (a tab, a lone
 *   "\r", a NUL, a byte of UTF-8 text) is an error naming its line and
 *   column;
 * - at most TG_WORD_MAX characters per word;
 * - only regular files (after following symbolic links) are read: a
 *   directory, a FIFO or a device is refused without reading from it, so
 *   tg_words_load never blocks waiting for a writer.
 *
 * What this file is not: not a tokenizer (one character is one token), not
 * Unicode-aware, and not a streaming reader (the whole file is read into
 * memory, which for a word list is small). POSIX only (open, fstat).
 */
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L // open flags, fstat
#endif

#include "nn.h"

#include "../tensor/internal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* The vocabulary holds '.' and at most the 94 other printable characters. */
#define VOCAB_MAX 96

struct tg_words {
    char *text;       // the file's bytes, each line ended by a NUL in place
    char **word;      // (count,) pointers into text, in the current order
    int64_t count;    // the number of words
    int64_t chars;    // the number of characters of all words
    char itos[VOCAB_MAX]; // (vocab_size,) itos[0] = '.', then sorted chars
    int vocab_size;
    int stoi[128];    // index of each ASCII character; -1 if not in itos
};

/* ------------------------------------------------------------ the file */

/* The bytes of the regular file at path with a NUL after them (*size
 * bytes before it): a buffer the caller frees, or NULL with an error that
 * shows the path as `shown`. */
static char *read_file(const char *fn, const char *path, const char *shown,
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
                 "  rule: the file must exist and be readable",
                 shown, strerror(err));
        return NULL;
    }
    if (opened == -2) {
        tg_error(fn,
                 "'%s' is %s\n"
                 "  rule: a word list is read from a regular file "
                 "(symbolic links are followed)\n"
                 "  hint: pass the path of a text file, one word per line",
                 shown, tg_file_kind(mode));
        return NULL;
    }
    /* Room for the size fstat gives, the NUL, and one byte more so that
     * the read that finds the end needs no bigger buffer; but read until
     * the end anyway: a file may grow while it is read. */
    size_t cap = (size_t)nbytes + 2, n = 0;
    char *buf = tg_malloc(cap);
    bool ok = buf != NULL;
    while (ok) {
        if (n + 1 >= cap) {
            char *bigger = cap <= SIZE_MAX / 2 ? tg_realloc(buf, cap * 2)
                                               : NULL;
            if (!bigger) {
                ok = false;
                break;
            }
            buf = bigger;
            cap *= 2;
        }
        ssize_t k = read(fd, buf + n, cap - 1 - n);
        if (k < 0 && errno == EINTR)
            continue;
        if (k < 0) {
            int err = errno;
            tg_error(fn, "read error on '%s': %s", shown, strerror(err));
            free(buf);
            close(fd);
            return NULL;
        }
        if (k == 0)
            break;
        n += (size_t)k;
    }
    close(fd);
    if (!ok) {
        free(buf);
        tg_error(fn, "out of memory reading '%s' (%lld bytes)", shown,
                 (long long)nbytes);
        return NULL;
    }
    buf[n] = '\0';
    *size = n;
    return buf;
}

/* Checks the line [line, line + len) (its "\r\n" or "\n" already cut off)
 * against the format in the file header; true when it is a word. */
static bool word_ok(const char *fn, const char *path, int64_t lineno,
                    const char *line, size_t len)
{
    if (len == 0) {
        tg_error(fn,
                 "line %lld of '%s' is empty\n"
                 "  rule: one word per line, with no blank lines\n"
                 "  hint: remove them, e.g. sed -i '/^$/d' file",
                 (long long)lineno, path);
        return false;
    }
    if (len > TG_WORD_MAX) {
        tg_error(fn,
                 "line %lld of '%s' is longer than %d characters\n"
                 "  rule: a word has at most TG_WORD_MAX = %d characters\n"
                 "  hint: is this a word list, one word per line?",
                 (long long)lineno, path, TG_WORD_MAX, TG_WORD_MAX);
        return false;
    }
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)line[i];
        if (c == '.') {
            tg_error(fn,
                     "line %lld of '%s' contains '.' at column %zu\n"
                     "  rule: '.' (index 0) stands for the start and the "
                     "end of a word, so no word may contain it",
                     (long long)lineno, path, i + 1);
            return false;
        }
        if (c < 0x20 || c > 0x7e) {
            tg_error(fn,
                     "line %lld of '%s' has the %s byte 0x%02x at column "
                     "%zu\n"
                     "  rule: words are printable ASCII (space to '~'); "
                     "lines end with \\n or \\r\\n\n"
                     "  hint: %s",
                     (long long)lineno, path,
                     c >= 0x80 ? "non-ASCII" : "control", c, i + 1,
                     c >= 0x80 ? "for UTF-8 text, transliterate first, "
                                 "e.g. iconv -f utf-8 -t ascii//TRANSLIT"
                               : "a tab, a lone \\r or a NUL has no place "
                                 "in a word");
            return false;
        }
    }
    return true;
}

/* Cuts text into lines in place (each line's end becomes a NUL), checks
 * every line, and fills w's words and vocabulary. */
static int parse(const char *fn, const char *path, tg_words *w, size_t size)
{
    char *text = w->text;
    int64_t lines = 0;
    for (size_t i = 0; i < size; i++)
        lines += text[i] == '\n';
    lines += size > 0 && text[size - 1] != '\n'; // a last line without \n
    if (lines == 0) {
        tg_error(fn,
                 "'%s' holds no words\n"
                 "  rule: a word list has at least one word, one per line",
                 path);
        return -1;
    }
    w->word = tg_malloc((size_t)lines * sizeof *w->word);
    if (!w->word) {
        tg_error(fn, "out of memory for the %lld words of '%s'",
                 (long long)lines, path);
        return -1;
    }
    bool seen[128] = {false};
    char *line = text;
    for (int64_t k = 0; k < lines; k++) {
        char *end = memchr(line, '\n', (size_t)(text + size - line));
        char *next = end ? end + 1 : text + size;
        if (!end)
            end = text + size;
        if (end > line && end[-1] == '\r') // "\r\n"
            end--;
        size_t len = (size_t)(end - line);
        if (!word_ok(fn, path, k + 1, line, len))
            return -1;
        *end = '\0';
        for (size_t i = 0; i < len; i++)
            seen[(unsigned char)line[i]] = true;
        w->word[k] = line;
        w->chars += (int64_t)len;
        line = next;
    }
    w->count = lines;
    /* itos: '.' then the characters in the order of their codes, which is
     * Python's sorted() of one-character strings */
    for (int c = 0; c < 128; c++)
        w->stoi[c] = -1;
    w->itos[0] = '.';
    w->stoi['.'] = 0;
    w->vocab_size = 1;
    for (int c = 0x20; c <= 0x7e; c++)
        if (seen[c]) {
            w->stoi[c] = w->vocab_size;
            w->itos[w->vocab_size++] = (char)c;
        }
    w->itos[w->vocab_size] = '\0';
    return 0;
}

tg_words *tg_words_load(const char *path)
{
    const char *fn = "tg_words_load";
    if (!path) {
        tg_error(fn, "path is NULL\n"
                     "  rule: pass the name of a text file, one word per "
                     "line");
        return NULL;
    }
    tg_words *w = tg_calloc(1, sizeof *w);
    if (!w) {
        tg_error(fn, "out of memory for a word list");
        return NULL;
    }
    /* parse and word_ok use the path in messages only. */
    char shown_buf[TG_PATH_SHOWN_MAX + 1];
    const char *shown = tg_path_shown(path, shown_buf);
    size_t size = 0;
    w->text = read_file(fn, path, shown, &size);
    if (!w->text || parse(fn, shown, w, size) != 0) {
        tg_words_free(w);
        return NULL;
    }
    return w;
}

void tg_words_free(tg_words *w)
{
    if (!w)
        return;
    free(w->word);
    free(w->text);
    free(w);
}

/* ---------------------------------------------------------- the words */

int64_t tg_words_count(const tg_words *w)
{
    return w ? w->count : -1; // NULL: tg_words_load failed and said why
}

const char *tg_words_get(const tg_words *w, int64_t i)
{
    if (!w)
        return NULL;
    if (i < 0 || i >= w->count) {
        tg_error("tg_words_get",
                 "index %lld is out of range for %lld words\n"
                 "  rule: 0 <= i < tg_words_count(w)",
                 (long long)i, (long long)w->count);
        return NULL;
    }
    return w->word[i];
}

const char *tg_words_vocab(const tg_words *w)
{
    return w ? w->itos : NULL;
}

int tg_words_stoi(const tg_words *w, int c)
{
    if (!w)
        return -1;
    if (c < 0 || c >= 128 || w->stoi[c] < 0) {
        tg_error("tg_words_stoi",
                 "the character %d ('%c') is not in the vocabulary\n"
                 "  rule: the vocabulary is '.' and the characters of the "
                 "words: \"%s\"",
                 c, c >= 0x20 && c <= 0x7e ? c : '?', w->itos);
        return -1;
    }
    return w->stoi[c];
}

int tg_words_shuffle(tg_words *w, tg_pyrandom *r)
{
    if (!w || !r)
        return -1;
    return tg_pyrandom_shuffle(r, w->word, (size_t)w->count, sizeof *w->word);
}

/* ------------------------------------------------------ the data sets */

/* build_dataset(words[0 .. n)) into out: X (N, block_size) int64, Y (N,)
 * int64 (see the file header). The words are in the vocabulary of w. */
static int build(const char *fn, const tg_words *w, char *const *words,
                 int64_t n, int block_size, tg_dataset *out)
{
    int64_t rows = 0;
    for (int64_t i = 0; i < n; i++)
        rows += (int64_t)strlen(words[i]) + 1;
    if (rows > TG_MAX_NUMEL / block_size) {
        tg_error(fn,
                 "%lld rows of block_size %d are too many\n"
                 "  rule: X has at most %lld elements",
                 (long long)rows, block_size, (long long)TG_MAX_NUMEL);
        return -1;
    }
    tg_tensor *x = tg_alloc(TG_SHAPE(rows, block_size), TG_INT64);
    tg_tensor *y = x ? tg_alloc(TG_SHAPE(rows), TG_INT64) : NULL;
    if (!y) {
        tg_release(x);
        return -1;
    }
    int64_t *xd = tg_data_i64(x); // (N, block_size)
    int64_t *yd = tg_data_i64(y); // (N,)
    int64_t row = 0;
    for (int64_t i = 0; i < n; i++) {
        const char *word = words[i];
        size_t len = strlen(word);
        /* context = [0] * block_size: this row's X, written in place */
        int64_t *context = xd + row * block_size;
        for (int b = 0; b < block_size; b++)
            context[b] = 0;
        for (size_t k = 0; k <= len; k++) { // for ch in w + '.'
            int64_t ix = k < len ? w->stoi[(unsigned char)word[k]] : 0;
            yd[row] = ix;
            row++;
            if (k == len)
                break;
            /* the next row's context: this one slid left, ix appended */
            int64_t *next = xd + row * block_size;
            for (int b = 0; b + 1 < block_size; b++)
                next[b] = context[b + 1];
            next[block_size - 1] = ix;
            context = next;
        }
    }
    out->x = x;
    out->y = y;
    return 0;
}

static bool block_size_ok(const char *fn, int block_size)
{
    if (block_size < 1) {
        tg_error(fn,
                 "block_size is %d\n"
                 "  rule: a context holds at least one character\n"
                 "  hint: the lectures use 3 (parts 3 and 4) and 8 "
                 "(part 5)",
                 block_size);
        return false;
    }
    return true;
}

int tg_words_dataset(const tg_words *w, int64_t begin, int64_t end,
                     int block_size, tg_dataset *out)
{
    const char *fn = "tg_words_dataset";
    if (!out) {
        tg_error(fn,
                 "out is NULL\n"
                 "  rule: pass the address of a tg_dataset to fill\n"
                 "  hint: tg_dataset d; tg_words_dataset(w, 0, n, 3, &d); "
                 "... tg_dataset_free(&d);");
        return -1;
    }
    *out = (tg_dataset){NULL, NULL};
    if (!w)
        return -1;
    if (!block_size_ok(fn, block_size))
        return -1;
    if (begin < 0 || end < begin || end > w->count) {
        tg_error(fn,
                 "the words [%lld, %lld) are not a range of the %lld "
                 "words\n"
                 "  rule: 0 <= begin <= end <= tg_words_count(w), as the "
                 "slice words[begin:end]",
                 (long long)begin, (long long)end, (long long)w->count);
        return -1;
    }
    return build(fn, w, w->word + begin, end - begin, block_size, out);
}

int tg_words_split(const tg_words *w, int block_size, uint64_t seed,
                   tg_dataset *train, tg_dataset *dev, tg_dataset *test)
{
    const char *fn = "tg_words_split";
    if (!train || !dev || !test || train == dev || train == test ||
        dev == test) {
        tg_error(fn,
                 "train, dev and test must be three different datasets "
                 "to fill\n"
                 "  rule: the split writes new tensors into *train, *dev "
                 "and *test\n"
                 "  hint: tg_dataset tr, dev, te; tg_words_split(w, 3, 42, "
                 "&tr, &dev, &te);");
        return -1;
    }
    *train = *dev = *test = (tg_dataset){NULL, NULL};
    if (!w)
        return -1;
    if (!block_size_ok(fn, block_size))
        return -1;
    int64_t n = w->count;
    char **order = tg_malloc((size_t)n * sizeof *order);
    tg_pyrandom *r = order ? tg_pyrandom_new(seed) : NULL;
    if (!r) {
        free(order);
        tg_error(fn, "out of memory for the order of %lld words",
                 (long long)n);
        return -1;
    }
    /* random.seed(seed); random.shuffle(words), on a copy of the order */
    memcpy(order, w->word, (size_t)n * sizeof *order);
    tg_pyrandom_shuffle(r, order, (size_t)n, sizeof *order);
    tg_pyrandom_free(r);
    int64_t n1 = (int64_t)(0.8 * (double)n); // int(0.8 * len(words))
    int64_t n2 = (int64_t)(0.9 * (double)n);
    int rc = -1;
    if (build(fn, w, order, n1, block_size, train) == 0 &&
        build(fn, w, order + n1, n2 - n1, block_size, dev) == 0 &&
        build(fn, w, order + n2, n - n2, block_size, test) == 0)
        rc = 0;
    free(order);
    if (rc != 0) {
        tg_dataset_free(train);
        tg_dataset_free(dev);
        tg_dataset_free(test);
    }
    return rc;
}
