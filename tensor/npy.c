/*
 * tensor/npy.c - NumPy's .npy file format: tg_save_npy, tg_load_npy and
 * tg_npy_parse.
 *
 * A .npy file is a 6-byte magic "\x93NUMPY", a version (major, minor), the
 * header length (u16 little-endian in version 1.0, u32 in 2.0 and 3.0), an
 * ASCII dict such as
 *
 *     {'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }
 *
 * padded with spaces and a final '\n' so that the data starts at a multiple
 * of 64 bytes, then the elements in C order. See SEMANTICS.md section 6.
 *
 * Writing produces exactly the bytes numpy.save writes for the same array.
 * Reading parses the dict (keys in any order, any padding) and accepts only
 * what maps onto a tapegrad tensor: '<f4', '<f8' and '<i8', C order, at most
 * TG_MAX_DIMS dims. Everything else is rejected with a message naming the
 * file, the value found and the rule. The parser reads only inside the
 * bytes it is given, whatever they contain (it is fuzzed).
 *
 * This file is not a general NumPy reader: no .npz archives, no structured
 * or object dtypes, no memory mapping, no Fortran-order arrays.
 */
#define _XOPEN_SOURCE 700 // realpath
#include "debug.h"
#include "internal.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#define NPY_MAGIC "\x93NUMPY"
#define NPY_MAGIC_LEN 6
#define NPY_ALIGN 64
/* numpy.save leaves room after the dict so that the first axis can grow in
 * place: 21 = len(str(8 * 2**64 - 1)) minus the digits of shape[0]. */
#define NPY_GROWTH_DIGITS 21
#define NPY_WHAT_WE_READ "'<f4' (float32), '<f8' (float64) and '<i8' (int64)"
#define NPY_HEADER_EXAMPLE \
    "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }"

/* ------------------------------------------------------------ byte order */

/* .npy data here is little-endian; on a big-endian host every element is
 * reversed on its way in and out. */
static bool host_is_little_endian(void)
{
    const uint16_t one = 1;
    return *(const unsigned char *)&one == 1;
}

static void swap_elements(unsigned char *p, size_t n, size_t itemsize)
{
    for (size_t i = 0; i < n; i++, p += itemsize)
        for (size_t a = 0, b = itemsize - 1; a < b; a++, b--) {
            unsigned char t = p[a];
            p[a] = p[b];
            p[b] = t;
        }
}

static const char *descr_of(tg_dtype dtype)
{
    switch (dtype) {
    case TG_FLOAT32: return "<f4";
    case TG_FLOAT64: return "<f8";
    case TG_INT64: return "<i8";
    }
    return "?";
}

/* ----------------------------------------------------------------- save */

/* The header exactly as numpy.lib.format writes it for version 1.0: the
 * dict with its keys sorted, the growth room, then spaces and '\n' up to the
 * next multiple of 64 (a full 64 if already aligned, as NumPy does). Returns
 * the header length, counting the 10-byte preamble. */
static size_t npy_header(const tg_tensor *x, char *out, size_t cap)
{
    /* The shape as Python's repr of a tuple: (), (3,), (2, 3). */
    char shape[TG_MAX_DIMS * 24 + 8];
    int k = snprintf(shape, sizeof shape, "(");
    for (int d = 0; d < x->ndim; d++)
        k += snprintf(shape + k, sizeof shape - (size_t)k, "%s%lld",
                      d ? ", " : "", (long long)x->shape[d]);
    snprintf(shape + k, sizeof shape - (size_t)k, "%s)",
             x->ndim == 1 ? "," : "");
    char dict[sizeof shape + 128];
    int n = snprintf(dict, sizeof dict,
                     "{'descr': '%s', 'fortran_order': False, "
                     "'shape': %s, }",
                     descr_of(x->dtype), shape);
    size_t len = (size_t)n;
    if (x->ndim > 0) {
        char first[32];
        int digits = snprintf(first, sizeof first, "%lld",
                              (long long)x->shape[0]);
        for (int i = digits; i < NPY_GROWTH_DIGITS; i++)
            dict[len++] = ' ';
    }
    /* hlen counts the final '\n'; pad so 10 + hlen + pad is aligned. */
    size_t hlen = len + 1;
    size_t pad = NPY_ALIGN - (10 + hlen) % NPY_ALIGN;
    size_t total = 10 + hlen + pad;
    if (total > cap)
        return 0;
    memcpy(out, NPY_MAGIC, NPY_MAGIC_LEN);
    out[6] = 1; // version 1.0
    out[7] = 0;
    out[8] = (char)((hlen + pad) & 0xff);
    out[9] = (char)((hlen + pad) >> 8);
    memcpy(out + 10, dict, len);
    memset(out + 10 + len, ' ', pad);
    out[total - 1] = '\n';
    return total;
}

