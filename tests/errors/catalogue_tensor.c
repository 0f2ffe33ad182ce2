/*
 * tests/errors/catalogue_tensor.c - the errors of tensor/tensor.h, one
 * ERROR_CASE per row of docs/errors.md (see catalogue.h).
 *
 * The rows follow the header's sections. Helpers that report under their
 * caller's name (the shape checks, the dtype check, the in-place write
 * check) have their full set of rows under one function (tg_zeros,
 * tg_set) and one row elsewhere. The .npy rows that read files work in a
 * new folder under /tmp (each Criterion test runs in its own process, so
 * changing into it is safe), so that the file names in the messages are
 * short and fixed.
 */
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L // mkdtemp, chdir, rmdir, setrlimit
#endif

#include "catalogue.h"

#include <errno.h>
#include <setjmp.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

/* ------------------------------------------------------------ helpers */

/* Makes a new empty folder under /tmp and moves into it. */
static void enter_temp_dir(char dir[32])
{
    snprintf(dir, 32, "/tmp/tg-catalogue-XXXXXX");
    cr_assert_not_null(mkdtemp(dir), "mkdtemp failed");
    cr_assert_eq(chdir(dir), 0, "cannot enter %s", dir);
}

/* Removes file (if any) and the folder made by enter_temp_dir. */
static void leave_temp_dir(const char *dir, const char *file)
{
    if (file)
        remove(file);
    cr_assert_eq(chdir("/"), 0);
    cr_assert_eq(rmdir(dir), 0, "cannot remove %s", dir);
}

static void write_file(const char *name, const void *bytes, size_t n)
{
    FILE *f = fopen(name, "wb");
    cr_assert_not_null(f, "cannot write %s", name);
    cr_assert_eq(fwrite(bytes, 1, n, f), n);
    cr_assert_eq(fclose(f), 0);
}

/* The bytes of a .npy file in buf: the magic, version major.0, the header
 * length, the dict and a '\n' (no alignment padding: the reader does not
 * need it), then ndata zero bytes of data. Returns the length. */
static size_t npy_bytes(unsigned char *buf, int major, const char *dict,
                        size_t ndata)
{
    size_t hlen = strlen(dict) + 1, pre = major == 1 ? 10 : 12;
    memcpy(buf, "\x93NUMPY", 6);
    buf[6] = (unsigned char)major;
    buf[7] = 0;
    for (size_t i = 8; i < pre; i++)
        buf[i] = (unsigned char)(hlen >> (8 * (i - 8)));
    memcpy(buf + pre, dict, hlen - 1);
    buf[pre + hlen - 1] = '\n';
    memset(buf + pre + hlen, 0, ndata);
    return pre + hlen + ndata;
}

#define F4_2x3 "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }"

/* Parses a .npy made by npy_bytes, named "m.npy" in messages. */
static tg_tensor *parse(int major, const char *dict, size_t ndata)
{
    static unsigned char buf[1024];
    size_t n = npy_bytes(buf, major, dict, ndata);
    return tg_npy_parse(buf, n, "m.npy");
}

/* Writes such a file as name in the current folder and loads it. */
static tg_tensor *load(const char *name, int major, const char *dict,
                       size_t ndata)
{
    static unsigned char buf[1024];
    write_file(name, buf, npy_bytes(buf, major, dict, ndata));
    return tg_load_npy(name);
}

/* ---- errors ---- */

NEVER_FAILS(tg_set_error_handler,
            "installs the handler it is given (NULL restores the default)");
NEVER_FAILS(tg_error_handler_print, "prints the message it is given");
NEVER_FAILS(tg_error_handler_abort,
            "prints the message, then stops the program on purpose");
NEVER_FAILS(tg_error_handler_quiet, "does nothing, on purpose");
NEVER_FAILS(tg_error, "reports the error it is given, as \"fn: message\"");
NEVER_FAILS(tg_last_error, "returns this thread's last message (\"\" if none)");
NEVER_FAILS(tg_clear_error, "empties this thread's last message");

/* ---- dtypes ---- */

NEVER_FAILS(tg_dtype_name,
            "returns \"unknown\" for a value that is not a dtype");
NEVER_FAILS(tg_dtype_size, "returns a size for any value");
NEVER_FAILS(tg_dtype_is_float, "returns false for a value that is not a "
                               "dtype");

/* ---- lifetime, counters ---- */

/* A double release or a use after release ends the process once the
 * handler has the message (tensor.h); these rows catch it with a handler
 * that jumps back, so the test can read the message and go on. The debug
 * mode is on, so the released header is kept and says where it was
 * released; each test is a process of its own, so the first tensor it
 * makes is #1. */
static jmp_buf released_jump;

static void jump_back(const char *message)
{
    (void)message;
    longjmp(released_jump, 1);
}

#define CATCH_RELEASED(caught, call)                                        \
    do {                                                                    \
        if (setjmp(released_jump) == 0) {                                   \
            tg_set_error_handler(jump_back);                                \
            call;                                                           \
        } else {                                                            \
            caught = true;                                                  \
        }                                                                   \
        tg_set_error_handler(tg_error_handler_quiet);                       \
    } while (0)

ERROR_CASE(tg_retain, released, "the tensor was released already")
{
    tg_set_debug(true);
    tg_tensor *x = tg_ones(TG_SHAPE(2, 3), TG_FLOAT32);
    tg_release(x);
    volatile bool caught = false;
    CATCH_RELEASED(caught, tg_retain(x));
    tg_set_debug(false);
    EXPECT_ERROR(caught, "tg_retain: the tensor (2, 3) float32 made by "
                         "tg_ones (#1) was used after its last release");
}

ERROR_CASE(tg_retain, null, "t is NULL")
{
    EXPECT_SILENT(tg_retain(NULL) == NULL);
}

ERROR_CASE(tg_release, twice, "the tensor was released already")
{
    tg_set_debug(true);
    tg_tensor *x = tg_ones(TG_SHAPE(4), TG_INT64);
    tg_release(x);
    volatile bool caught = false;
    CATCH_RELEASED(caught, tg_release(x));
    tg_set_debug(false);
    EXPECT_ERROR(caught, "tg_release: the tensor (4,) int64 made by "
                         "tg_ones (#1) was released again");
}

ERROR_CASE(tg_release, null, "t is NULL")
{
    tg_release(NULL);
    EXPECT_SILENT(true);
}

ERROR_CASE(tg_release_at, twice, "the tensor was released already")
{
    tg_set_debug(true);
    tg_tensor *x = tg_zeros(TG_SHAPE(1, 2), TG_FLOAT64);
    tg_release_at(x, __FILE__, __LINE__, __func__);
    volatile bool caught = false;
    CATCH_RELEASED(caught, tg_release_at(x, __FILE__, __LINE__, __func__));
    tg_set_debug(false);
    EXPECT_ERROR(caught, "tg_release: the tensor (1, 2) float64 made by "
                         "tg_zeros (#1) was released again");
}

ERROR_CASE(tg_release_at, null, "t is NULL")
{
    tg_release_at(NULL, __FILE__, __LINE__, __func__);
    EXPECT_SILENT(true);
}

NEVER_FAILS(tg_live_tensors, "returns a count");
NEVER_FAILS(tg_live_storages, "returns a count");
NEVER_FAILS(tg_live_bytes, "returns a count");
NEVER_FAILS(tg_peak_bytes, "returns a count");
NEVER_FAILS(tg_reset_peak_bytes, "stores a count");
NEVER_FAILS(tg_empty_cache, "frees what it keeps");
NEVER_FAILS(tg_fail_allocations_after,
            "any n is a setting (n < 0 switches the hook off)");
NEVER_FAILS(tg_system_allocations, "returns a count");
NEVER_FAILS(tg_set_io_hook, "installs the hook it is given (NULL: none)");

/* ---- memory mistakes shown ---- */

NEVER_FAILS(tg_set_debug, "any bool is a setting");
NEVER_FAILS(tg_debug_enabled, "returns the setting");

ERROR_CASE(tg_print_live_tensors, null_stream, "f is NULL")
{
    EXPECT_ERROR(tg_print_live_tensors(NULL) == -1,
                 "tg_print_live_tensors: f is NULL");
}

/* ---- create ---- */

ERROR_CASE(tg_empty, unknown_dtype, "dtype is not a tg_dtype value")
{
    tg_tensor *x = tg_empty(TG_SHAPE(2, 3), (tg_dtype)7);
    EXPECT_ERROR(x == NULL, "tg_empty: unknown dtype 7");
}

ERROR_CASE(tg_zeros, negative_size, "a size in the shape is negative")
{
    tg_tensor *x = tg_zeros((int64_t[]){2, -3}, 2, TG_FLOAT32);
    EXPECT_ERROR(x == NULL, "tg_zeros: invalid shape (2, -3)");
}

