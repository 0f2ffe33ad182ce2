/*
 * tests/tensor/test_npy.c - .npy files: files written by NumPy load with the
 * right values, tapegrad writes the same bytes as NumPy, every dtype and
 * layout round-trips bit for bit, and each kind of bad file is rejected with
 * a message that names the file, the value found and the rule.
 *
 * The NumPy-written files come from scripts/reference/gen_npy.py. The bad
 * files that NumPy would never write are made here byte by byte.
 */
#include "../common.h"

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

/* ------------------------------------------------------------- helpers */

/* The whole file, malloc'd; its size in *n. */
static unsigned char *read_all(const char *path, size_t *n)
{
    FILE *f = fopen(path, "rb");
    cr_assert_not_null(f, "cannot open %s", path);
    size_t cap = 1 << 16;
    unsigned char *buf = malloc(cap);
    *n = fread(buf, 1, cap, f);
    cr_assert(feof(f), "%s is larger than the test expects", path);
    fclose(f);
    return buf;
}

/* A fresh temporary file name (the file exists, empty). */
static void temp_path(char path[64])
{
    snprintf(path, 64, "/tmp/tg_test_npy_XXXXXX");
    int fd = mkstemp(path);
    cr_assert_geq(fd, 0, "mkstemp failed");
    close(fd);
}

/* tg_save_npy(x) into a temporary file; returns the file's bytes. */
static unsigned char *save_bytes(const tg_tensor *x, size_t *n)
{
    char path[64];
    temp_path(path);
    cr_assert_eq(tg_save_npy(path, x), 0, "%s", tg_last_error());
    unsigned char *b = read_all(path, n);
    unlink(path);
    return b;
}

/* x saved and loaded back. New reference. */
static tg_tensor *round_trip(const tg_tensor *x)
{
    char path[64];
    temp_path(path);
    cr_assert_eq(tg_save_npy(path, x), 0, "%s", tg_last_error());
    tg_tensor *y = tg_load_npy(path);
    cr_assert_not_null(y, "%s", tg_last_error());
    unlink(path);
    return y;
}

static const void *raw(const tg_tensor *t)
{
    switch (t->dtype) {
    case TG_FLOAT32: return tg_data_f32(t);
    case TG_FLOAT64: return tg_data_f64(t);
    case TG_INT64: return tg_data_i64(t);
    }
    return NULL;
}

/* Same dtype, shape and element bits (so -0.0, NaN and the low bits of
 * int64 all count): exactness is what .npy promises. */
static void assert_same_bits(const tg_tensor *a, const tg_tensor *b)
{
    char s1[TG_SHAPE_STR_MAX], s2[TG_SHAPE_STR_MAX];
    cr_assert_eq(a->dtype, b->dtype);
    cr_assert(tg_same_shape(a, b), "shape %s, expected %s",
              tg_shape_str(a, s1), tg_shape_str(b, s2));
    tg_tensor *ca = tg_contiguous(a), *cb = tg_contiguous(b);
    size_t bytes = (size_t)a->numel * tg_dtype_size(a->dtype);
    cr_assert(bytes == 0 || memcmp(raw(ca), raw(cb), bytes) == 0,
              "element bits differ");
    tg_release(ca);
    tg_release(cb);
}

/* Asserts that file `name` in tests/reference has exactly bytes b[0..n). */
static void assert_same_as_file(const char *name, const unsigned char *b,
                                size_t n)
{
    size_t m;
    unsigned char *want = read_all(tg_test_ref_path(name), &m);
    cr_assert_eq(n, m, "%s: tapegrad wrote %zu bytes, NumPy %zu", name, n,
                 m);
    for (size_t i = 0; i < n; i++)
        cr_assert_eq(b[i], want[i],
                     "%s: byte %zu is 0x%02x, NumPy wrote 0x%02x", name, i,
                     b[i], want[i]);
    free(want);
}

/* A .npy image as NumPy lays it out: preamble, dict, spaces and '\n' up to
 * a multiple of 64, then ndata bytes of data. Returns the size. */
static size_t craft(unsigned char *out, int major, int minor,
                    const char *dict, const void *data, size_t ndata)
{
    size_t pre = major >= 2 ? 12 : 10;
    size_t len = strlen(dict);
    size_t hlen = len + 1;
    hlen += (64 - (pre + hlen) % 64) % 64;
    memcpy(out, "\x93NUMPY", 6);
    out[6] = (unsigned char)major;
    out[7] = (unsigned char)minor;
    for (size_t k = 0; k < pre - 8; k++)
        out[8 + k] = (unsigned char)(hlen >> (8 * k));
    memcpy(out + pre, dict, len);
    memset(out + pre + len, ' ', hlen - len - 1);
    out[pre + hlen - 1] = '\n';
    if (ndata)
        memcpy(out + pre + hlen, data, ndata);
    return pre + hlen + ndata;
}