/* The bytes of x as a .npy file, into fd: the header, then the elements
 * in C order and little-endian. 0, or -1 with errno set. */
static int npy_write_fd(int fd, const char *path, const tg_tensor *x,
                        const char *header, size_t hbytes)
{
    tg_tensor *c = tg_contiguous_as(x, x->dtype);
    if (!c) {
        errno = ENOMEM;
        return -1;
    }
    size_t itemsize = tg_dtype_size(c->dtype);
    size_t n = (size_t)c->numel;
    const unsigned char *data = (const unsigned char *)tg_base_ptr(c);
    int rc = tg_io_write(fd, header, hbytes, path);
    if (rc == 0 && host_is_little_endian()) {
        rc = tg_io_write(fd, data, n * itemsize, path);
    } else if (rc == 0) {
        /* Swap a block at a time into a scratch buffer. */
        unsigned char block[4096];
        size_t per = sizeof block / itemsize;
        for (size_t i = 0; rc == 0 && i < n; i += per) {
            size_t k = n - i < per ? n - i : per;
            memcpy(block, data + i * itemsize, k * itemsize);
            swap_elements(block, k, itemsize);
            rc = tg_io_write(fd, block, k * itemsize, path);
        }
    }
    int err = errno;
    tg_release(c);
    errno = err;
    return rc;
}

int tg_npy_write_new(const char *fn, const char *path, const char *shown,
                     const tg_tensor *x)
{
    char header[512];
    size_t hbytes = npy_header(x, header, sizeof header);
    char shown_buf[TG_PATH_SHOWN_MAX + 1];
    shown = tg_path_shown(shown, shown_buf);
    int fd;
    if (tg_io_create(path, &fd) < 0) {
        int err = errno;
        if (err == EEXIST)
            return -2; // the caller picks another name
        tg_error(fn,
                 "cannot open '%s' for writing: %s\n"
                 "  rule: the folder must exist and be writable",
                 shown, strerror(err));
        return -1;
    }
    /* Written, on the disk (fsync), closed: only then is it a file. */
    int rc = npy_write_fd(fd, path, x, header, hbytes);
    if (rc == 0)
        rc = tg_io_fsync(fd, path);
    int err = errno;
    if (tg_io_close(fd, path) < 0 && rc == 0) {
        rc = -1;
        err = errno;
    }
    if (rc < 0) {
        unlink(path); // ours: created above with O_EXCL
        if (err == ENOMEM)
            tg_error(fn, "out of memory writing '%s'", shown);
        else
            tg_error(fn,
                     "cannot write '%s': %s\n"
                     "  rule: the whole file must be written (is the disk "
                     "full?)",
                     shown, strerror(err));
        return -1;
    }
    return 0;
}

/* What path names, as a file to replace: itself, or the file a symbolic
 * link points to (so that the link stays a link). A path that exists must
 * be a regular file: a rename over a device, a FIFO or a folder would
 * remove it. *mode is the existing file's permissions, or -1 when there is
 * none. malloc'd; NULL with an error. */
static char *replace_target(const char *fn, const char *path, int *mode)
{
    *mode = -1;
    char shown[TG_PATH_SHOWN_MAX + 1];
    struct stat st;
    bool link = lstat(path, &st) == 0 && S_ISLNK(st.st_mode);
    if (stat(path, &st) != 0) {
        if (link) { // dangling
            tg_error(fn,
                     "'%s' is a symbolic link to nothing\n"
                     "  rule: the path must be a regular file, a link to "
                     "one, or not exist\n"
                     "  hint: remove the link or save to another path",
                     tg_path_shown(path, shown));
            return NULL;
        }
    } else if (!S_ISREG(st.st_mode)) {
        tg_error(fn,
                 "'%s' exists and is not a regular file but %s\n"
                 "  rule: saving writes a new file and renames it over the "
                 "old one, which would remove it\n"
                 "  hint: save to the name of a file",
                 tg_path_shown(path, shown), tg_file_kind(st.st_mode));
        return NULL;
    } else {
        *mode = (int)(st.st_mode & 07777);
    }
    if (!link || *mode < 0) { // a new file is written as named
        size_t n = strlen(path) + 1;
        char *copy = tg_malloc(n);
        if (!copy)
            tg_error(fn, "out of memory for a file name");
        else
            memcpy(copy, path, n);
        return copy;
    }
    char *resolved = realpath(path, NULL);
    if (!resolved) {
        int err = errno;
        tg_error(fn, "cannot follow the link '%s': %s",
                 tg_path_shown(path, shown), strerror(err));
        return NULL;
    }
    return resolved; // malloc'd by the C library: free() either way
}