ERROR_CASE(tg_zeros, too_many_dims, "ndim is above TG_MAX_DIMS (8)")
{
    int64_t shape[9] = {1, 1, 1, 1, 1, 1, 1, 1, 1};
    tg_tensor *x = tg_zeros(shape, 9, TG_FLOAT32);
    EXPECT_ERROR(x == NULL, "tg_zeros: cannot make a shape with 9 dims");
}

ERROR_CASE(tg_zeros, negative_ndim, "ndim is negative")
{
    tg_tensor *x = tg_zeros(NULL, -1, TG_FLOAT32);
    EXPECT_ERROR(x == NULL, "tg_zeros: cannot make a shape with -1 dims");
}

ERROR_CASE(tg_zeros, null_shape, "shape is NULL but ndim is not 0")
{
    tg_tensor *x = tg_zeros(NULL, 2, TG_FLOAT32);
    EXPECT_ERROR(x == NULL, "tg_zeros: shape is NULL but ndim is 2");
}

ERROR_CASE(tg_zeros, too_many_elements,
           "the product of the sizes is 2^59 or more")
{
    tg_tensor *x = tg_zeros(TG_SHAPE(INT64_C(1) << 30, INT64_C(1) << 30),
                            TG_FLOAT32);
    EXPECT_ERROR(x == NULL, "tg_zeros: shape (1073741824, 1073741824) has "
                            "too many elements");
}

ERROR_CASE(tg_zeros, unknown_dtype, "dtype is not a tg_dtype value")
{
    tg_tensor *x = tg_zeros(TG_SHAPE(2), (tg_dtype)-1);
    EXPECT_ERROR(x == NULL, "tg_zeros: unknown dtype -1");
}

ERROR_CASE(tg_zeros, out_of_memory, "memory runs out")
{
    tg_fail_allocations_after(0);
    tg_tensor *x = tg_zeros(TG_SHAPE(2, 3), TG_FLOAT32);
    tg_fail_allocations_after(-1);
    EXPECT_ERROR(x == NULL, "tg_alloc: out of memory allocating a float32 "
                            "tensor of shape (2, 3)");
}

ERROR_CASE(tg_ones, negative_size, "a size in the shape is negative")
{
    tg_tensor *x = tg_ones(TG_SHAPE(-1), TG_FLOAT64);
    EXPECT_ERROR(x == NULL, "tg_ones: invalid shape (-1,)");
}

ERROR_CASE(tg_full, nan_in_int64, "the value is NaN and dtype is int64")
{
    tg_tensor *x = tg_full(TG_SHAPE(2), NAN, TG_INT64);
    EXPECT_ERROR(x == NULL, "tg_full: cannot store nan in an int64 tensor");
}

ERROR_CASE(tg_full, beyond_int64, "the value is beyond int64's range")
{
    tg_tensor *x = tg_full(TG_SHAPE(2), 1e19, TG_INT64);
    EXPECT_ERROR(x == NULL, "tg_full: cannot store 1e+19 in an int64 tensor");
}

ERROR_CASE(tg_full, beyond_float32, "the value is beyond float32's range")
{
    tg_tensor *x = tg_full(TG_SHAPE(2), 1e300, TG_FLOAT32);
    EXPECT_ERROR(x == NULL,
                 "tg_full: cannot store 1e+300 in a float32 tensor");
}

ERROR_CASE(tg_full, negative_size, "a size in the shape is negative")
{
    tg_tensor *x = tg_full(TG_SHAPE(3, -2), 1.0, TG_FLOAT32);
    EXPECT_ERROR(x == NULL, "tg_full: invalid shape (3, -2)");
}

ERROR_CASE(tg_from_array, null_data, "data is NULL for a non-empty shape")
{
    tg_tensor *x = tg_from_array(NULL, TG_SHAPE(2, 3), TG_FLOAT32);
    EXPECT_ERROR(x == NULL, "tg_from_array: data is NULL");
}

ERROR_CASE(tg_from_array, null_shape, "shape is NULL but ndim is not 0")
{
    float v[2] = {1, 2};
    tg_tensor *x = tg_from_array(v, NULL, 1, TG_FLOAT32);
    EXPECT_ERROR(x == NULL, "tg_from_array: shape is NULL but ndim is 1");
}

ERROR_CASE(tg_scalar, unknown_dtype, "dtype is not a tg_dtype value")
{
    tg_tensor *x = tg_scalar(1.0, (tg_dtype)3);
    EXPECT_ERROR(x == NULL, "tg_scalar: unknown dtype 3");
}

ERROR_CASE(tg_scalar, nan_in_int64, "the value is NaN and the dtype int64")
{
    tg_tensor *x = tg_scalar(NAN, TG_INT64);
    EXPECT_ERROR(x == NULL, "tg_scalar: cannot store nan in an int64 tensor");
}

ERROR_CASE(tg_arange, zero_step, "step is 0")
{
    tg_tensor *x = tg_arange(0, 5, 0, TG_FLOAT32);
    EXPECT_ERROR(x == NULL,
                 "tg_arange: cannot make a range from 0 to 5 in steps of 0");
}

ERROR_CASE(tg_arange, step_away_from_end,
           "step points away from end (a negative step for an increasing "
           "range)")
{
    tg_tensor *x = tg_arange(0, 5, -1, TG_INT64);
    EXPECT_ERROR(x == NULL,
                 "tg_arange: cannot make a range from 0 to 5 in steps of -1");
}

ERROR_CASE(tg_arange, too_many_elements,
           "the range has more than 9e15 elements")
{
    tg_tensor *x = tg_arange(0, 1e17, 1, TG_FLOAT64);
    EXPECT_ERROR(x == NULL, "tg_arange: a range from 0 to 1e+17 in steps of 1 "
                            "has too many elements (1e+17)");
}

ERROR_CASE(tg_arange, unknown_dtype, "dtype is not a tg_dtype value")
{
    tg_tensor *x = tg_arange(0, 5, 1, (tg_dtype)9);
    EXPECT_ERROR(x == NULL, "tg_arange: unknown dtype 9");
}

ERROR_CASE(tg_linspace, negative_steps, "steps is negative")
{
    tg_tensor *x = tg_linspace(0, 1, -2, TG_FLOAT32);
    EXPECT_ERROR(x == NULL, "tg_linspace: steps is -2");
}

ERROR_CASE(tg_linspace, unknown_dtype, "dtype is not a tg_dtype value")
{
    tg_tensor *x = tg_linspace(0, 1, 5, (tg_dtype)4);
    EXPECT_ERROR(x == NULL, "tg_linspace: unknown dtype 4");
}

ERROR_CASE(tg_eye, negative_size, "n or m is negative")
{
    tg_tensor *x = tg_eye(-1, 3, TG_FLOAT32);
    EXPECT_ERROR(x == NULL, "tg_eye: invalid shape (-1, 3)");
}

ERROR_CASE(tg_empty_like, null_tensor, "x is NULL (an earlier call failed)")
{
    EXPECT_SILENT(tg_empty_like(NULL) == NULL);
}

ERROR_CASE(tg_empty_like, out_of_memory, "memory runs out")
{
    tg_tensor *x = tg_zeros(TG_SHAPE(4), TG_INT64);
    tg_fail_allocations_after(0);
    tg_tensor *y = tg_empty_like(x);
    tg_fail_allocations_after(-1);
    EXPECT_ERROR(y == NULL, "tg_alloc: out of memory allocating a int64 "
                            "tensor of shape (4,)");
    tg_release(x);
}

ERROR_CASE(tg_zeros_like, null_tensor, "x is NULL (an earlier call failed)")
{
    EXPECT_SILENT(tg_zeros_like(NULL) == NULL);
}

ERROR_CASE(tg_ones_like, null_tensor, "x is NULL (an earlier call failed)")
{
    EXPECT_SILENT(tg_ones_like(NULL) == NULL);
}

ERROR_CASE(tg_full_like, nan_in_int64, "the value is NaN and x is int64")
{
    tg_tensor *x = tg_zeros(TG_SHAPE(2), TG_INT64);
    tg_tensor *y = tg_full_like(x, NAN);
    EXPECT_ERROR(y == NULL,
                 "tg_full_like: cannot store nan in an int64 tensor");
    tg_release(x);
}

ERROR_CASE(tg_full_like, null_tensor, "x is NULL (an earlier call failed)")
{
    EXPECT_SILENT(tg_full_like(NULL, 1.0) == NULL);
}

/* ---- inspect ---- */

NEVER_FAILS(tg_is_contiguous, "returns false for a NULL tensor");

ERROR_CASE(tg_size, dim_out_of_range, "dim is out of range")
{
    tg_tensor *x = tg_zeros(TG_SHAPE(2, 3), TG_FLOAT32);
    EXPECT_ERROR(tg_size(x, 2) == -1,
                 "tg_size: dim 2 is out of range for a tensor with 2 dims");
    tg_release(x);
}