/* The six float32 values (i - 2.5) / 4 of npy_f32_2x3, and its dict. */
static const float quarters[6] = {-0.625f, -0.375f, -0.125f,
                                  0.125f,  0.375f,  0.625f};
#define DICT_F32_2X3 "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }"

/* Parses the crafted image from a buffer of exactly its size, so that the
 * sanitizer sees any read past the end. */
static tg_tensor *parse_exact(const unsigned char *b, size_t n,
                              const char *name)
{
    unsigned char *copy = malloc(n ? n : 1);
    memcpy(copy, b, n);
    tg_tensor *t = tg_npy_parse(copy, n, name);
    free(copy);
    return t;
}

/* Asserts that the image is rejected, with the file name, rule and each
 * given fragment in the message. */
#define assert_rejected(b, n, ...)                                          \
    do {                                                                    \
        tg_clear_error();                                                   \
        tg_tensor *t_ = parse_exact((b), (n), "case.npy");                  \
        cr_assert_null(t_, "a bad file was accepted");                      \
        tg_assert_error("tg_npy_parse: cannot load 'case.npy': ", "\n  rule: ", \
                        __VA_ARGS__);                                       \
    } while (0)

/* --------------------------------------------------- files from NumPy */

TG_TEST(npy, numpy_files_have_the_expected_values)
{
    tg_tensor *a = tg_test_load_ref("npy_f32_2x3");
    tg_tensor *want = tg_from_array(quarters, TG_SHAPE(2, 3), TG_FLOAT32);
    assert_same_bits(a, want);

    /* y[i] = i / 2 - 6 over (2, 3, 4). */
    tg_tensor *b = tg_test_load_ref("npy_f64_2x3x4");
    cr_assert_eq(b->dtype, TG_FLOAT64);
    cr_assert_eq(b->ndim, 3);
    cr_assert_eq(b->shape[2], 4);
    for (int i = 0; i < 24; i++)
        cr_assert_eq(tg_data_f64(b)[i], i / 2.0 - 6);

    tg_tensor *c = tg_test_load_ref("npy_i64_5");
    const int64_t ints[5] = {INT64_MIN, -1, 0, 1, INT64_MAX};
    cr_assert_eq(c->dtype, TG_INT64);
    cr_assert_eq(c->numel, 5);
    for (int i = 0; i < 5; i++)
        cr_assert_eq(tg_data_i64(c)[i], ints[i]);

    tg_tensor *d = tg_test_load_ref("npy_i64_8d");
    cr_assert_eq(d->ndim, 8);
    for (int k = 0; k < 8; k++)
        cr_assert_eq(d->shape[k], k % 2 ? 2 : 1);
    for (int i = 0; i < 16; i++)
        cr_assert_eq(tg_data_i64(d)[i], i);

    tg_tensor *e = tg_test_load_ref("npy_f32_100x1");
    cr_assert_eq(e->shape[0], 100);
    cr_assert_eq(e->shape[1], 1);
    for (int i = 0; i < 100; i++)
        cr_assert_eq(tg_data_f32(e)[i], (float)i);

    tg_tensor *f = tg_test_load_ref("npy_f32_0x3");
    cr_assert_eq(f->ndim, 2);
    cr_assert_eq(f->shape[0], 0);
    cr_assert_eq(f->shape[1], 3);
    cr_assert_eq(f->numel, 0);
    tg_tensor *g = tg_test_load_ref("npy_f64_0");
    cr_assert_eq(g->ndim, 1);
    cr_assert_eq(g->numel, 0);

    tg_tensor *h = tg_test_load_ref("npy_f64_scalar");
    cr_assert_eq(h->ndim, 0);
    cr_assert_eq(h->dtype, TG_FLOAT64);
    cr_assert_eq(tg_item(h), -2.5);

    tg_tensor *all[] = {a, want, b, c, d, e, f, g, h};
    for (size_t i = 0; i < sizeof all / sizeof *all; i++)
        tg_release(all[i]);
}