int tg_save_npy(const char *path, const tg_tensor *x)
{
    static const char *fn = "tg_save_npy";
    if (!x)
        return -1;
    tg_check_alive("tg_save_npy", x);
    if (!path) {
        tg_error(fn, "path is NULL\n"
                     "  rule: pass the name of the file to write");
        return -1;
    }
    /* A new file beside the target, renamed over it once complete: the old
     * file stays whole until the new one is. */
    int mode;
    char *target = replace_target(fn, path, &mode);
    if (!target)
        return -1;
    size_t size = strlen(target) + sizeof ".tg-tmp-" + TG_IO_SUFFIX_SIZE;
    char *tmp = tg_malloc(size);
    char *dir = tmp ? tg_io_parent(target) : NULL;
    if (!dir) {
        free(tmp);
        free(target);
        tg_error(fn, "out of memory for the temporary file's name");
        return -1;
    }
    char shown[TG_PATH_SHOWN_MAX + 1];
    int rc = -2;
    for (int attempt = 0; attempt < 16 && rc == -2; attempt++) {
        char suffix[TG_IO_SUFFIX_SIZE];
        tg_io_unique_suffix(suffix);
        snprintf(tmp, size, "%s.tg-tmp-%s", target, suffix);
        rc = tg_npy_write_new(fn, tmp, path, x);
    }
    if (rc == -2) {
        tg_error(fn, "cannot find a free temporary name beside '%s'",
                 tg_path_shown(path, shown));
        rc = -1;
    }
    if (rc < 0) {
        // reported
    } else if (mode >= 0 && chmod(tmp, (mode_t)mode) != 0) {
        int err = errno;
        unlink(tmp);
        tg_error(fn, "cannot give the new '%s' the old one's permissions: %s",
                 tg_path_shown(path, shown), strerror(err));
        rc = -1;
    } else if (tg_io_rename(tmp, target) != 0) {
        int err = errno;
        unlink(tmp);
        tg_error(fn,
                 "cannot rename the new file into place as '%s': %s\n"
                 "  rule: the new file is written beside the old one and "
                 "renamed over it; the old file is unchanged",
                 tg_path_shown(path, shown), strerror(err));
        rc = -1;
    } else if (tg_io_sync_dir(dir) != 0) {
        int err = errno;
        tg_error(fn,
                 "wrote '%s', but cannot flush its folder to the disk: %s\n"
                 "  rule: a rename is durable once its folder is flushed",
                 tg_path_shown(path, shown), strerror(err));
        rc = -1;
    }
    free(dir);
    free(tmp);
    free(target);
    return rc;
}

/* ---------------------------------------------------------------- parse */

typedef struct npy_parser {
    const char *fn;          // the public function that reports errors
    const char *name;        // file name for messages
    const unsigned char *p;  // cursor in the header dict
    const unsigned char *begin, *end; // the header dict, [begin, end)
} npy_parser;

#if defined(__GNUC__)
__attribute__((format(printf, 2, 3)))
#endif
static void npy_error(const npy_parser *ps, const char *fmt, ...)
{
    char msg[1536];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    char shown[TG_PATH_SHOWN_MAX + 1];
    tg_error(ps->fn, "cannot load '%s': %s", tg_path_shown(ps->name, shown),
             msg);
}

/* Shows byte c readably: 'a', or '\x93' for anything not printable. */
static const char *show_byte(unsigned char c, char buf[8])
{
    if (c >= 0x20 && c < 0x7f && c != '\\' && c != '\'')
        snprintf(buf, 8, "'%c'", c);
    else
        snprintf(buf, 8, "'\\x%02x'", c);
    return buf;
}

/* Like show_byte, or "the end of the header" at the end. */
static const char *show_found(const npy_parser *ps, char buf[32])
{
    if (ps->p >= ps->end) {
        snprintf(buf, 32, "the end of the header");
        return buf;
    }
    char b[8];
    snprintf(buf, 32, "%s", show_byte(*ps->p, b));
    return buf;
}