ERROR_CASE(tg_size, null_tensor, "x is NULL (an earlier call failed)")
{
    EXPECT_SILENT(tg_size(NULL, 0) == -1);
}

NEVER_FAILS(tg_shape_str, "writes \"(null)\" for a NULL tensor");
NEVER_FAILS(tg_same_shape, "returns false when a tensor is NULL");

ERROR_CASE(tg_item, many_elements, "x has more than one element")
{
    tg_tensor *x = tg_zeros(TG_SHAPE(2, 3), TG_FLOAT32);
    EXPECT_ERROR(isnan(tg_item(x)),
                 "tg_item: a tensor of shape (2, 3) has 6 elements");
    tg_release(x);
}

ERROR_CASE(tg_item, null_tensor, "x is NULL (an earlier call failed)")
{
    EXPECT_SILENT(isnan(tg_item(NULL)));
}

ERROR_CASE(tg_get, wrong_index_count,
           "the number of indices is not the number of dims")
{
    tg_tensor *x = tg_zeros(TG_SHAPE(2, 3), TG_FLOAT32);
    double v;
    EXPECT_ERROR(tg_get(x, TG_SHAPE(1), &v) == -1,
                 "tg_get: got 1 indices for a tensor of shape (2, 3)");
    tg_release(x);
}

ERROR_CASE(tg_get, index_out_of_range, "an index is out of range")
{
    tg_tensor *x = tg_zeros(TG_SHAPE(2, 3), TG_FLOAT32);
    double v;
    EXPECT_ERROR(tg_get(x, TG_SHAPE(1, 3), &v) == -1,
                 "tg_get: index 3 is out of range for dim 1 of a tensor of "
                 "shape (2, 3)");
    tg_release(x);
}

ERROR_CASE(tg_get, null_index, "index is NULL but nindex is not 0")
{
    tg_tensor *x = tg_zeros(TG_SHAPE(2, 3), TG_FLOAT32);
    double v;
    EXPECT_ERROR(tg_get(x, NULL, 2, &v) == -1,
                 "tg_get: index is NULL but nindex is 2");
    tg_release(x);
}

ERROR_CASE(tg_get, null_out, "out is NULL")
{
    tg_tensor *x = tg_zeros(TG_SHAPE(2, 3), TG_FLOAT32);
    EXPECT_ERROR(tg_get(x, TG_SHAPE(0, 0), NULL) == -1,
                 "tg_get: out is NULL");
    tg_release(x);
}

ERROR_CASE(tg_get, null_tensor, "x is NULL (an earlier call failed)")
{
    double v;
    EXPECT_SILENT(tg_get(NULL, TG_SHAPE(0), &v) == -1);
}

ERROR_CASE(tg_set, index_out_of_range, "an index is out of range")
{
    tg_tensor *x = tg_zeros(TG_SHAPE(4), TG_INT64);
    EXPECT_ERROR(tg_set(x, TG_SHAPE(-5), 1.0) == -1,
                 "tg_set: index -5 is out of range for dim 0 of a tensor of "
                 "shape (4,)");
    tg_release(x);
}

ERROR_CASE(tg_set, value_does_not_fit,
           "the value cannot be stored in the dtype (infinity in int64)")
{
    tg_tensor *x = tg_zeros(TG_SHAPE(4), TG_INT64);
    EXPECT_ERROR(tg_set(x, TG_SHAPE(1), INFINITY) == -1,
                 "tg_set: cannot store inf in an int64 tensor");
    tg_release(x);
}

ERROR_CASE(tg_set, wrong_index_count,
           "the number of indices is not the number of dims")
{
    tg_tensor *x = tg_zeros(TG_SHAPE(4), TG_INT64);
    EXPECT_ERROR(tg_set(x, TG_SHAPE(0, 0), 1.0) == -1,
                 "tg_set: got 2 indices for a tensor of shape (4,)");
    tg_release(x);
}

ERROR_CASE(tg_set, leaf_requires_grad,
           "x is a leaf that requires grad, and gradients are on")
{
    tg_tensor *x = tg_zeros(TG_SHAPE(4), TG_FLOAT32);
    tg_set_requires_grad(x, true);
    EXPECT_ERROR(tg_set(x, TG_SHAPE(0), 1.0) == -1,
                 "tg_set: cannot write in place into a leaf that requires "
                 "grad");
    tg_release(x);
}

ERROR_CASE(tg_set, made_by_an_op,
           "x was made by an op that gradients flow through")
{
    tg_tensor *w = tg_ones(TG_SHAPE(4), TG_FLOAT32);
    tg_set_requires_grad(w, true);
    tg_tensor *x = tg_mul_scalar(w, 2.0);
    EXPECT_ERROR(tg_set(x, TG_SHAPE(0), 1.0) == -1,
                 "tg_set: cannot write in place into a tensor made by "
                 "MulBackward0");
    tg_release(x);
    tg_release(w);
}

ERROR_CASE(tg_set, null_tensor, "x is NULL (an earlier call failed)")
{
    EXPECT_SILENT(tg_set(NULL, TG_SHAPE(0), 1.0) == -1);
}

ERROR_CASE(tg_data_f32, wrong_dtype, "x is not float32")
{
    tg_tensor *x = tg_zeros(TG_SHAPE(2), TG_FLOAT64);
    EXPECT_ERROR(tg_data_f32(x) == NULL, "tg_data_f32: the tensor is float64");
    tg_release(x);
}

ERROR_CASE(tg_data_f32, null_tensor, "x is NULL (an earlier call failed)")
{
    EXPECT_SILENT(tg_data_f32(NULL) == NULL);
}

ERROR_CASE(tg_data_f64, wrong_dtype, "x is not float64")
{
    tg_tensor *x = tg_zeros(TG_SHAPE(2), TG_FLOAT32);
    EXPECT_ERROR(tg_data_f64(x) == NULL, "tg_data_f64: the tensor is float32");
    tg_release(x);
}

ERROR_CASE(tg_data_f64, null_tensor, "x is NULL (an earlier call failed)")
{
    EXPECT_SILENT(tg_data_f64(NULL) == NULL);
}

ERROR_CASE(tg_data_i64, wrong_dtype, "x is not int64")
{
    tg_tensor *x = tg_zeros(TG_SHAPE(2), TG_FLOAT32);
    EXPECT_ERROR(tg_data_i64(x) == NULL, "tg_data_i64: the tensor is float32");
    tg_release(x);
}

ERROR_CASE(tg_data_i64, null_tensor, "x is NULL (an earlier call failed)")
{
    EXPECT_SILENT(tg_data_i64(NULL) == NULL);
}

ERROR_CASE(tg_to_f64_array, null_out, "out is NULL")
{
    tg_tensor *x = tg_zeros(TG_SHAPE(2), TG_FLOAT32);
    EXPECT_ERROR(tg_to_f64_array(x, NULL) == -1, "tg_to_f64_array: out is NULL");
    tg_release(x);
}

ERROR_CASE(tg_to_f64_array, null_tensor, "x is NULL (an earlier call failed)")
{
    double v[2];
    EXPECT_SILENT(tg_to_f64_array(NULL, v) == -1);
}

ERROR_CASE(tg_fill_, leaf_requires_grad,
           "x is a leaf that requires grad, and gradients are on")
{
    tg_tensor *x = tg_zeros(TG_SHAPE(3), TG_FLOAT64);
    tg_set_requires_grad(x, true);
    EXPECT_ERROR(tg_fill_(x, 1.0) == -1,
                 "tg_fill_: cannot write in place into a leaf that requires "
                 "grad");
    tg_release(x);
}

ERROR_CASE(tg_fill_, value_does_not_fit,
           "the value cannot be stored in the dtype (1e300 in float32)")
{
    tg_tensor *x = tg_zeros(TG_SHAPE(3), TG_FLOAT32);
    EXPECT_ERROR(tg_fill_(x, 1e300) == -1,
                 "tg_fill_: cannot store 1e+300 in a float32 tensor");
    tg_release(x);
}

ERROR_CASE(tg_fill_, expanded_view,
           "x is an expanded view (several elements share memory)")
{
    tg_tensor *col = tg_zeros(TG_SHAPE(3, 1), TG_FLOAT64);
    tg_tensor *x = tg_expand(col, TG_SHAPE(3, 2));
    EXPECT_ERROR(tg_fill_(x, 1.0) == -1,
                 "tg_fill_: cannot write in place into an expanded tensor of "
                 "shape (3, 2) (dim 1 has stride 0)");
    tg_release(x);
    tg_release(col);
}

ERROR_CASE(tg_fill_, null_tensor, "x is NULL (an earlier call failed)")
{
    EXPECT_SILENT(tg_fill_(NULL, 1.0) == -1);
}