TG_TEST(npy, version_2_and_3_headers_load)
{
    /* The fixtures really are 2.0 and 3.0 (u32 header length). */
    size_t n;
    unsigned char *b2 = read_all(tg_test_ref_path("npy_f32_2x3_v2.npy"), &n);
    unsigned char *b3 = read_all(tg_test_ref_path("npy_i64_5_v3.npy"), &n);
    cr_assert_eq(b2[6], 2);
    cr_assert_eq(b3[6], 3);
    free(b2);
    free(b3);

    tg_tensor *a = tg_test_load_ref("npy_f32_2x3_v2");
    tg_tensor *want = tg_from_array(quarters, TG_SHAPE(2, 3), TG_FLOAT32);
    assert_same_bits(a, want);
    tg_tensor *c = tg_test_load_ref("npy_i64_5_v3");
    tg_tensor *c1 = tg_test_load_ref("npy_i64_5");
    assert_same_bits(c, c1);
    cr_assert_eq(tg_data_i64(c)[0], INT64_MIN);
    tg_release(a);
    tg_release(want);
    tg_release(c);
    tg_release(c1);
}

/* Loading a NumPy file and saving it again gives NumPy's bytes: header
 * text, growth room, padding and data. */
TG_TEST(npy, tapegrad_writes_numpys_bytes)
{
    const char *names[] = {"npy_f32_2x3",      "npy_f64_2x3x4",
                           "npy_i64_5",        "npy_i64_8d",
                           "npy_f32_100x1",    "npy_f32_0x3",
                           "npy_f64_0",        "npy_f64_scalar",
                           "npy_f64_rand_3x4", "npy_f32_rand_3x4"};
    for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
        tg_tensor *t = tg_test_load_ref(names[i]);
        size_t n;
        unsigned char *b = save_bytes(t, &n);
        char file[64];
        snprintf(file, sizeof file, "%s.npy", names[i]);
        assert_same_as_file(file, b, n);
        free(b);
        tg_release(t);
    }
}

TG_TEST(npy, non_contiguous_views_write_numpys_bytes)
{
    tg_tensor *r = tg_test_load_ref("npy_f32_rand_3x4");
    tg_tensor *t = tg_transpose(r, 0, 1);
    tg_tensor *cols = tg_slice(r, 1, 0, 4, 2);
    cr_assert_not(tg_is_contiguous(t));
    cr_assert_not(tg_is_contiguous(cols));
    size_t n;
    unsigned char *b = save_bytes(t, &n);
    assert_same_as_file("npy_f32_rand_3x4_t.npy", b, n);
    free(b);
    b = save_bytes(cols, &n);
    assert_same_as_file("npy_f32_rand_3x4_cols.npy", b, n);
    free(b);
    tg_release(r);
    tg_release(t);
    tg_release(cols);
}

TG_TEST(npy, header_is_numpys_layout)
{
    tg_tensor *x = tg_zeros(TG_SHAPE(2, 3), TG_FLOAT32);
    tg_tensor *v = tg_zeros(TG_SHAPE(3), TG_INT64);
    tg_tensor *s = tg_scalar(1, TG_FLOAT64);
    size_t n;

    unsigned char *b = save_bytes(x, &n);
    cr_assert_eq(n, 128 + 24);
    cr_assert_eq(memcmp(b, "\x93NUMPY\x01\x00", 8), 0);
    cr_assert_eq(b[8] | b[9] << 8, 118, "header length field");
    /* The dict, 20 spaces of growth room for shape[0] = 2 plus the padding,
     * then '\n' at byte 127 so that the data starts at 128. */
    cr_assert_eq(memcmp(b + 10, DICT_F32_2X3, strlen(DICT_F32_2X3)), 0);
    for (size_t i = 10 + strlen(DICT_F32_2X3); i < 127; i++)
        cr_assert_eq(b[i], ' ');
    cr_assert_eq(b[127], '\n');
    free(b);

    b = save_bytes(v, &n);
    const char *dv = "{'descr': '<i8', 'fortran_order': False, 'shape': (3,), }";
    cr_assert_eq(memcmp(b + 10, dv, strlen(dv)), 0);
    cr_assert_eq((10 + (b[8] | b[9] << 8)) % 64, 0);
    free(b);

    b = save_bytes(s, &n);
    const char *ds = "{'descr': '<f8', 'fortran_order': False, 'shape': (), }";
    cr_assert_eq(memcmp(b + 10, ds, strlen(ds)), 0);
    cr_assert_eq(n, 128 + 8);
    free(b);

    tg_release(x);
    tg_release(v);
    tg_release(s);
}