/* A syntax error inside the dict. `expected` says what should have come. */
static void syntax_error(const npy_parser *ps, const char *expected)
{
    char found[32];
    npy_error(ps,
              "the header is not a valid dict: expected %s at byte %ld "
              "of the header, found %s\n"
              "  rule: the header is a Python dict literal like "
              NPY_HEADER_EXAMPLE "\n"
              "  hint: the file is damaged, or the header length field "
              "is wrong",
              expected, (long)(ps->p - ps->begin), show_found(ps, found));
}

/* Python's whitespace inside brackets, and the padding after the dict. */
static void skip_space(npy_parser *ps)
{
    while (ps->p < ps->end && (*ps->p == ' ' || *ps->p == '\t' ||
                               *ps->p == '\n' || *ps->p == '\r' ||
                               *ps->p == '\f'))
        ps->p++;
}

static bool accept(npy_parser *ps, char c)
{
    skip_space(ps);
    if (ps->p < ps->end && *ps->p == (unsigned char)c) {
        ps->p++;
        return true;
    }
    return false;
}

static bool expect(npy_parser *ps, char c, const char *what)
{
    if (accept(ps, c))
        return true;
    syntax_error(ps, what);
    return false;
}

/* A quoted string without escapes ('...' or "..."), copied into out. Only
 * printable ASCII is accepted, so it can be shown in messages as is. */
#define NPY_STR_MAX 64
static bool parse_string(npy_parser *ps, char out[NPY_STR_MAX],
                         const char *what)
{
    skip_space(ps);
    if (ps->p >= ps->end || (*ps->p != '\'' && *ps->p != '"')) {
        syntax_error(ps, what);
        return false;
    }
    unsigned char quote = *ps->p++;
    size_t n = 0;
    while (ps->p < ps->end && *ps->p != quote) {
        if (*ps->p < 0x20 || *ps->p >= 0x7f || *ps->p == '\\' ||
            n + 1 >= NPY_STR_MAX) {
            syntax_error(ps, "a short string of printable characters");
            return false;
        }
        out[n++] = (char)*ps->p++;
    }
    if (ps->p >= ps->end) {
        syntax_error(ps, "the closing quote of a string");
        return false;
    }
    ps->p++;
    out[n] = '\0';
    return true;
}

static bool parse_bool(npy_parser *ps, bool *out)
{
    skip_space(ps);
    size_t left = (size_t)(ps->end - ps->p);
    if (left >= 4 && memcmp(ps->p, "True", 4) == 0) {
        ps->p += 4;
        *out = true;
        return true;
    }
    if (left >= 5 && memcmp(ps->p, "False", 5) == 0) {
        ps->p += 5;
        *out = false;
        return true;
    }
    syntax_error(ps, "True or False for 'fortran_order'");
    return false;
}

typedef struct npy_shape {
    int ndim;                     // sizes found (may exceed TG_MAX_DIMS)
    int64_t dims[TG_MAX_DIMS];    // (min(ndim, TG_MAX_DIMS),)
    int bad_dim;                  // first size < 0 or > INT64_MAX, or -1
    bool bad_negative;            // which of the two bad_dim is
    const unsigned char *text;    // the tuple as written, for messages
    int text_len;
} npy_shape;

/* Shows the shape as written (at most 80 characters). */
static int shape_text_len(const npy_shape *s)
{
    return s->text_len < 80 ? s->text_len : 80;
}

/* One size: an optional '-' and decimal digits. A size that is negative or
 * does not fit in int64 is noted in s and reported once the whole tuple is
 * read. */
static bool parse_size(npy_parser *ps, npy_shape *s, int64_t *out)
{
    skip_space(ps);
    bool negative = false;
    if (ps->p < ps->end && *ps->p == '-') {
        negative = true;
        ps->p++;
    }
    if (ps->p >= ps->end || *ps->p < '0' || *ps->p > '9') {
        syntax_error(ps, "a size (a non-negative integer) in 'shape'");
        return false;
    }
    /* Python refuses 007 ("leading zeros in decimal integer literals are
     * not permitted"), and so does NumPy's header reader. */
    if (*ps->p == '0' && ps->p + 1 < ps->end && ps->p[1] >= '0' &&
        ps->p[1] <= '9') {
        syntax_error(ps, "a size without leading zeros in 'shape'");
        return false;
    }
    uint64_t v = 0;
    bool too_big = false;
    while (ps->p < ps->end && *ps->p >= '0' && *ps->p <= '9') {
        unsigned digit = (unsigned)(*ps->p++ - '0');
        if (v > (UINT64_MAX - digit) / 10)
            too_big = true;
        else
            v = v * 10 + digit;
    }
    too_big = too_big || v > (uint64_t)INT64_MAX;
    *out = too_big ? 0 : (int64_t)v;
    if (s->bad_dim < 0 && (too_big || (negative && v != 0))) {
        s->bad_dim = s->ndim;
        s->bad_negative = negative;
    }
    return true;
}