ERROR_CASE(tg_copy_, shapes_do_not_broadcast,
           "src's shape does not broadcast to dst's")
{
    tg_tensor *dst = tg_zeros(TG_SHAPE(2, 3), TG_FLOAT32);
    tg_tensor *src = tg_zeros(TG_SHAPE(4), TG_FLOAT32);
    EXPECT_ERROR(tg_copy_(dst, src) == -1,
                 "tg_copy_: cannot broadcast (2, 3) with (4,)");
    tg_release(src);
    tg_release(dst);
}

ERROR_CASE(tg_copy_, src_larger, "src broadcasts only to a larger shape")
{
    tg_tensor *dst = tg_zeros(TG_SHAPE(3), TG_FLOAT32);
    tg_tensor *src = tg_zeros(TG_SHAPE(2, 3), TG_FLOAT32);
    EXPECT_ERROR(tg_copy_(dst, src) == -1,
                 "tg_copy_: cannot copy a tensor of shape (2, 3) into one of "
                 "shape (3,)");
    tg_release(src);
    tg_release(dst);
}

ERROR_CASE(tg_copy_, dst_expanded,
           "dst is an expanded view (several elements share memory)")
{
    tg_tensor *row = tg_zeros(TG_SHAPE(1, 3), TG_FLOAT32);
    tg_tensor *dst = tg_expand(row, TG_SHAPE(2, 3));
    tg_tensor *src = tg_ones(TG_SHAPE(2, 3), TG_FLOAT32);
    EXPECT_ERROR(tg_copy_(dst, src) == -1,
                 "tg_copy_: cannot write in place into an expanded tensor of "
                 "shape (2, 3) (dim 0 has stride 0)");
    tg_release(src);
    tg_release(dst);
    tg_release(row);
}

ERROR_CASE(tg_copy_, null_tensor, "dst or src is NULL (an earlier call failed)")
{
    tg_tensor *x = tg_zeros(TG_SHAPE(3), TG_FLOAT32);
    EXPECT_SILENT(tg_copy_(x, NULL) == -1 && tg_copy_(NULL, x) == -1);
    tg_release(x);
}

/* ---- random ---- */

ERROR_CASE(tg_generator_new, out_of_memory, "memory runs out")
{
    tg_fail_allocations_after(0);
    tg_generator *g = tg_generator_new(1);
    tg_fail_allocations_after(-1);
    EXPECT_ERROR(g == NULL, "tg_generator_new: out of memory allocating a "
                            "generator (2512 bytes)");
}

ERROR_CASE(tg_generator_free, default_generator,
           "g is the default generator, which the library owns")
{
    tg_generator_free(tg_default_generator());
    EXPECT_ERROR(true, "tg_generator_free: cannot free the default generator");
}

NEVER_FAILS(tg_default_generator, "returns the process's generator");
NEVER_FAILS(tg_manual_seed, "any seed is valid");
NEVER_FAILS(tg_generator_seed, "any seed is valid; a NULL g does nothing");

ERROR_CASE(tg_rand, int64_dtype, "dtype is TG_INT64")
{
    tg_tensor *x = tg_rand(TG_SHAPE(4), TG_INT64);
    EXPECT_ERROR(x == NULL, "tg_rand: cannot make an int64 tensor of shape "
                            "(4,) of uniform samples");
}

ERROR_CASE(tg_rand, unknown_dtype, "dtype is not a tg_dtype value")
{
    tg_tensor *x = tg_rand(TG_SHAPE(4), (tg_dtype)7);
    EXPECT_ERROR(x == NULL, "tg_rand: unknown dtype 7");
}

ERROR_CASE(tg_rand, negative_size, "a size in the shape is negative")
{
    tg_tensor *x = tg_rand(TG_SHAPE(-3), TG_FLOAT32);
    EXPECT_ERROR(x == NULL, "tg_rand: invalid shape (-3,)");
}

ERROR_CASE(tg_randn, int64_dtype, "dtype is TG_INT64")
{
    tg_tensor *x = tg_randn(TG_SHAPE(2, 3), TG_INT64);
    EXPECT_ERROR(x == NULL, "tg_randn: cannot make an int64 tensor of shape "
                            "(2, 3) of normal samples");
}

ERROR_CASE(tg_randint, empty_range, "low >= high")
{
    tg_tensor *x = tg_randint(5, 5, TG_SHAPE(3));
    EXPECT_ERROR(x == NULL, "tg_randint: cannot draw integers from the empty "
                            "range [5, 5)");
}

ERROR_CASE(tg_randint, negative_size, "a size in the shape is negative")
{
    tg_tensor *x = tg_randint(0, 2, TG_SHAPE(4, -2));
    EXPECT_ERROR(x == NULL, "tg_randint: invalid shape (4, -2)");
}

ERROR_CASE(tg_rand_gen, int64_dtype, "dtype is TG_INT64")
{
    tg_generator *g = tg_generator_new(0);
    tg_tensor *x = tg_rand_gen(g, TG_SHAPE(2), TG_INT64);
    tg_generator_free(g);
    EXPECT_ERROR(x == NULL, "tg_rand_gen: cannot make an int64 tensor of "
                            "shape (2,) of uniform samples");
}

ERROR_CASE(tg_randn_gen, int64_dtype, "dtype is TG_INT64")
{
    tg_generator *g = tg_generator_new(0);
    tg_tensor *x = tg_randn_gen(g, TG_SHAPE(2), TG_INT64);
    tg_generator_free(g);
    EXPECT_ERROR(x == NULL, "tg_randn_gen: cannot make an int64 tensor of "
                            "shape (2,) of normal samples");
}

ERROR_CASE(tg_randint_gen, empty_range, "low >= high")
{
    tg_generator *g = tg_generator_new(0);
    tg_tensor *x = tg_randint_gen(g, 3, 1, TG_SHAPE(2));
    tg_generator_free(g);
    EXPECT_ERROR(x == NULL, "tg_randint_gen: cannot draw integers from the "
                            "empty range [3, 1)");
}

ERROR_CASE(tg_uniform_, int64_tensor, "x is int64")
{
    tg_tensor *x = tg_zeros(TG_SHAPE(3), TG_INT64);
    EXPECT_ERROR(tg_uniform_(x, 0, 1, NULL) == -1,
                 "tg_uniform_: cannot fill a int64 tensor of shape (3,) with "
                 "uniform samples");
    tg_release(x);
}

ERROR_CASE(tg_uniform_, infinite_bound, "from or to is not a finite number "
                                        "of x's dtype")
{
    tg_tensor *x = tg_zeros(TG_SHAPE(3), TG_FLOAT32);
    EXPECT_ERROR(tg_uniform_(x, 0, INFINITY, NULL) == -1,
                 "tg_uniform_: cannot sample U[0, inf) into a float32 tensor");
    tg_release(x);
}

ERROR_CASE(tg_uniform_, reversed_range, "from > to")
{
    tg_tensor *x = tg_zeros(TG_SHAPE(3), TG_FLOAT32);
    EXPECT_ERROR(tg_uniform_(x, 1, -1, NULL) == -1,
                 "tg_uniform_: cannot sample U[1, -1): the range is reversed");
    tg_release(x);
}

ERROR_CASE(tg_uniform_, range_too_wide,
           "to - from overflows x's dtype")
{
    tg_tensor *x = tg_zeros(TG_SHAPE(3), TG_FLOAT32);
    EXPECT_ERROR(tg_uniform_(x, -3e38, 3e38, NULL) == -1,
                 "tg_uniform_: cannot sample U[-3e+38, 3e+38) into a float32 "
                 "tensor");
    tg_release(x);
}

ERROR_CASE(tg_uniform_, expanded_view,
           "x is an expanded view (several elements share memory)")
{
    tg_tensor *row = tg_zeros(TG_SHAPE(1, 3), TG_FLOAT32);
    tg_tensor *x = tg_expand(row, TG_SHAPE(2, 3));
    EXPECT_ERROR(tg_uniform_(x, 0, 1, NULL) == -1,
                 "tg_uniform_: cannot write in place into an expanded tensor "
                 "of shape (2, 3) (dim 0 has stride 0)");
    tg_release(x);
    tg_release(row);
}

ERROR_CASE(tg_uniform_, leaf_requires_grad,
           "x is a leaf that requires grad, and gradients are on")
{
    tg_tensor *x = tg_zeros(TG_SHAPE(3), TG_FLOAT32);
    tg_set_requires_grad(x, true);
    EXPECT_ERROR(tg_uniform_(x, 0, 1, NULL) == -1,
                 "tg_uniform_: cannot write in place into a leaf that "
                 "requires grad");
    tg_release(x);
}

ERROR_CASE(tg_uniform_, null_tensor, "x is NULL (an earlier call failed)")
{
    EXPECT_SILENT(tg_uniform_(NULL, 0, 1, NULL) == -1);
}