/* --------------------------------------------------------- round trips */

TG_TEST(npy, every_dtype_round_trips_bit_for_bit)
{
    const float f[] = {0.0f, -0.0f, 1.5f, -FLT_MAX, FLT_MIN / 8, INFINITY,
                       -INFINITY, NAN};
    const double d[] = {0.0, -0.0, 0.1, DBL_MAX, DBL_MIN / 1024, -INFINITY,
                        NAN, -1e-300};
    const int64_t i[] = {INT64_MIN, INT64_MAX, 0, -1, 1, 123456789012345};
    tg_tensor *ts[] = {
        tg_from_array(f, TG_SHAPE(2, 4), TG_FLOAT32),
        tg_from_array(d, TG_SHAPE(2, 2, 2), TG_FLOAT64),
        tg_from_array(i, TG_SHAPE(6), TG_INT64),
    };
    for (int k = 0; k < 3; k++) {
        tg_tensor *back = round_trip(ts[k]);
        assert_same_bits(back, ts[k]);
        tg_release(back);
        tg_release(ts[k]);
    }
}

TG_TEST(npy, non_contiguous_inputs_round_trip)
{
    tg_tensor *base = tg_arange(0, 24, 1, TG_FLOAT64);
    tg_tensor *x = tg_reshape(base, TG_SHAPE(2, 3, 4));
    tg_tensor *ones = tg_ones(TG_SHAPE(3, 1), TG_INT64);
    tg_tensor *views[] = {
        tg_transpose(x, 0, 2),                       // (4, 3, 2)
        tg_permute(x, TG_DIMS(1, 2, 0)),             // (3, 4, 2)
        tg_slice(x, 2, 1, 4, 2),                     // (2, 3, 2), offset 1
        tg_expand(ones, TG_SHAPE(2, 3, 5)),          // strides 0
        tg_select(x, 1, 2),                          // (2, 4), offset 8
    };
    for (size_t k = 0; k < sizeof views / sizeof *views; k++) {
        cr_assert_not_null(views[k], "%s", tg_last_error());
        tg_tensor *back = round_trip(views[k]);
        cr_assert(tg_is_contiguous(back));
        assert_same_bits(back, views[k]);
        tg_release(back);
        tg_release(views[k]);
    }
    tg_release(base);
    tg_release(x);
    tg_release(ones);
}

TG_TEST(npy, scalars_and_empty_shapes_round_trip)
{
    tg_tensor *ts[] = {
        tg_scalar(-3.25, TG_FLOAT32),
        tg_scalar(1e-310, TG_FLOAT64),
        tg_scalar(-42, TG_INT64),
        tg_zeros(TG_SHAPE(0), TG_FLOAT32),
        tg_zeros(TG_SHAPE(2, 0, 3), TG_FLOAT64),
        tg_zeros(TG_SHAPE(0, 0), TG_INT64),
    };
    for (size_t k = 0; k < sizeof ts / sizeof *ts; k++) {
        tg_tensor *back = round_trip(ts[k]);
        cr_assert_eq(back->ndim, ts[k]->ndim);
        assert_same_bits(back, ts[k]);
        tg_release(back);
        tg_release(ts[k]);
    }
}

/* ------------------------------------------------ headers NumPy accepts */

/* The dict may come in any key order, with either quotes, with or without
 * trailing commas, with other spacing, and padded to another alignment
 * (NumPy before 1.14 aligned to 16; NumPy 2 pads differently again). */
TG_TEST(npy, parser_accepts_every_valid_spelling)
{
    const char *dicts[] = {
        DICT_F32_2X3,
        "{'shape': (2, 3), 'fortran_order': False, 'descr': '<f4'}",
        "{\"descr\": \"<f4\", \"fortran_order\": False, \"shape\": (2,3)}",
        "{'fortran_order':False,'descr':'<f4','shape':(2,3,),}",
        "{ 'descr' : '<f4' ,\n 'fortran_order' : False ,\t'shape' : ( 2 , 3 ) , }",
    };
    unsigned char b[512];
    for (size_t k = 0; k < sizeof dicts / sizeof *dicts; k++) {
        for (int major = 1; major <= 3; major++) {
            size_t n = craft(b, major, 0, dicts[k], quarters, sizeof quarters);
            tg_tensor *t = parse_exact(b, n, "ok.npy");
            cr_assert_not_null(t, "dict %zu, version %d: %s", k, major,
                               tg_last_error());
            tg_tensor *want = tg_from_array(quarters, TG_SHAPE(2, 3),
                                            TG_FLOAT32);
            assert_same_bits(t, want);
            tg_release(t);
            tg_release(want);
        }
    }
    /* A header aligned to 16 only, ending in '\n' (old NumPy). */
    const char *old = "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }      \n";
    size_t len = strlen(old); // 10 + 70 = 80, a multiple of 16
    memcpy(b, "\x93NUMPY\x01\x00", 8);
    b[8] = (unsigned char)len;
    b[9] = 0;
    memcpy(b + 10, old, len);
    memcpy(b + 10 + len, quarters, sizeof quarters);
    tg_tensor *t = parse_exact(b, 10 + len + sizeof quarters, "old.npy");
    cr_assert_not_null(t, "%s", tg_last_error());
    cr_assert_eq(tg_data_f32(t)[5], 0.625f);
    tg_release(t);
}