/* A tuple of sizes as Python writes it: (), (3,), (2, 3), with an optional
 * trailing comma after the last of several. */
static bool parse_shape(npy_parser *ps, npy_shape *s)
{
    s->ndim = 0;
    s->bad_dim = -1;
    skip_space(ps);
    s->text = ps->p;
    if (!expect(ps, '(', "'(' to open the tuple of 'shape'"))
        return false;
    if (!accept(ps, ')')) {
        for (;;) {
            int64_t size;
            if (!parse_size(ps, s, &size))
                return false;
            if (s->ndim < TG_MAX_DIMS)
                s->dims[s->ndim] = size;
            if (s->ndim < INT32_MAX)
                s->ndim++;
            if (accept(ps, ',')) {
                if (accept(ps, ')'))
                    break;
                continue;
            }
            /* "(3)" is the integer 3 in Python, not a tuple. */
            if (s->ndim == 1) {
                syntax_error(ps, "',' after the only size (Python writes "
                                 "a 1-d shape as (3,))");
                return false;
            }
            if (!expect(ps, ')', "',' or ')' in the tuple of 'shape'"))
                return false;
            break;
        }
    }
    s->text_len = (int)(ps->p - s->text);
    return true;
}

/* The three entries of the header dict. */
typedef struct npy_header_info {
    bool has_descr, has_fortran, has_shape;
    char descr[NPY_STR_MAX];
    bool fortran_order;
    npy_shape shape;
} npy_header_info;

static bool parse_dict(npy_parser *ps, npy_header_info *h)
{
    memset(h, 0, sizeof *h);
    if (!expect(ps, '{', "'{' (the header starts with a dict)"))
        return false;
    while (!accept(ps, '}')) {
        char key[NPY_STR_MAX];
        if (!parse_string(ps, key, "a quoted key or '}'"))
            return false;
        bool *seen = strcmp(key, "descr") == 0           ? &h->has_descr
                     : strcmp(key, "fortran_order") == 0 ? &h->has_fortran
                     : strcmp(key, "shape") == 0         ? &h->has_shape
                                                         : NULL;
        if (!seen) {
            npy_error(ps,
                      "the header has an unexpected key '%s'\n"
                      "  rule: the header dict has exactly the keys "
                      "'descr', 'fortran_order' and 'shape'",
                      key);
            return false;
        }
        if (*seen) {
            npy_error(ps,
                      "the header has the key '%s' twice\n"
                      "  rule: each of 'descr', 'fortran_order' and "
                      "'shape' appears once",
                      key);
            return false;
        }
        *seen = true;
        if (!expect(ps, ':', "':' after a key"))
            return false;
        if (seen == &h->has_descr) {
            skip_space(ps);
            if (ps->p < ps->end && *ps->p == '[') {
                npy_error(ps,
                          "the array has a structured dtype (its 'descr' "
                          "is a list of fields)\n"
                          "  rule: tapegrad reads " NPY_WHAT_WE_READ
                          " only\n"
                          "  hint: save each field as its own array");
                return false;
            }
            if (!parse_string(ps, h->descr, "a quoted dtype for 'descr'"))
                return false;
        } else if (seen == &h->has_fortran) {
            if (!parse_bool(ps, &h->fortran_order))
                return false;
        } else if (!parse_shape(ps, &h->shape)) {
            return false;
        }
        /* Entries are separated by ','; one may follow the last. */
        if (!accept(ps, ',')) {
            if (!expect(ps, '}', "',' or '}' after a value"))
                return false;
            break;
        }
    }
    skip_space(ps);
    if (ps->p < ps->end) {
        char found[32];
        npy_error(ps,
                  "the header has %s after the dict, at byte %ld of %ld\n"
                  "  rule: only spaces and a final '\\n' follow the dict\n"
                  "  hint: the header length field is probably wrong",
                  show_found(ps, found), (long)(ps->p - ps->begin),
                  (long)(ps->end - ps->begin));
        return false;
    }
    const char *missing = !h->has_descr     ? "descr"
                          : !h->has_fortran ? "fortran_order"
                          : !h->has_shape   ? "shape"
                                            : NULL;
    if (missing) {
        npy_error(ps,
                  "the header has no key '%s'\n"
                  "  rule: the header dict has exactly the keys 'descr', "
                  "'fortran_order' and 'shape'\n"
                  "  hint: write the file with numpy.save",
                  missing);
        return false;
    }
    return true;
}