ERROR_CASE(tg_normal_, int64_tensor, "x is int64")
{
    tg_tensor *x = tg_zeros(TG_SHAPE(3), TG_INT64);
    EXPECT_ERROR(tg_normal_(x, 0, 1, NULL) == -1,
                 "tg_normal_: cannot fill a int64 tensor of shape (3,) with "
                 "normal samples");
    tg_release(x);
}

ERROR_CASE(tg_normal_, nan_mean, "mean or std is not finite")
{
    tg_tensor *x = tg_zeros(TG_SHAPE(3), TG_FLOAT32);
    EXPECT_ERROR(tg_normal_(x, NAN, 1, NULL) == -1,
                 "tg_normal_: cannot sample N(mean=nan, std=1)");
    tg_release(x);
}

ERROR_CASE(tg_normal_, negative_std, "std is negative")
{
    tg_tensor *x = tg_zeros(TG_SHAPE(3), TG_FLOAT32);
    EXPECT_ERROR(tg_normal_(x, 0, -0.5, NULL) == -1,
                 "tg_normal_: cannot sample N(mean=0, std=-0.5): std is "
                 "negative");
    tg_release(x);
}

ERROR_CASE(tg_normal_, expanded_view,
           "x is an expanded view (several elements share memory)")
{
    tg_tensor *col = tg_zeros(TG_SHAPE(2, 1), TG_FLOAT64);
    tg_tensor *x = tg_expand(col, TG_SHAPE(2, 4));
    EXPECT_ERROR(tg_normal_(x, 0, 1, NULL) == -1,
                 "tg_normal_: cannot write in place into an expanded tensor "
                 "of shape (2, 4) (dim 1 has stride 0)");
    tg_release(x);
    tg_release(col);
}

ERROR_CASE(tg_normal_, null_tensor, "x is NULL (an earlier call failed)")
{
    EXPECT_SILENT(tg_normal_(NULL, 0, 1, NULL) == -1);
}

ERROR_CASE(tg_multinomial, three_dims, "probs has 3 dims")
{
    tg_tensor *p = tg_ones(TG_SHAPE(2, 2, 2), TG_FLOAT32);
    tg_tensor *s = tg_multinomial(p, 1, false, NULL);
    EXPECT_ERROR(s == NULL,
                 "tg_multinomial: probs of shape (2, 2, 2) has 3 dims");
    tg_release(p);
}

ERROR_CASE(tg_multinomial, scalar, "probs is 0-d")
{
    tg_tensor *p = tg_scalar(1.0, TG_FLOAT32);
    tg_tensor *s = tg_multinomial(p, 1, true, NULL);
    EXPECT_ERROR(s == NULL, "tg_multinomial: probs of shape () has 0 dims");
    tg_release(p);
}

ERROR_CASE(tg_multinomial, int64_probs, "probs is int64")
{
    tg_tensor *p = tg_ones(TG_SHAPE(3), TG_INT64);
    tg_tensor *s = tg_multinomial(p, 1, false, NULL);
    EXPECT_ERROR(s == NULL, "tg_multinomial: cannot sample from int64 "
                            "probs of shape (3,)");
    tg_release(p);
}

ERROR_CASE(tg_multinomial, zero_samples, "num_samples <= 0")
{
    tg_tensor *p = tg_ones(TG_SHAPE(3), TG_FLOAT32);
    tg_tensor *s = tg_multinomial(p, 0, true, NULL);
    EXPECT_ERROR(s == NULL, "tg_multinomial: cannot draw 0 samples");
    tg_release(p);
}

ERROR_CASE(tg_multinomial, too_many_without_replacement,
           "num_samples > K without replacement")
{
    tg_tensor *p = tg_ones(TG_SHAPE(2, 3), TG_FLOAT64);
    tg_tensor *s = tg_multinomial(p, 4, false, NULL);
    EXPECT_ERROR(s == NULL, "tg_multinomial: cannot draw 4 samples without "
                            "replacement from 3 categories");
    tg_release(p);
}

ERROR_CASE(tg_multinomial, too_many_categories,
           "more than 2^24 categories")
{
    /* An expanded view: 2^24 + 1 categories in 4 bytes. */
    tg_tensor *one = tg_ones(TG_SHAPE(1), TG_FLOAT32);
    tg_tensor *p = tg_expand(one, TG_SHAPE((INT64_C(1) << 24) + 1));
    tg_tensor *s = tg_multinomial(p, 1, true, NULL);
    EXPECT_ERROR(s == NULL, "tg_multinomial: probs of shape (16777217,) has "
                            "16777217 categories");
    tg_release(p);
    tg_release(one);
}

ERROR_CASE(tg_multinomial, too_many_samples,
           "rows * num_samples is 2^59 or more")
{
    tg_tensor *p = tg_ones(TG_SHAPE(4, 3), TG_FLOAT32);
    tg_tensor *s = tg_multinomial(p, INT64_C(1) << 58, true, NULL);
    EXPECT_ERROR(s == NULL, "tg_multinomial: shape (4, 288230376151711744) "
                            "has too many elements");
    tg_release(p);
}

ERROR_CASE(tg_multinomial, negative_weight, "a weight is negative")
{
    tg_tensor *p = tg_from_array((float[]){1.0f, -0.5f, 2.0f}, TG_SHAPE(3),
                                 TG_FLOAT32);
    tg_tensor *s = tg_multinomial(p, 1, false, NULL);
    EXPECT_ERROR(s == NULL, "tg_multinomial: probs[1] is -0.5");
    tg_release(p);
}

ERROR_CASE(tg_multinomial, nan_weight, "a weight is NaN")
{
    tg_tensor *p = tg_from_array((double[]){1, 2, NAN, 3}, TG_SHAPE(2, 2),
                                 TG_FLOAT64);
    tg_tensor *s = tg_multinomial(p, 2, true, NULL);
    EXPECT_ERROR(s == NULL, "tg_multinomial: probs[1][0] is nan");
    tg_release(p);
}

ERROR_CASE(tg_multinomial, infinite_weight, "a weight is infinite")
{
    tg_tensor *p = tg_from_array((float[]){1.0f, 2.0f, INFINITY},
                                 TG_SHAPE(3), TG_FLOAT32);
    tg_tensor *s = tg_multinomial(p, 5, true, NULL);
    EXPECT_ERROR(s == NULL, "tg_multinomial: probs[2] is inf");
    tg_release(p);
}

ERROR_CASE(tg_multinomial, zero_row, "a row of probs is all zeros")
{
    tg_tensor *p = tg_from_array((float[]){1, 0, 2, 0, 0, 0}, TG_SHAPE(2, 3),
                                 TG_FLOAT32);
    tg_tensor *s = tg_multinomial(p, 1, false, NULL);
    EXPECT_ERROR(s == NULL, "tg_multinomial: row 1 of probs of shape (2, 3) "
                            "has no positive weight");
    tg_release(p);
}

ERROR_CASE(tg_multinomial, no_categories, "probs has no categories (K = 0)")
{
    tg_tensor *p = tg_zeros(TG_SHAPE(0), TG_FLOAT64);
    tg_tensor *s = tg_multinomial(p, 2, true, NULL);
    EXPECT_ERROR(s == NULL, "tg_multinomial: probs of shape (0,) has no "
                            "positive weight");
    tg_release(p);
}

ERROR_CASE(tg_multinomial, out_of_memory_keys,
           "memory runs out for the keys (without replacement)")
{
    tg_tensor *p = tg_ones(TG_SHAPE(5), TG_FLOAT32);
    tg_fail_allocations_after(1); // the result is one allocation
    tg_tensor *s = tg_multinomial(p, 2, false, NULL);
    tg_fail_allocations_after(-1);
    EXPECT_ERROR(s == NULL, "tg_multinomial: out of memory for the keys of "
                            "5 categories");
    tg_release(p);
}

ERROR_CASE(tg_multinomial, out_of_memory_cdf,
           "memory runs out for the cumulative sums (with replacement)")
{
    tg_tensor *p = tg_ones(TG_SHAPE(5), TG_FLOAT32);
    tg_fail_allocations_after(1); // the result is one allocation
    tg_tensor *s = tg_multinomial(p, 2, true, NULL);
    tg_fail_allocations_after(-1);
    EXPECT_ERROR(s == NULL, "tg_multinomial: out of memory for the "
                            "cumulative sums of 5 categories");
    tg_release(p);
}

ERROR_CASE(tg_multinomial, null_tensor, "probs is NULL (an earlier call failed)")
{
    EXPECT_SILENT(tg_multinomial(NULL, 1, true, NULL) == NULL);
}

/* ---- printing ---- */

NEVER_FAILS(tg_get_print_options, "returns the current options");

ERROR_CASE(tg_set_print_options, bad_precision, "precision is outside [0, 100]")
{
    tg_print_options o = tg_get_print_options();
    o.precision = -1;
    tg_set_print_options(o);
    EXPECT_ERROR(tg_get_print_options().precision == 4,
                 "tg_set_print_options: precision is -1");
}