/* ------------------------------------------------------------ rejections */

TG_TEST(npy, rejects_bad_magic)
{
    unsigned char b[512];
    size_t n = craft(b, 1, 0, DICT_F32_2X3, quarters, sizeof quarters);
    b[5] = 'X';
    assert_rejected(b, n, "does not start with the .npy magic",
                    "\\x93NUMPX", "hint:");
    const char *text = "1.0 2.0 3.0\n";
    assert_rejected((const unsigned char *)text, strlen(text),
                    "but with \"1.0 2", "np.savetxt");
    assert_rejected(b, 0, "the file is empty", "\\x93NUMPY");
    /* A zip archive (.npz) starts with "PK". */
    assert_rejected((const unsigned char *)"PK\x03\x04", 4, "PK\\x03\\x04");
}

TG_TEST(npy, rejects_unsupported_versions)
{
    unsigned char b[512];
    size_t n = craft(b, 4, 0, DICT_F32_2X3, quarters, sizeof quarters);
    assert_rejected(b, n, "format version 4.0 is not supported",
                    "versions 1.0, 2.0 and 3.0");
    n = craft(b, 1, 1, DICT_F32_2X3, quarters, sizeof quarters);
    assert_rejected(b, n, "format version 1.1");
    n = craft(b, 0, 0, DICT_F32_2X3, quarters, sizeof quarters);
    assert_rejected(b, n, "format version 0.0");
}

TG_TEST(npy, rejects_truncated_headers)
{
    unsigned char b[512];
    size_t n = craft(b, 1, 0, DICT_F32_2X3, quarters, sizeof quarters);
    assert_rejected(b, 3, "ends after 3 bytes, inside the magic");
    assert_rejected(b, 7, "ends after 7 bytes, inside the magic");
    assert_rejected(b, 9, "ends after 9 bytes, inside the header length");
    assert_rejected(b, 100, "header length field says 118 bytes but only "
                            "90 bytes follow it",
                    "hint:");
    n = craft(b, 2, 0, DICT_F32_2X3, quarters, sizeof quarters);
    assert_rejected(b, 11, "ends after 11 bytes", "12-byte preamble");
    (void)n;
}

TG_TEST(npy, rejects_a_header_length_that_lies)
{
    unsigned char b[512];
    size_t n = craft(b, 1, 0, DICT_F32_2X3, quarters, sizeof quarters);
    /* Too short: the dict is cut inside the shape. */
    b[8] = 40;
    assert_rejected(b, n, "not a valid dict", "at byte 40 of the header",
                    "the end of the header", "header length field");
    /* Too long: the data is read as header. */
    b[8] = 118 + 8;
    assert_rejected(b, n, "'\\x00' after the dict",
                    "header length field is probably wrong");
    /* v2 with a u32 length far beyond the file. */
    n = craft(b, 2, 0, DICT_F32_2X3, quarters, sizeof quarters);
    b[11] = 0x80;
    assert_rejected(b, n, "says 2147483764 bytes");
}

TG_TEST(npy, rejects_missing_unknown_and_repeated_keys)
{
    unsigned char b[512];
    size_t n = craft(b, 1, 0, "{'descr': '<f4', 'fortran_order': False, }",
                     quarters, 4);
    assert_rejected(b, n, "no key 'shape'", "exactly the keys");
    n = craft(b, 1, 0, "{'fortran_order': False, 'shape': (1,)}", quarters,
              4);
    assert_rejected(b, n, "no key 'descr'");
    n = craft(b, 1, 0, "{'descr': '<f4', 'shape': (1,)}", quarters, 4);
    assert_rejected(b, n, "no key 'fortran_order'");
    n = craft(b, 1, 0, "{}", quarters, 4);
    assert_rejected(b, n, "no key 'descr'");
    n = craft(b, 1, 0,
              "{'descr': '<f4', 'fortran_order': False, 'shape': (1,), "
              "'extra': 1}",
              quarters, 4);
    assert_rejected(b, n, "unexpected key 'extra'");
    n = craft(b, 1, 0,
              "{'descr': '<f4', 'descr': '<f8', 'fortran_order': False, "
              "'shape': (1,)}",
              quarters, 4);
    assert_rejected(b, n, "the key 'descr' twice");
}