/* Maps the descr onto a dtype, or explains why it cannot. */
static bool descr_dtype(const npy_parser *ps, const char *descr,
                        tg_dtype *out)
{
    if (strcmp(descr, "<f4") == 0) {
        *out = TG_FLOAT32;
        return true;
    }
    if (strcmp(descr, "<f8") == 0) {
        *out = TG_FLOAT64;
        return true;
    }
    if (strcmp(descr, "<i8") == 0) {
        *out = TG_INT64;
        return true;
    }
    if (descr[0] == '>' && (strcmp(descr + 1, "f4") == 0 ||
                            strcmp(descr + 1, "f8") == 0 ||
                            strcmp(descr + 1, "i8") == 0)) {
        npy_error(ps,
                  "the dtype '%s' is big-endian\n"
                  "  rule: tapegrad reads little-endian " NPY_WHAT_WE_READ
                  " only\n"
                  "  hint: in NumPy, np.save(path, a.astype('<%s'))",
                  descr, descr + 1);
        return false;
    }
    const char *hint =
        descr[1] == 'f' || descr[1] == 'c'
            ? "np.save(path, a.astype(np.float32)) or np.float64"
        : descr[1] == 'i' || descr[1] == 'u' || descr[1] == 'b'
            ? "np.save(path, a.astype(np.int64))"
            : "convert to np.float32, np.float64 or np.int64 before "
              "saving";
    npy_error(ps,
              "the dtype '%s' is not supported\n"
              "  rule: tapegrad reads " NPY_WHAT_WE_READ " only\n"
              "  hint: in NumPy, %s",
              descr, hint);
    return false;
}

/* What the header says of the array that follows it. */
typedef struct npy_layout {
    tg_dtype dtype;
    int ndim;
    int64_t dims[TG_MAX_DIMS]; // (ndim,)
    size_t data_at;            // the first byte of the data
    uint64_t data_bytes;       // numel * itemsize
} npy_layout;

/* Headers longer than this are refused when reading a file (NumPy writes
 * them under 200 bytes; np.load refuses more than 10,000 by default). */
#define NPY_HEADER_MAX 65536

/* Reads and checks the preamble and the header dict of a .npy file of
 * nbytes bytes of which the first `have` are in b (have >= min(nbytes,
 * NPY_HEADER_MAX + 12)), including that the data is exactly what the
 * shape needs. false with an error naming the file. */