ERROR_CASE(tg_set_print_options, bad_sci_mode, "sci_mode is not -1, 0 or 1")
{
    tg_print_options o = tg_get_print_options();
    o.sci_mode = 2;
    tg_set_print_options(o);
    EXPECT_ERROR(tg_get_print_options().sci_mode == -1,
                 "tg_set_print_options: sci_mode is 2");
}

ERROR_CASE(tg_set_print_options, negative_threshold, "threshold is negative")
{
    tg_print_options o = tg_get_print_options();
    o.threshold = -1;
    tg_set_print_options(o);
    EXPECT_ERROR(tg_get_print_options().threshold == 1000,
                 "tg_set_print_options: threshold is -1");
}

ERROR_CASE(tg_set_print_options, zero_edgeitems, "edgeitems is below 1")
{
    tg_print_options o = tg_get_print_options();
    o.edgeitems = 0;
    tg_set_print_options(o);
    EXPECT_ERROR(tg_get_print_options().edgeitems == 3,
                 "tg_set_print_options: edgeitems is 0");
}

ERROR_CASE(tg_set_print_options, huge_edgeitems,
           "edgeitems is above INT64_MAX / 2 (2 * edgeitems would overflow)")
{
    tg_print_options o = tg_get_print_options();
    o.edgeitems = INT64_MAX;
    tg_set_print_options(o);
    EXPECT_ERROR(tg_get_print_options().edgeitems == 3,
                 "tg_set_print_options: edgeitems is 9223372036854775807");
}

ERROR_CASE(tg_set_print_options, zero_linewidth, "linewidth is below 1")
{
    tg_print_options o = tg_get_print_options();
    o.linewidth = 0;
    tg_set_print_options(o);
    EXPECT_ERROR(tg_get_print_options().linewidth == 80,
                 "tg_set_print_options: linewidth is 0");
}

ERROR_CASE(tg_format, out_of_memory, "memory runs out")
{
    tg_tensor *x = tg_zeros(TG_SHAPE(2, 3), TG_FLOAT32);
    tg_fail_allocations_after(0);
    char *s = tg_format(x);
    tg_fail_allocations_after(-1);
    EXPECT_ERROR(s == NULL, "tg_format: out of memory formatting a float32 "
                            "tensor of shape (2, 3)");
    tg_release(x);
}

ERROR_CASE(tg_format, null_tensor, "x is NULL (an earlier call failed)")
{
    EXPECT_SILENT(tg_format(NULL) == NULL);
}

ERROR_CASE(tg_fprint, null_file, "f is NULL")
{
    tg_tensor *x = tg_zeros(TG_SHAPE(2), TG_FLOAT32);
    EXPECT_ERROR(tg_fprint(NULL, x) == -1, "tg_fprint: the FILE is NULL");
    tg_release(x);
}

ERROR_CASE(tg_fprint, write_fails, "f is not open for writing")
{
    tg_tensor *x = tg_zeros(TG_SHAPE(2), TG_FLOAT32);
    FILE *f = fopen("/dev/null", "r");
    cr_assert_not_null(f);
    EXPECT_ERROR(tg_fprint(f, x) == -1,
                 "tg_fprint: cannot write to the stream");
    fclose(f);
    tg_release(x);
}

ERROR_CASE(tg_fprint, null_tensor, "x is NULL (an earlier call failed)")
{
    EXPECT_SILENT(tg_fprint(stdout, NULL) == -1);
}

ERROR_CASE(tg_print, null_tensor, "x is NULL (an earlier call failed)")
{
    EXPECT_SILENT(tg_print(NULL) == -1);
}

/* ---- kernels, threads ---- */

NEVER_FAILS(tg_get_kernels, "returns this thread's choice");

ERROR_CASE(tg_set_kernels, not_a_choice, "kernels is not a tg_kernels value")
{
    tg_kernels before = tg_get_kernels();
    EXPECT_ERROR(tg_set_kernels((tg_kernels)7) == -1 &&
                     tg_get_kernels() == before,
                 "tg_set_kernels: 7 is not a kernel choice");
}

NEVER_FAILS(tg_get_num_threads, "returns the process's setting");

ERROR_CASE(tg_set_num_threads, zero, "n is below 1")
{
    int before = tg_get_num_threads();
    EXPECT_ERROR(tg_set_num_threads(0) == -1 &&
                     tg_get_num_threads() == before,
                 "tg_set_num_threads: n is 0");
}

/* ---- .npy ---- */

ERROR_CASE(tg_save_npy, null_path, "path is NULL")
{
    tg_tensor *x = tg_zeros(TG_SHAPE(2), TG_FLOAT32);
    EXPECT_ERROR(tg_save_npy(NULL, x) == -1, "tg_save_npy: path is NULL");
    tg_release(x);
}

ERROR_CASE(tg_save_npy, no_such_folder, "the folder does not exist")
{
    tg_tensor *x = tg_zeros(TG_SHAPE(2), TG_FLOAT32);
    EXPECT_ERROR(tg_save_npy("no/such/folder/x.npy", x) == -1,
                 "tg_save_npy: cannot open 'no/such/folder/x.npy' for "
                 "writing: No such file or directory");
    tg_release(x);
}

ERROR_CASE(tg_save_npy, write_fails,
           "the file cannot be written whole (the disk is full)")
{
    /* A file size limit makes the writes fail as a full disk does. */
    char dir[32];
    enter_temp_dir(dir);
    signal(SIGXFSZ, SIG_IGN);
    struct rlimit lim = {64, 64};
    cr_assert_eq(setrlimit(RLIMIT_FSIZE, &lim), 0);
    tg_tensor *x = tg_zeros(TG_SHAPE(1000), TG_FLOAT64);
    EXPECT_ERROR(tg_save_npy("x.npy", x) == -1,
                 "tg_save_npy: cannot write 'x.npy': File too large");
    tg_release(x);
    leave_temp_dir(dir, "x.npy");
}

ERROR_CASE(tg_save_npy, special_file,
           "the path is a device, a FIFO or a folder, which a rename would "
           "remove")
{
    char dir[32];
    enter_temp_dir(dir);
    cr_assert_eq(mkfifo("p.npy", 0666), 0);
    tg_tensor *x = tg_zeros(TG_SHAPE(2), TG_FLOAT32);
    EXPECT_ERROR(tg_save_npy("p.npy", x) == -1,
                 "tg_save_npy: 'p.npy' exists and is not a regular file but "
                 "a FIFO (named pipe)");
    struct stat st;
    cr_assert_eq(lstat("p.npy", &st), 0);
    cr_assert(S_ISFIFO(st.st_mode), "the FIFO was replaced");
    tg_release(x);
    leave_temp_dir(dir, "p.npy");
}

ERROR_CASE(tg_save_npy, dangling_link, "the path is a link to nothing")
{
    char dir[32];
    enter_temp_dir(dir);
    cr_assert_eq(symlink("nowhere.npy", "x.npy"), 0);
    tg_tensor *x = tg_zeros(TG_SHAPE(2), TG_FLOAT32);
    EXPECT_ERROR(tg_save_npy("x.npy", x) == -1,
                 "tg_save_npy: 'x.npy' is a symbolic link to nothing");
    struct stat st;
    cr_assert_eq(lstat("x.npy", &st), 0);
    cr_assert(S_ISLNK(st.st_mode), "the link was replaced");
    tg_release(x);
    leave_temp_dir(dir, "x.npy");
}

ERROR_CASE(tg_save_npy, no_free_name,
           "every temporary name tried beside the file is taken")
{
    char dir[32];
    enter_temp_dir(dir);
    tg_tensor *x = tg_zeros(TG_SHAPE(2), TG_FLOAT32);
    /* The hook answers EEXIST to every creation, as if each name met a
     * file of another process. */
    tg_test_fail_io(TG_IO_CREATE, TG_TEST_IO_EVERY, EEXIST, false, -1);
    int rc = tg_save_npy("x.npy", x);
    tg_test_io_off();
    EXPECT_ERROR(rc == -1,
                 "tg_save_npy: cannot find a free temporary name beside "
                 "'x.npy'");
    tg_release(x);
    leave_temp_dir(dir, NULL);
}

ERROR_CASE(tg_save_npy, cannot_rename,
           "the new file cannot be renamed over the old one")
{
    char dir[32];
    enter_temp_dir(dir);
    tg_tensor *x = tg_zeros(TG_SHAPE(2), TG_FLOAT32);
    tg_test_fail_io(TG_IO_RENAME, 0, EIO, false, -1);
    int rc = tg_save_npy("x.npy", x);
    tg_test_io_off();
    EXPECT_ERROR(rc == -1,
                 "tg_save_npy: cannot rename the new file into place as "
                 "'x.npy': Input/output error");
    tg_release(x);
    leave_temp_dir(dir, NULL); // rmdir: the temporary file is gone too
}