TG_TEST(npy, rejects_big_endian)
{
    tg_tensor *t = tg_load_npy(tg_test_ref_path("npy_reject_big_endian.npy"));
    cr_assert_null(t);
    tg_assert_error("tg_load_npy: cannot load '",
                    "npy_reject_big_endian.npy': the dtype '>f4' is "
                    "big-endian",
                    "rule: tapegrad reads little-endian",
                    "hint: in NumPy, np.save(path, a.astype('<f4'))");
    unsigned char b[512];
    size_t n = craft(b, 1, 0,
                     "{'descr': '>f8', 'fortran_order': False, 'shape': ()}",
                     quarters, 8);
    assert_rejected(b, n, "'>f8' is big-endian");
}

TG_TEST(npy, rejects_fortran_order)
{
    tg_tensor *t = tg_load_npy(tg_test_ref_path("npy_reject_fortran.npy"));
    cr_assert_null(t);
    tg_assert_error("npy_reject_fortran.npy'", "Fortran order",
                    "rule: tapegrad reads C-order arrays only",
                    "np.ascontiguousarray");
}

TG_TEST(npy, rejects_unknown_dtypes)
{
    const char *files[][2] = {
        {"npy_reject_i4.npy", "'<i4'"},
        {"npy_reject_b1.npy", "'|b1'"},
        {"npy_reject_f2.npy", "'<f2'"},
        {"npy_reject_u1.npy", "'|u1'"},
    };
    for (size_t k = 0; k < sizeof files / sizeof *files; k++) {
        tg_clear_error();
        cr_assert_null(tg_load_npy(tg_test_ref_path(files[k][0])));
        tg_assert_error(files[k][0], files[k][1], "is not supported",
                        "rule: tapegrad reads '<f4' (float32), '<f8' "
                        "(float64) and '<i8' (int64) only",
                        "hint: in NumPy");
    }
    unsigned char b[512];
    size_t n = craft(b, 1, 0,
                     "{'descr': [('x', '<f4'), ('y', '<f4')], "
                     "'fortran_order': False, 'shape': (1,)}",
                     quarters, 8);
    assert_rejected(b, n, "structured dtype");
    n = craft(b, 1, 0, "{'descr': '|O', 'fortran_order': False, 'shape': (1,)}",
              quarters, 8);
    assert_rejected(b, n, "'|O' is not supported");
}

TG_TEST(npy, rejects_more_than_eight_dims)
{
    unsigned char b[512];
    size_t n = craft(b, 1, 0,
                     "{'descr': '<f4', 'fortran_order': False, "
                     "'shape': (1, 1, 1, 1, 1, 1, 1, 1, 1), }",
                     quarters, 4);
    assert_rejected(b, n, "the shape (1, 1, 1, 1, 1, 1, 1, 1, 1) has 9 dims",
                    "at most 8 dims");
}

TG_TEST(npy, rejects_negative_and_overflowing_shapes)
{
    unsigned char b[512];
    size_t n = craft(b, 1, 0,
                     "{'descr': '<f4', 'fortran_order': False, "
                     "'shape': (2, -3), }",
                     quarters, 4);
    assert_rejected(b, n, "the shape (2, -3) has a size at dim 1 that is "
                          "negative");
    n = craft(b, 1, 0,
              "{'descr': '<f4', 'fortran_order': False, "
              "'shape': (99999999999999999999,), }",
              quarters, 4);
    assert_rejected(b, n, "(99999999999999999999,) has a size at dim 0 that "
                          "overflows int64");
    n = craft(b, 1, 0,
              "{'descr': '<f8', 'fortran_order': False, "
              "'shape': (1099511627776, 1099511627776), }",
              quarters, 4);
    assert_rejected(b, n, "(1099511627776, 1099511627776) has too many "
                          "elements");
    /* A zero size does not excuse an overflow of the others (strides). */
    n = craft(b, 1, 0,
              "{'descr': '<f8', 'fortran_order': False, "
              "'shape': (0, 4611686018427387904, 4), }",
              quarters, 0);
    assert_rejected(b, n, "has too many elements");
}