static bool npy_parse_header(const char *fn, const unsigned char *b,
                             size_t have, uint64_t nbytes, const char *name,
                             npy_layout *out)
{
    npy_parser ps = {fn, name ? name : "(memory)", NULL, NULL, NULL};

    /* Magic. A file cut inside it is reported as truncated below. */
    if (nbytes == 0) {
        npy_error(&ps, "the file is empty\n"
                       "  rule: a .npy file starts with the 6 bytes "
                       "\"\\x93NUMPY\"");
        return false;
    }
    size_t magic = nbytes < NPY_MAGIC_LEN ? (size_t)nbytes : NPY_MAGIC_LEN;
    if (memcmp(b, NPY_MAGIC, magic) != 0) {
        char found[NPY_MAGIC_LEN * 6 + 1] = "";
        size_t k = 0;
        for (size_t i = 0; i < magic; i++) {
            char one[8];
            show_byte(b[i], one);
            /* 'a' -> a, '\x93' -> \x93: drop the quotes. */
            size_t len = strlen(one) - 2;
            memcpy(found + k, one + 1, len);
            k += len;
        }
        found[k] = '\0';
        npy_error(&ps,
                  "it does not start with the .npy magic but with \"%s\"\n"
                  "  rule: a .npy file starts with the 6 bytes "
                  "\"\\x93NUMPY\"\n"
                  "  hint: write it with numpy.save (np.savez makes a .npz "
                  "archive, np.savetxt a text file)",
                  found);
        return false;
    }
    if (nbytes < 8) {
        npy_error(&ps,
                  "the file ends after %llu bytes, inside the magic and "
                  "version\n"
                  "  rule: the header needs at least 10 bytes before the "
                  "dict",
                  (unsigned long long)nbytes);
        return false;
    }

    /* Version and header length. */
    unsigned major = b[6], minor = b[7];
    if (!((major == 1 || major == 2 || major == 3) && minor == 0)) {
        npy_error(&ps,
                  "its format version %u.%u is not supported\n"
                  "  rule: tapegrad reads .npy versions 1.0, 2.0 and 3.0\n"
                  "  hint: np.save writes version 1.0 whenever the header "
                  "fits",
                  major, minor);
        return false;
    }
    size_t preamble = major == 1 ? 10 : 12;
    if (nbytes < preamble) {
        npy_error(&ps,
                  "the file ends after %llu bytes, inside the header "
                  "length\n"
                  "  rule: version %u.0 has a %zu-byte preamble before the "
                  "dict",
                  (unsigned long long)nbytes, major, preamble);
        return false;
    }
    uint64_t hlen = (uint64_t)b[8] | (uint64_t)b[9] << 8;
    if (major > 1)
        hlen |= (uint64_t)b[10] << 16 | (uint64_t)b[11] << 24;
    if (hlen > nbytes - preamble) {
        npy_error(&ps,
                  "the header length field says %llu bytes but only %llu "
                  "bytes follow it\n"
                  "  rule: the header must fit in the file\n"
                  "  hint: the file was cut short, or the length field "
                  "is wrong",
                  (unsigned long long)hlen,
                  (unsigned long long)(nbytes - preamble));
        return false;
    }
    if (hlen > have - preamble) {
        npy_error(&ps,
                  "the header is %llu bytes long\n"
                  "  rule: tapegrad reads headers of at most %d bytes "
                  "(numpy.save writes under 200)",
                  (unsigned long long)hlen, NPY_HEADER_MAX);
        return false;
    }

    /* The dict. */
    npy_header_info h;
    ps.begin = ps.p = b + preamble;
    ps.end = ps.begin + hlen;
    if (!parse_dict(&ps, &h))
        return false;
    tg_dtype dtype;
    if (!descr_dtype(&ps, h.descr, &dtype))
        return false;
    npy_shape *s = &h.shape;
    if (h.fortran_order) {
        npy_error(&ps,
                  "the array is stored in Fortran order (fortran_order: "
                  "True)\n"
                  "  rule: tapegrad reads C-order arrays only\n"
                  "  hint: in NumPy, np.save(path, np.ascontiguousarray(a))");
        return false;
    }
    if (s->ndim > TG_MAX_DIMS) {
        npy_error(&ps,
                  "the shape %.*s has %d dims\n"
                  "  rule: a tensor has at most %d dims",
                  shape_text_len(s), (const char *)s->text, s->ndim,
                  TG_MAX_DIMS);
        return false;
    }
    if (s->bad_dim >= 0) {
        npy_error(&ps,
                  "the shape %.*s has a size at dim %d that %s\n"
                  "  rule: sizes are integers in [0, 2^63)",
                  shape_text_len(s), (const char *)s->text, s->bad_dim,
                  s->bad_negative ? "is negative" : "overflows int64");
        return false;
    }
    /* The product of the sizes, with zeros counted as 1 so that the
     * strides stay in range too. */
    int64_t numel = 1, bound = 1;
    for (int d = 0; d < s->ndim; d++) {
        int64_t size = s->dims[d] > 0 ? s->dims[d] : 1;
        if (bound > TG_MAX_NUMEL / size) {
            npy_error(&ps,
                      "the shape %.*s has too many elements\n"
                      "  rule: a tensor has fewer than 2^59 elements "
                      "(zero sizes counted as 1)",
                      shape_text_len(s), (const char *)s->text);
            return false;
        }
        bound *= size;
        numel *= s->dims[d];
    }

    /* The data: exactly numel elements after the header. */
    size_t itemsize = tg_dtype_size(dtype);
    uint64_t want = (uint64_t)numel * itemsize;
    size_t data_at = preamble + (size_t)hlen;
    uint64_t got = nbytes - data_at;
    if (got != want) {
        npy_error(&ps,
                  "the data is %llu bytes, but shape %.*s of '%s' needs "
                  "%llu\n"
                  "  rule: the data is exactly numel * itemsize = %lld * "
                  "%zu bytes\n"
                  "  hint: %s",
                  (unsigned long long)got, shape_text_len(s),
                  (const char *)s->text, h.descr, (unsigned long long)want,
                  (long long)numel, itemsize,
                  got < want ? "the file is truncated"
                             : "the file has extra bytes after the data "
                               "(two arrays in one file?)");
        return false;
    }
    out->dtype = dtype;
    out->ndim = s->ndim;
    memcpy(out->dims, s->dims, sizeof s->dims);
    out->data_at = data_at;
    out->data_bytes = want;
    return true;
}