ERROR_CASE(tg_save_npy, cannot_flush_folder,
           "the folder cannot be flushed after the rename")
{
    char dir[32];
    enter_temp_dir(dir);
    tg_tensor *x = tg_zeros(TG_SHAPE(2), TG_FLOAT32);
    tg_test_fail_io(TG_IO_SYNC, 1, EIO, false, -1); // the file's, then ".'s
    int rc = tg_save_npy("x.npy", x);
    tg_test_io_off();
    EXPECT_ERROR(rc == -1,
                 "tg_save_npy: wrote 'x.npy', but cannot flush its folder to "
                 "the disk: Input/output error");
    tg_release(x);
    leave_temp_dir(dir, "x.npy");
}

ERROR_CASE(tg_save_npy, out_of_memory, "memory runs out")
{
    char dir[32];
    enter_temp_dir(dir);
    tg_tensor *x = tg_zeros(TG_SHAPE(2), TG_FLOAT32);
    tg_fail_allocations_after(0);
    int rc = tg_save_npy("x.npy", x);
    tg_fail_allocations_after(-1);
    EXPECT_ERROR(rc == -1, "tg_save_npy: out of memory for a file name");
    tg_release(x);
    leave_temp_dir(dir, NULL);
}

ERROR_CASE(tg_save_npy, out_of_memory_temporary_name,
           "memory runs out making the temporary file's name")
{
    char dir[32];
    enter_temp_dir(dir);
    tg_tensor *x = tg_zeros(TG_SHAPE(2), TG_FLOAT32);
    tg_fail_allocations_after(1);
    int rc = tg_save_npy("x.npy", x);
    tg_fail_allocations_after(-1);
    EXPECT_ERROR(rc == -1,
                 "tg_save_npy: out of memory for the temporary file's name");
    tg_release(x);
    leave_temp_dir(dir, NULL);
}

ERROR_CASE(tg_save_npy, out_of_memory_writing,
           "memory runs out copying a non-contiguous tensor to write it")
{
    char dir[32];
    enter_temp_dir(dir);
    tg_tensor *a = tg_zeros(TG_SHAPE(2, 3), TG_FLOAT32);
    tg_tensor *x = tg_transpose(a, 0, 1);
    tg_fail_allocations_after(3); // the three names, then the copy
    int rc = tg_save_npy("x.npy", x);
    tg_fail_allocations_after(-1);
    EXPECT_ERROR(rc == -1, "tg_save_npy: out of memory writing 'x.npy'");
    tg_release(x);
    tg_release(a);
    leave_temp_dir(dir, NULL);
}

ERROR_NOT_TRIGGERED(tg_save_npy, "tg_save_npy: cannot follow the link '%s': %s",
                    "the link was followed by stat() a moment before; only "
                    "a race with another process can break it");
ERROR_NOT_TRIGGERED(tg_save_npy,
                    "tg_save_npy: cannot give the new '%s' the old one's "
                    "permissions: %s",
                    "chmod of a file this process has just created, to "
                    "permissions the same user's file has, does not fail "
                    "short of a race");

ERROR_CASE(tg_save_npy, null_tensor, "x is NULL (an earlier call failed)")
{
    EXPECT_SILENT(tg_save_npy("x.npy", NULL) == -1);
}

ERROR_CASE(tg_load_npy, null_path, "path is NULL")
{
    EXPECT_ERROR(tg_load_npy(NULL) == NULL, "tg_load_npy: path is NULL");
}

ERROR_CASE(tg_load_npy, missing_file, "the file does not exist")
{
    EXPECT_ERROR(tg_load_npy("no/such/file.npy") == NULL,
                 "tg_load_npy: cannot open 'no/such/file.npy': No such file "
                 "or directory");
}

ERROR_CASE(tg_load_npy, read_error,
           "the path is a folder, a FIFO or a device, not a regular file")
{
    EXPECT_ERROR(tg_load_npy("/") == NULL,
                 "tg_load_npy: cannot read '/': it is a folder, not a "
                 "regular file");
}

ERROR_CASE(tg_load_npy, header_too_long,
           "the header is longer than 65536 bytes")
{
    char dir[32];
    enter_temp_dir(dir);
    /* Version 2.0 (a 4-byte header length) with a 70,000-byte header. */
    static unsigned char buf[70016];
    memcpy(buf, "\x93NUMPY\x02\x00", 8);
    uint32_t hlen = 70000;
    for (int i = 0; i < 4; i++)
        buf[8 + i] = (unsigned char)(hlen >> (8 * i));
    memset(buf + 12, ' ', hlen);
    write_file("x.npy", buf, 12 + hlen);
    EXPECT_ERROR(tg_load_npy("x.npy") == NULL,
                 "tg_load_npy: cannot load 'x.npy': the header is 70000 "
                 "bytes long");
    leave_temp_dir(dir, "x.npy");
}

ERROR_CASE(tg_load_npy, out_of_memory, "memory runs out")
{
    char dir[32];
    enter_temp_dir(dir);
    unsigned char buf[256];
    write_file("x.npy", buf, npy_bytes(buf, 1, F4_2x3, 24));
    tg_fail_allocations_after(0);
    tg_tensor *x = tg_load_npy("x.npy");
    tg_fail_allocations_after(-1);
    EXPECT_ERROR(x == NULL, "tg_load_npy: cannot read 'x.npy': out of memory");
    leave_temp_dir(dir, "x.npy");
}

ERROR_CASE(tg_load_npy, not_npy, "the file is not a .npy file")
{
    char dir[32];
    enter_temp_dir(dir);
    write_file("x.npy", "PK\x03\x04 zip", 8);
    EXPECT_ERROR(tg_load_npy("x.npy") == NULL,
                 "tg_load_npy: cannot load 'x.npy': it does not start with "
                 "the .npy magic but with \"PK\\x03\\x04 z\"");
    leave_temp_dir(dir, "x.npy");
}

ERROR_CASE(tg_load_npy, corrupt_header, "the header dict is damaged")
{
    char dir[32];
    enter_temp_dir(dir);
    tg_tensor *x = load("x.npy", 1, "{'descr': '<f4', 'fortran_order' False}",
                        0);
    EXPECT_ERROR(x == NULL,
                 "tg_load_npy: cannot load 'x.npy': the header is not a valid "
                 "dict: expected ':' after a key at byte 33 of the header, "
                 "found 'F'");
    leave_temp_dir(dir, "x.npy");
}

ERROR_CASE(tg_load_npy, truncated_data, "the file is cut short in the data")
{
    char dir[32];
    enter_temp_dir(dir);
    tg_tensor *x = load("x.npy", 1, F4_2x3, 20);
    EXPECT_ERROR(x == NULL,
                 "tg_load_npy: cannot load 'x.npy': the data is 20 bytes, but "
                 "shape (2, 3) of '<f4' needs 24");
    leave_temp_dir(dir, "x.npy");
}

ERROR_CASE(tg_load_npy, unsupported_dtype, "the dtype is not f4, f8 or i8")
{
    char dir[32];
    enter_temp_dir(dir);
    tg_tensor *x = load("x.npy", 1, "{'descr': '<i4', 'fortran_order': False, "
                                    "'shape': (2,), }", 8);
    EXPECT_ERROR(x == NULL, "tg_load_npy: cannot load 'x.npy': the dtype "
                            "'<i4' is not supported");
    leave_temp_dir(dir, "x.npy");
}

ERROR_CASE(tg_load_npy, big_endian, "the data is big-endian")
{
    char dir[32];
    enter_temp_dir(dir);
    tg_tensor *x = load("x.npy", 1, "{'descr': '>f8', 'fortran_order': False, "
                                    "'shape': (2,), }", 16);
    EXPECT_ERROR(x == NULL, "tg_load_npy: cannot load 'x.npy': the dtype "
                            "'>f8' is big-endian");
    leave_temp_dir(dir, "x.npy");
}

ERROR_CASE(tg_load_npy, fortran_order, "the array is stored in Fortran order")
{
    char dir[32];
    enter_temp_dir(dir);
    tg_tensor *x = load("x.npy", 1, "{'descr': '<f4', 'fortran_order': True, "
                                    "'shape': (2, 3), }", 24);
    EXPECT_ERROR(x == NULL, "tg_load_npy: cannot load 'x.npy': the array is "
                            "stored in Fortran order (fortran_order: True)");
    leave_temp_dir(dir, "x.npy");
}

ERROR_CASE(tg_load_npy, version_4, "the format version is not 1.0, 2.0 or 3.0")
{
    char dir[32];
    enter_temp_dir(dir);
    tg_tensor *x = load("x.npy", 4, F4_2x3, 24);
    EXPECT_ERROR(x == NULL, "tg_load_npy: cannot load 'x.npy': its format "
                            "version 4.0 is not supported");
    leave_temp_dir(dir, "x.npy");
}