TG_TEST(npy, rejects_data_of_the_wrong_size)
{
    unsigned char b[512];
    size_t n = craft(b, 1, 0, DICT_F32_2X3, quarters, sizeof quarters);
    assert_rejected(b, n - 1, "the data is 23 bytes, but shape (2, 3) of "
                              "'<f4' needs 24",
                    "numel * itemsize = 6 * 4", "the file is truncated");
    assert_rejected(b, 128, "the data is 0 bytes");
    b[n] = 0;
    assert_rejected(b, n + 1, "the data is 25 bytes", "extra bytes");
    n = craft(b, 1, 0,
              "{'descr': '<f8', 'fortran_order': False, 'shape': (0, 3)}",
              quarters, 8);
    assert_rejected(b, n, "the data is 8 bytes, but shape (0, 3)",
                    "needs 0");
}

TG_TEST(npy, rejects_malformed_dicts)
{
    const char *cases[][2] = {
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (3)}",
         "after the only size"},
        {"{'descr': '<f4', 'fortran_order': false, 'shape': (3,)}",
         "True or False"},
        {"{'descr': '<f4', 'fortran_order': 0, 'shape': (3,)}",
         "True or False"},
        {"{'descr': '<f4, 'fortran_order': False, 'shape': (3,)}",
         "expected ',' or '}' after a value at byte 17 of the header, found 'f'"},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': [3]}",
         "'(' to open the tuple"},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3.0)}",
         "',' or ')' in the tuple"},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (3,,)}",
         "a size (a non-negative integer)"},
        {"{'descr': '<f4' 'fortran_order': False, 'shape': (3,)}",
         "',' or '}' after a value"},
        {"{descr: '<f4', 'fortran_order': False, 'shape': (3,)}",
         "a quoted key or '}'"},
        {"['descr', '<f4']", "'{' (the header starts with a dict)"},
        {"{'descr': '<\\x66\\x34', 'fortran_order': False, 'shape': (3,)}",
         "a short string of printable characters"},
    };
    unsigned char b[512];
    for (size_t k = 0; k < sizeof cases / sizeof *cases; k++) {
        size_t n = craft(b, 1, 0, cases[k][0], quarters, 12);
        assert_rejected(b, n, "the header is not a valid dict",
                        cases[k][1]);
    }
    /* A NUL byte inside the dict. */
    size_t n = craft(b, 1, 0, DICT_F32_2X3, quarters, sizeof quarters);
    b[20] = 0;
    assert_rejected(b, n, "found '\\x00'");
}

TG_TEST(npy, bad_arguments)
{
    cr_assert_null(tg_npy_parse(NULL, 16, "x"));
    tg_assert_error("tg_npy_parse", "bytes is NULL but nbytes is 16");
    cr_assert_null(tg_npy_parse(NULL, 0, NULL));
    tg_assert_error("cannot load '(memory)': the file is empty");

    cr_assert_null(tg_load_npy(NULL));
    tg_assert_error("tg_load_npy: path is NULL");
    cr_assert_null(tg_load_npy("/nonexistent/dir/x.npy"));
    tg_assert_error("tg_load_npy: cannot open '/nonexistent/dir/x.npy': ",
                    "No such file", "rule:");

    tg_clear_error();
    cr_assert_eq(tg_save_npy("/tmp/never_written.npy", NULL), -1);
    cr_assert_str_eq(tg_last_error(), "", "a NULL tensor adds no message");
    tg_tensor *x = tg_zeros(TG_SHAPE(2), TG_FLOAT32);
    cr_assert_eq(tg_save_npy(NULL, x), -1);
    tg_assert_error("tg_save_npy: path is NULL");
    cr_assert_eq(tg_save_npy("/nonexistent/dir/x.npy", x), -1);
    tg_assert_error("tg_save_npy: cannot open '/nonexistent/dir/x.npy' for "
                    "writing",
                    "rule:");
    tg_release(x);
}

/* --------------------------------------------------- never out of bounds */

/* Every prefix of a valid file and every single-byte change of it must be
 * either parsed or rejected with a message; the exact-size copies let the
 * sanitizers catch any read past the end. */