static tg_tensor *npy_parse(const char *fn, const void *bytes,
                            size_t nbytes, const char *name)
{
    if (!bytes && nbytes > 0) {
        tg_error(fn, "bytes is NULL but nbytes is %zu\n"
                     "  rule: pass the address of nbytes bytes",
                 nbytes);
        return NULL;
    }
    npy_layout L;
    if (!npy_parse_header(fn, bytes, nbytes, nbytes, name, &L))
        return NULL;
    tg_tensor *t = tg_alloc(L.dims, L.ndim, L.dtype);
    if (!t)
        return NULL;
    if (L.data_bytes > 0) {
        memcpy(t->storage->data, (const unsigned char *)bytes + L.data_at,
               (size_t)L.data_bytes);
        if (!host_is_little_endian())
            swap_elements(t->storage->data, (size_t)t->numel,
                          tg_dtype_size(L.dtype));
    }
    return t;
}

tg_tensor *tg_npy_parse(const void *bytes, size_t nbytes, const char *name)
{
    return npy_parse("tg_npy_parse", bytes, nbytes, name);
}

/* ----------------------------------------------------------------- load */

/* Reads exactly n bytes at the file's current position: 0, or -1 with
 * errno set (EIO when the file ends first). */
static int read_exactly(int fd, void *buf, size_t n)
{
    unsigned char *p = buf;
    while (n > 0) {
        size_t chunk = n < ((size_t)1 << 30) ? n : (size_t)1 << 30;
        ssize_t k = read(fd, p, chunk);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0) {
            if (k == 0)
                errno = EIO; // shorter than fstat said: it is changing
            return -1;
        }
        p += k;
        n -= (size_t)k;
    }
    return 0;
}

/* The file's header is read and checked first; then exactly the bytes it
 * announces go straight into the new tensor, so a file whose size
 * disagrees is refused before anything is allocated for it, and the peak
 * memory is the tensor plus the header. */
tg_tensor *tg_load_npy(const char *path)
{
    static const char *fn = "tg_load_npy";
    if (!path) {
        tg_error(fn, "path is NULL\n"
                     "  rule: pass the name of a .npy file");
        return NULL;
    }
    char shown[TG_PATH_SHOWN_MAX + 1];
    int fd;
    unsigned mode;
    uint64_t nbytes;
    int opened = tg_io_open_regular(path, &fd, &mode, &nbytes);
    if (opened == -1) {
        int err = errno;
        tg_error(fn,
                 "cannot open '%s': %s\n"
                 "  rule: the file must exist and be readable",
                 tg_path_shown(path, shown), strerror(err));
        return NULL;
    }
    if (opened == -2) {
        tg_error(fn,
                 "cannot read '%s': it is %s, not a regular file\n"
                 "  rule: a .npy file is a regular file (a link to one is "
                 "followed)\n"
                 "  hint: is the path right? devices, FIFOs and folders are "
                 "refused so that a load can neither block nor read "
                 "forever",
                 tg_path_shown(path, shown), tg_file_kind(mode));
        return NULL;
    }
    size_t have = nbytes < NPY_HEADER_MAX + 12 ? (size_t)nbytes
                                               : NPY_HEADER_MAX + 12;
    unsigned char *head = tg_malloc(have > 0 ? have : 1);
    const char *why = NULL;
    tg_tensor *t = NULL;
    npy_layout L;
    if (!head)
        why = "out of memory";
    else if (read_exactly(fd, head, have) != 0)
        why = strerror(errno);
    else if (npy_parse_header(fn, head, have, nbytes, path, &L) &&
             (t = tg_alloc(L.dims, L.ndim, L.dtype)) != NULL) {
        /* The header's read may have taken the first data bytes too. */
        unsigned char *data = t->storage->data;
        size_t got = have - L.data_at;
        if (got > L.data_bytes)
            got = (size_t)L.data_bytes;
        memcpy(data, head + L.data_at, got);
        if (read_exactly(fd, data + got, (size_t)L.data_bytes - got) != 0) {
            why = strerror(errno);
            tg_release(t);
            t = NULL;
        } else if (!host_is_little_endian()) {
            swap_elements(data, (size_t)t->numel, tg_dtype_size(L.dtype));
        }
    }
    close(fd);
    free(head);
    if (why)
        tg_error(fn,
                 "cannot read '%s': %s\n"
                 "  rule: the whole file must be readable into memory",
                 tg_path_shown(path, shown), why);
    return t;
}