ERROR_CASE(tg_npy_parse, null_bytes, "bytes is NULL but nbytes is not 0")
{
    EXPECT_ERROR(tg_npy_parse(NULL, 10, "m.npy") == NULL,
                 "tg_npy_parse: bytes is NULL but nbytes is 10");
}

ERROR_CASE(tg_npy_parse, empty, "there are no bytes at all")
{
    EXPECT_ERROR(tg_npy_parse("", 0, "m.npy") == NULL,
                 "tg_npy_parse: cannot load 'm.npy': the file is empty");
}

ERROR_CASE(tg_npy_parse, bad_magic, "the bytes do not start with \\x93NUMPY")
{
    EXPECT_ERROR(tg_npy_parse("col1,col2\n", 10, NULL) == NULL,
                 "tg_npy_parse: cannot load '(memory)': it does not start "
                 "with the .npy magic but with \"col1,c\"");
}

ERROR_CASE(tg_npy_parse, cut_in_version, "the bytes end inside the version")
{
    EXPECT_ERROR(tg_npy_parse("\x93NUMPY\x01", 7, "m.npy") == NULL,
                 "tg_npy_parse: cannot load 'm.npy': the file ends after 7 "
                 "bytes, inside the magic and version");
}

ERROR_CASE(tg_npy_parse, unsupported_version,
           "the format version is not 1.0, 2.0 or 3.0")
{
    EXPECT_ERROR(tg_npy_parse("\x93NUMPY\x02\x01\0\0\0\0", 12, "m.npy") ==
                     NULL,
                 "tg_npy_parse: cannot load 'm.npy': its format version 2.1 "
                 "is not supported");
}

ERROR_CASE(tg_npy_parse, cut_in_header_length,
           "the bytes end inside the header length")
{
    EXPECT_ERROR(tg_npy_parse("\x93NUMPY\x02\x00\x10\x00", 10, "m.npy") ==
                     NULL,
                 "tg_npy_parse: cannot load 'm.npy': the file ends after 10 "
                 "bytes, inside the header length");
}

ERROR_CASE(tg_npy_parse, header_length_too_big,
           "the header length is more than the bytes that follow")
{
    EXPECT_ERROR(tg_npy_parse("\x93NUMPY\x01\x00\xff\x00{}", 12, "m.npy") ==
                     NULL,
                 "tg_npy_parse: cannot load 'm.npy': the header length field "
                 "says 255 bytes but only 2 bytes follow it");
}

ERROR_CASE(tg_npy_parse, syntax_error, "the header is not a Python dict")
{
    tg_tensor *x = parse(1, "['descr', '<f4']", 0);
    EXPECT_ERROR(x == NULL,
                 "tg_npy_parse: cannot load 'm.npy': the header is not a valid "
                 "dict: expected '{' (the header starts with a dict) at byte 0 "
                 "of the header, found '['");
}

ERROR_CASE(tg_npy_parse, unexpected_key, "the header has a key other than "
                                         "descr, fortran_order and shape")
{
    tg_tensor *x = parse(1, "{'descr': '<f4', 'order': 'C'}", 0);
    EXPECT_ERROR(x == NULL, "tg_npy_parse: cannot load 'm.npy': the header "
                            "has an unexpected key 'order'");
}

ERROR_CASE(tg_npy_parse, key_twice, "the header has a key twice")
{
    tg_tensor *x = parse(1, "{'descr': '<f4', 'descr': '<f8'}", 0);
    EXPECT_ERROR(x == NULL, "tg_npy_parse: cannot load 'm.npy': the header "
                            "has the key 'descr' twice");
}

ERROR_CASE(tg_npy_parse, structured_dtype,
           "the dtype is a structure (a list of fields)")
{
    tg_tensor *x = parse(1, "{'descr': [('x', '<f4')], 'fortran_order': "
                            "False, 'shape': (2,), }", 8);
    EXPECT_ERROR(x == NULL, "tg_npy_parse: cannot load 'm.npy': the array has "
                            "a structured dtype (its 'descr' is a list of "
                            "fields)");
}

ERROR_CASE(tg_npy_parse, text_after_dict,
           "the header goes on after the dict")
{
    tg_tensor *x = parse(1, F4_2x3 " x", 24);
    EXPECT_ERROR(x == NULL, "tg_npy_parse: cannot load 'm.npy': the header "
                            "has 'x' after the dict, at byte 60 of 62");
}

ERROR_CASE(tg_npy_parse, missing_key, "the header lacks a key")
{
    tg_tensor *x = parse(1, "{'descr': '<f4', 'fortran_order': False}", 0);
    EXPECT_ERROR(x == NULL, "tg_npy_parse: cannot load 'm.npy': the header "
                            "has no key 'shape'");
}

ERROR_CASE(tg_npy_parse, big_endian, "the data is big-endian")
{
    tg_tensor *x = parse(1, "{'descr': '>i8', 'fortran_order': False, "
                            "'shape': (), }", 8);
    EXPECT_ERROR(x == NULL, "tg_npy_parse: cannot load 'm.npy': the dtype "
                            "'>i8' is big-endian");
}

ERROR_CASE(tg_npy_parse, unsupported_dtype, "the dtype is not f4, f8 or i8")
{
    tg_tensor *x = parse(1, "{'descr': '|b1', 'fortran_order': False, "
                            "'shape': (3,), }", 3);
    EXPECT_ERROR(x == NULL, "tg_npy_parse: cannot load 'm.npy': the dtype "
                            "'|b1' is not supported");
}

ERROR_CASE(tg_npy_parse, fortran_order, "the array is stored in Fortran order")
{
    tg_tensor *x = parse(3, "{'descr': '<f8', 'fortran_order': True, "
                            "'shape': (2, 2), }", 32);
    EXPECT_ERROR(x == NULL, "tg_npy_parse: cannot load 'm.npy': the array is "
                            "stored in Fortran order (fortran_order: True)");
}

ERROR_CASE(tg_npy_parse, too_many_dims, "the shape has more than 8 dims")
{
    tg_tensor *x = parse(1, "{'descr': '<f4', 'fortran_order': False, "
                            "'shape': (1, 1, 1, 1, 1, 1, 1, 1, 1), }", 4);
    EXPECT_ERROR(x == NULL, "tg_npy_parse: cannot load 'm.npy': the shape "
                            "(1, 1, 1, 1, 1, 1, 1, 1, 1) has 9 dims");
}

ERROR_CASE(tg_npy_parse, leading_zeros,
           "a size in the shape has leading zeros, which Python refuses")
{
    const char dict[] = "{'descr': '<f4', 'fortran_order': False, "
                        "'shape': (0002, 3), }";
    unsigned char buf[256];
    size_t n = npy_bytes(buf, 1, dict, 24);
    EXPECT_ERROR(tg_npy_parse(buf, n, "m.npy") == NULL,
                 "tg_npy_parse: cannot load 'm.npy': the header is not a "
                 "valid dict: expected a size without leading zeros in "
                 "'shape' at byte 51 of the header, found '0'");
}

ERROR_CASE(tg_npy_parse, negative_size, "a size in the shape is negative")
{
    tg_tensor *x = parse(1, "{'descr': '<f4', 'fortran_order': False, "
                            "'shape': (2, -3), }", 0);
    EXPECT_ERROR(x == NULL, "tg_npy_parse: cannot load 'm.npy': the shape "
                            "(2, -3) has a size at dim 1 that is negative");
}

ERROR_CASE(tg_npy_parse, size_overflows,
           "a size in the shape does not fit in int64")
{
    tg_tensor *x = parse(1, "{'descr': '<f4', 'fortran_order': False, "
                            "'shape': (99999999999999999999,), }", 0);
    EXPECT_ERROR(x == NULL, "tg_npy_parse: cannot load 'm.npy': the shape "
                            "(99999999999999999999,) has a size at dim 0 that "
                            "overflows int64");
}

ERROR_CASE(tg_npy_parse, too_many_elements,
           "the product of the sizes is 2^59 or more")
{
    tg_tensor *x = parse(1, "{'descr': '<f4', 'fortran_order': False, "
                            "'shape': (1073741824, 1073741824), }", 0);
    EXPECT_ERROR(x == NULL, "tg_npy_parse: cannot load 'm.npy': the shape "
                            "(1073741824, 1073741824) has too many elements");
}

ERROR_CASE(tg_npy_parse, extra_data,
           "there are more bytes after the data than the shape needs")
{
    tg_tensor *x = parse(1, F4_2x3, 48);
    EXPECT_ERROR(x == NULL, "tg_npy_parse: cannot load 'm.npy': the data is "
                            "48 bytes, but shape (2, 3) of '<f4' needs 24");
}