TG_TEST(npy, damaged_files_never_crash)
{
    unsigned char b[512], m[512];
    size_t n = craft(b, 2, 0,
                     "{'descr': '<i8', 'fortran_order': False, "
                     "'shape': (1, 2), }",
                     (int64_t[]){7, -7}, 16);
    for (size_t len = 0; len < n; len++) {
        tg_clear_error();
        cr_assert_null(parse_exact(b, len, "cut.npy"), "prefix %zu", len);
        cr_assert_neq(tg_last_error()[0], '\0');
    }
    tg_tensor *whole = parse_exact(b, n, "whole.npy");
    cr_assert_not_null(whole, "%s", tg_last_error());
    tg_release(whole);

    const unsigned char values[] = {0x00, 0xff, ' ', '\'', '(', ')', ',',
                                    '9', '-', '{', '}', 'T', '\n', 0x80};
    for (size_t at = 0; at < n; at++) {
        for (size_t v = 0; v < sizeof values; v++) {
            memcpy(m, b, n);
            m[at] = values[v];
            tg_clear_error();
            tg_tensor *t = parse_exact(m, n, "mutated.npy");
            cr_assert(t || tg_last_error()[0] != '\0');
            tg_release(t);
        }
    }
}

/* ----------------------------------------------- files that are not files */

/* A load must neither block on a FIFO nor read a device forever: an alarm
 * ends the test process if it does. */
TG_TEST(npy, special_files_are_refused_at_once)
{
    char dir[] = "/tmp/tg_npy_special_XXXXXX";
    cr_assert_not_null(mkdtemp(dir));
    char fifo[64], zero[64], folder[64];
    snprintf(fifo, sizeof fifo, "%s/fifo.npy", dir);
    snprintf(zero, sizeof zero, "%s/zero.npy", dir);
    snprintf(folder, sizeof folder, "%s/folder.npy", dir);
    cr_assert_eq(mkfifo(fifo, 0666), 0);
    cr_assert_eq(symlink("/dev/zero", zero), 0);
    cr_assert_eq(mkdir(folder, 0777), 0);
    alarm(10);
    cr_assert_null(tg_load_npy(fifo));
    tg_assert_error("tg_load_npy: cannot read '", "fifo.npy': it is a FIFO "
                    "(named pipe), not a regular file");
    cr_assert_null(tg_load_npy(zero)); // the link is followed: a device
    tg_assert_error("zero.npy': it is a character device, not a regular "
                    "file");
    cr_assert_null(tg_load_npy(folder));
    tg_assert_error("folder.npy': it is a folder, not a regular file");
    alarm(0);
    unlink(fifo);
    unlink(zero);
    rmdir(folder);
    rmdir(dir);
}

/* A file longer or shorter than its header announces is refused, and a
 * file whose header claims a huge array is refused before anything is
 * allocated for it (the live bytes stay where they were). */
TG_TEST(npy, size_must_match_the_header)
{
    char path[] = "/tmp/tg_npy_size_XXXXXX";
    int fd = mkstemp(path);
    cr_assert_geq(fd, 0);
    close(fd);
    tg_tensor *x = tg_arange(0, 6, 1, TG_FLOAT32);
    cr_assert_eq(tg_save_npy(path, x), 0);
    FILE *f = fopen(path, "ab");
    fputc(0, f); // one byte too many
    fclose(f);
    cr_assert_null(tg_load_npy(path));
    tg_assert_error("the data is 25 bytes, but shape (6,) of '<f4' needs 24");
    cr_assert_eq(truncate(path, 128 + 20), 0); // four bytes too few
    cr_assert_null(tg_load_npy(path));
    tg_assert_error("the data is 20 bytes, but shape (6,) of '<f4' needs 24");
    /* A header announcing 2^40 float64s over 24 bytes of data. */
    char head[129];
    memcpy(head, "\x93NUMPY\x01\x00\x76\x00", 10); // version 1.0, 118
    snprintf(head + 10, sizeof head - 10, "%-117s\n",
             "{'descr': '<f8', 'fortran_order': False, "
             "'shape': (1099511627776,), }");
    f = fopen(path, "wb");
    fwrite(head, 1, 128, f);
    fwrite(head, 1, 24, f);
    fclose(f);
    tg_reset_peak_bytes();
    int64_t before = tg_live_bytes();
    cr_assert_null(tg_load_npy(path));
    tg_assert_error("the data is 24 bytes, but shape (1099511627776,) of "
                    "'<f8' needs 8796093022208");
    cr_assert_eq(tg_peak_bytes(), before, "a tensor was allocated");
    tg_release(x);
    unlink(path);
}
