/*
 * tests/errors/catalogue_nn.c - the errors of nn/nn.h, one ERROR_CASE per
 * row of docs/errors.md (see catalogue.h), in the order of the header's
 * sections.
 *
 * A NULL module, optimiser or batch iterator is treated like a NULL
 * tensor: it comes from a constructor that failed and reported, so the
 * functions that receive one fail without a second message. The
 * checkpoint rows work inside a fresh folder made by mkdtemp under /tmp
 * (entered with chdir, so the paths in the messages are short and fixed)
 * and remove it at the end.
 */
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L // mkdtemp, chdir, getcwd, opendir, rmdir, mkfifo
#endif

#include "catalogue.h"

#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

/* A module type with no layer of its own, to register tensors in. */
static tg_tensor *bare_forward(tg_module *m, const tg_tensor *x)
{
    (void)m;
    return tg_retain((tg_tensor *)x);
}

static const tg_module_type bare_type = {"Bare", bare_forward, NULL, 0};

/* A float32 leaf (n,) of ones that requires grad. */
static tg_tensor *param(int64_t n)
{
    tg_tensor *p = tg_ones(TG_SHAPE(n), TG_FLOAT32);
    tg_set_requires_grad(p, true);
    return p;
}

/* A dataset of 6 rows of 2 features, labels 0 and 1. */
static tg_dataset toy(void)
{
    tg_dataset d;
    cr_assert_eq(tg_make_blobs(3, 2, 0.1, NULL, &d), 0);
    return d;
}

/* ------------------------------------------------- a scratch folder */

static char scratch[64];
static char home[4096];

/* rm -r path (files and folders only: what these rows make). */
static void remove_tree(const char *path)
{
    DIR *d = opendir(path);
    if (!d) {
        unlink(path);
        return;
    }
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
            continue;
        char sub[4096];
        snprintf(sub, sizeof sub, "%s/%s", path, e->d_name);
        remove_tree(sub);
    }
    closedir(d);
    rmdir(path);
}

static void scratch_enter(void)
{
    cr_assert_not_null(getcwd(home, sizeof home));
    snprintf(scratch, sizeof scratch, "/tmp/tg_errors_XXXXXX");
    cr_assert_not_null(mkdtemp(scratch), "mkdtemp failed");
    cr_assert_eq(chdir(scratch), 0);
}

static void scratch_leave(void)
{
    cr_assert_eq(chdir(home), 0);
    remove_tree(scratch);
}

/* An empty file at path. */
static void touch(const char *path)
{
    FILE *f = fopen(path, "w");
    cr_assert_not_null(f, "cannot create %s", path);
    fclose(f);
}

/* The scratch folder holds no temporary file or folder of a save. */
static void assert_no_leftovers(void)
{
    DIR *d = opendir(".");
    cr_assert_not_null(d);
    struct dirent *e;
    while ((e = readdir(d)) != NULL)
        cr_assert_null(strstr(e->d_name, ".tg-"), "left behind: %s",
                       e->d_name);
    closedir(d);
}

/* Saves Linear(2, 3, bias) to "ck". */
static void save_linear(bool bias)
{
    tg_module *m = tg_linear_new(2, 3, bias);
    cr_assert_eq(tg_module_save(m, "ck"), 0, "%s", tg_last_error());
    tg_module_free(m);
}

/* ---- modules ---- */

ERROR_CASE(tg_module_new, bad_type,
           "the type is NULL or lacks a name or a forward")
{
    static const tg_module_type nameless = {NULL, bare_forward, NULL, 0};
    EXPECT_ERROR(tg_module_new(&nameless) == NULL,
                 "tg_module_new: the module type is NULL or has no name or "
                 "forward");
}

ERROR_CASE(tg_module_new, out_of_memory, "memory runs out")
{
    tg_fail_allocations_after(0);
    tg_module *m = tg_module_new(&bare_type);
    tg_fail_allocations_after(-1);
    EXPECT_ERROR(m == NULL, "tg_module_new: out of memory");
}

NEVER_FAILS(tg_module_free, "does nothing for NULL");
NEVER_FAILS(tg_module_data, "answers NULL for NULL or data_size 0");
NEVER_FAILS(tg_module_data_const, "answers NULL for NULL or data_size 0");
NEVER_FAILS(tg_module_get_type, "answers NULL for NULL");

ERROR_CASE(tg_module_add_parameter, integer_tensor,
           "the parameter is an int64 tensor")
{
    tg_module *m = tg_module_new(&bare_type);
    tg_tensor *t = tg_zeros(TG_SHAPE(3), TG_INT64);
    EXPECT_ERROR(tg_module_add_parameter(m, "w", t) == -1,
                 "tg_module_add_parameter: parameter \"w\" is int64");
    tg_release(t);
    tg_module_free(m);
}

ERROR_CASE(tg_module_add_parameter, not_a_leaf,
           "the parameter was computed by an op")
{
    tg_module *m = tg_module_new(&bare_type);
    tg_tensor *p = param(3);
    tg_tensor *t = tg_mul_scalar(p, 2.0);
    EXPECT_ERROR(tg_module_add_parameter(m, "w", t) == -1,
                 "tg_module_add_parameter: parameter \"w\" was made by an op "
                 "(MulBackward0)");
    tg_release(t);
    tg_release(p);
    tg_module_free(m);
}

ERROR_CASE(tg_module_add_parameter, bad_name,
           "the name is empty, too long or has a '.'")
{
    tg_module *m = tg_module_new(&bare_type);
    tg_tensor *p = param(3);
    EXPECT_ERROR(tg_module_add_parameter(m, "layer.w", p) == -1,
                 "tg_module_add_parameter: invalid parameter name "
                 "\"layer.w\"");
    tg_release(p);
    tg_module_free(m);
}

ERROR_CASE(tg_module_add_parameter, not_a_file_name,
           "the name has a '/' or a control character, so a checkpoint "
           "could not save it")
{
    tg_module *m = tg_module_new(&bare_type);
    tg_tensor *p = param(3);
    EXPECT_ERROR(tg_module_add_parameter(m, "in/out", p) == -1,
                 "tg_module_add_parameter: invalid parameter name "
                 "\"in/out\"");
    cr_assert_eq(tg_module_add_parameter(m, "a\nb", p), -1);
    cr_assert_eq(tg_module_add_buffer(m, "tab\there", p), -1);
    cr_assert_eq(tg_module_add_parameter(m, "fine_name", p), 0);
    tg_release(p);
    tg_module_free(m);
}

ERROR_CASE(tg_module_add_parameter, expanded_view,
           "the tensor is an expanded view (a dim of stride 0)")
{
    tg_module *m = tg_module_new(&bare_type);
    tg_tensor *one = tg_zeros(TG_SHAPE(1), TG_FLOAT32);
    tg_tensor *t = tg_expand(one, TG_SHAPE(4));
    EXPECT_ERROR(tg_module_add_parameter(m, "w", t) == -1,
                 "tg_module_add_parameter: parameter \"w\" is an expanded "
                 "view of shape (4,) (dim 0 has stride 0)");
    tg_release(t);
    tg_release(one);
    tg_module_free(m);
}

ERROR_CASE(tg_module_add_parameter, duplicate_name,
           "the module already has something of that name")
{
    tg_module *m = tg_linear_new(2, 3, true);
    tg_tensor *p = param(3);
    EXPECT_ERROR(tg_module_add_parameter(m, "bias", p) == -1,
                 "tg_module_add_parameter: Linear already has something "
                 "named \"bias\"");
    tg_release(p);
    tg_module_free(m);
}

ERROR_CASE(tg_module_add_parameter, out_of_memory, "memory runs out")
{
    tg_module *m = tg_module_new(&bare_type);
    tg_tensor *p = param(3);
    tg_fail_allocations_after(0);
    int rc = tg_module_add_parameter(m, "w", p);
    tg_fail_allocations_after(-1);
    EXPECT_ERROR(rc == -1, "tg_module_add_parameter: out of memory");
    tg_release(p);
    tg_module_free(m);
}

ERROR_CASE(tg_module_add_parameter, null_tensor,
           "the tensor is NULL (an earlier call failed)")
{
    tg_module *m = tg_module_new(&bare_type);
    EXPECT_SILENT(tg_module_add_parameter(m, "w", NULL) == -1);
    tg_module_free(m);
}

ERROR_CASE(tg_module_add_parameter, null_module,
           "the module is NULL (its constructor failed)")
{
    tg_tensor *p = param(3);
    EXPECT_SILENT(tg_module_add_parameter(NULL, "w", p) == -1);
    tg_release(p);
}

ERROR_CASE(tg_module_add_buffer, requires_grad,
           "the buffer requires grad")
{
    tg_module *m = tg_module_new(&bare_type);
    tg_tensor *p = param(3);
    EXPECT_ERROR(tg_module_add_buffer(m, "stats", p) == -1,
                 "tg_module_add_buffer: buffer \"stats\" requires grad");
    tg_release(p);
    tg_module_free(m);
}

ERROR_CASE(tg_module_add_buffer, bad_name,
           "the name is empty, too long or has a '.'")
{
    tg_module *m = tg_module_new(&bare_type);
    tg_tensor *t = tg_zeros(TG_SHAPE(3), TG_FLOAT32);
    EXPECT_ERROR(tg_module_add_buffer(m, "", t) == -1,
                 "tg_module_add_buffer: invalid buffer name \"\"");
    tg_release(t);
    tg_module_free(m);
}

ERROR_CASE(tg_module_add_buffer, duplicate_name,
           "the module already has something of that name")
{
    tg_module *m = tg_batch_norm1d_new(3, NULL);
    tg_tensor *t = tg_zeros(TG_SHAPE(3), TG_FLOAT32);
    EXPECT_ERROR(tg_module_add_buffer(m, "running_mean", t) == -1,
                 "tg_module_add_buffer: BatchNorm1d already has something "
                 "named \"running_mean\"");
    tg_release(t);
    tg_module_free(m);
}

ERROR_CASE(tg_module_add_buffer, null_tensor,
           "the tensor is NULL (an earlier call failed)")
{
    tg_module *m = tg_module_new(&bare_type);
    EXPECT_SILENT(tg_module_add_buffer(m, "stats", NULL) == -1);
    tg_module_free(m);
}

ERROR_CASE(tg_module_add_child, already_has_parent,
           "the child already belongs to another module")
{
    tg_module *a = tg_module_new(&bare_type);
    tg_module *b = tg_module_new(&bare_type);
    tg_module *child = tg_relu_new();
    cr_assert_eq(tg_module_add_child(a, "act", child), 0);
    EXPECT_ERROR(tg_module_add_child(b, "act", child) == -1,
                 "tg_module_add_child: ReLU \"act\" is already a child of "
                 "another module");
    tg_module_free(b);
    tg_module_free(a);
}

ERROR_CASE(tg_module_add_child, cycle,
           "the child is the module itself, or contains it")
{
    tg_module *a = tg_module_new(&bare_type);
    EXPECT_ERROR(tg_module_add_child(a, "me", a) == -1,
                 "tg_module_add_child: Bare \"me\" cannot be a child of "
                 "itself");
    tg_module_free(a);
}

ERROR_CASE(tg_module_add_child, bad_name,
           "the name is empty, too long or has a '.'")
{
    tg_module *a = tg_module_new(&bare_type);
    EXPECT_ERROR(tg_module_add_child(a, NULL, tg_relu_new()) == -1,
                 "tg_module_add_child: invalid child name \"(null)\"");
    tg_module_free(a);
}

ERROR_CASE(tg_module_add_child, duplicate_name,
           "the module already has something of that name")
{
    tg_module *a = tg_module_new(&bare_type);
    cr_assert_eq(tg_module_add_child(a, "act", tg_relu_new()), 0);
    EXPECT_ERROR(tg_module_add_child(a, "act", tg_tanh_new()) == -1,
                 "tg_module_add_child: Bare already has something named "
                 "\"act\"");
    tg_module_free(a);
}

ERROR_CASE(tg_module_add_child, null_child,
           "the child is NULL (its constructor failed)")
{
    tg_module *a = tg_module_new(&bare_type);
    EXPECT_SILENT(tg_module_add_child(a, "act", NULL) == -1);
    tg_module_free(a);
}

ERROR_CASE(tg_module_add_child, null_module,
           "the module is NULL (its constructor failed); the child is freed")
{
    EXPECT_SILENT(tg_module_add_child(NULL, "act", tg_relu_new()) == -1);
}

ERROR_CASE(tg_module_forward, linear_in_features,
           "the input's last dim is not the Linear layer's in_features")
{
    tg_module *m = tg_linear_new(2, 3, true);
    tg_tensor *x = tg_ones(TG_SHAPE(4, 5), TG_FLOAT32);
    EXPECT_ERROR(tg_module_forward(m, x) == NULL,
                 "tg_module_forward: Linear(in_features=2, out_features=3) "
                 "got an input of shape (4, 5)");
    tg_release(x);
    tg_module_free(m);
}

ERROR_CASE(tg_module_forward, linear_scalar_input,
           "a Linear layer gets a 0-d input")
{
    tg_module *m = tg_linear_new(2, 3, true);
    tg_tensor *x = tg_scalar(1.0, TG_FLOAT32);
    EXPECT_ERROR(tg_module_forward(m, x) == NULL,
                 "tg_module_forward: Linear(in_features=2, out_features=3) "
                 "got a 0-d input");
    tg_release(x);
    tg_module_free(m);
}

ERROR_CASE(tg_module_forward, linear_dtype,
           "the input's dtype is not the Linear layer's")
{
    tg_module *m = tg_linear_new(2, 3, true);
    tg_tensor *x = tg_ones(TG_SHAPE(4, 2), TG_FLOAT64);
    EXPECT_ERROR(tg_module_forward(m, x) == NULL,
                 "tg_module_forward: Linear's weight is float32 but the "
                 "input is float64");
    tg_release(x);
    tg_module_free(m);
}

ERROR_CASE(tg_module_forward, dropout_integer_input,
           "a Dropout layer gets an int64 input")
{
    tg_module *m = tg_dropout_new(0.5);
    tg_tensor *x = tg_ones(TG_SHAPE(3), TG_INT64);
    EXPECT_ERROR(tg_module_forward(m, x) == NULL,
                 "tg_module_forward: Dropout got an int64 input of shape "
                 "(3,)");
    tg_release(x);
    tg_module_free(m);
}

ERROR_CASE(tg_module_forward, batch_norm_dims,
           "a BatchNorm layer gets an input with the wrong number of dims")
{
    tg_module *m = tg_batch_norm1d_new(3, NULL);
    tg_tensor *x = tg_ones(TG_SHAPE(3), TG_FLOAT32);
    EXPECT_ERROR(tg_module_forward(m, x) == NULL,
                 "tg_module_forward: BatchNorm1d expected 2D or 3D input, "
                 "got shape (3,) (1 dim)");
    tg_release(x);
    tg_module_free(m);
}

ERROR_CASE(tg_module_forward, batch_norm_count_full,
           "a BatchNorm layer in training has a num_batches_tracked of "
           "INT64_MAX or below 0 (a damaged checkpoint); the running "
           "statistics do not move")
{
    tg_module *m = tg_batch_norm1d_new(3, NULL);
    tg_data_i64(tg_module_buffer(m, "num_batches_tracked"))[0] = INT64_MAX;
    tg_tensor *x = tg_zeros(TG_SHAPE(4, 3), TG_FLOAT32);
    EXPECT_ERROR(tg_module_forward(m, x) == NULL,
                 "tg_module_forward: BatchNorm1d's num_batches_tracked is "
                 "9223372036854775807 and cannot count this batch");
    tg_release(x);
    tg_module_free(m);
}

ERROR_CASE(tg_module_forward, batch_norm_channels,
           "the input's dim 1 is not the BatchNorm layer's num_features")
{
    tg_module *m = tg_batch_norm1d_new(3, NULL);
    tg_tensor *x = tg_ones(TG_SHAPE(4, 5), TG_FLOAT32);
    EXPECT_ERROR(tg_module_forward(m, x) == NULL,
                 "tg_batch_norm: running_mean of shape (3,) does not "
                 "match the 5 channels of the input of shape (4, 5)");
    tg_release(x);
    tg_module_free(m);
}

ERROR_CASE(tg_module_forward, batch_norm_one_value,
           "a BatchNorm layer trains on one value per channel")
{
    tg_module *m = tg_batch_norm1d_new(3, NULL);
    tg_tensor *x = tg_ones(TG_SHAPE(1, 3), TG_FLOAT32);
    EXPECT_ERROR(tg_module_forward(m, x) == NULL,
                 "tg_batch_norm: expected more than 1 value per channel "
                 "when training, got input of shape (1, 3)");
    tg_release(x);
    tg_module_free(m);
}

ERROR_CASE(tg_module_forward, layer_norm_shape,
           "the input does not end with the LayerNorm's normalized_shape")
{
    tg_module *m = tg_layer_norm_new(TG_SHAPE(4), 1e-5, true);
    tg_tensor *x = tg_ones(TG_SHAPE(2, 5), TG_FLOAT32);
    EXPECT_ERROR(tg_module_forward(m, x) == NULL,
                 "tg_layer_norm: the input of shape (2, 5) does not end "
                 "with normalized_shape (4,)");
    tg_release(x);
    tg_module_free(m);
}

ERROR_CASE(tg_module_forward, null_input,
           "x is NULL (an earlier call failed)")
{
    tg_module *m = tg_relu_new();
    EXPECT_SILENT(tg_module_forward(m, NULL) == NULL);
    tg_module_free(m);
}

ERROR_CASE(tg_module_forward, null_module,
           "the module is NULL (its constructor failed)")
{
    tg_tensor *x = tg_ones(TG_SHAPE(3), TG_FLOAT32);
    EXPECT_SILENT(tg_module_forward(NULL, x) == NULL);
    tg_release(x);
}

ERROR_CASE(tg_module_forward, embedding_index_out_of_range,
           "an Embedding gets an index outside [0, num_embeddings), "
           "negative ones included")
{
    tg_module *m = tg_embedding_new(27, 10);
    tg_tensor *x = tg_full(TG_SHAPE(2, 3), 27, TG_INT64);
    EXPECT_ERROR(tg_module_forward(m, x) == NULL,
                 "tg_module_forward: Embedding(27, 10) got index 27");
    tg_release(x);
    tg_module_free(m);
}

ERROR_CASE(tg_module_forward, embedding_float_input,
           "an Embedding gets float indices")
{
    tg_module *m = tg_embedding_new(27, 10);
    tg_tensor *x = tg_zeros(TG_SHAPE(2, 3), TG_FLOAT32);
    EXPECT_ERROR(tg_module_forward(m, x) == NULL,
                 "tg_module_forward: Embedding(27, 10) got a float32 input "
                 "of shape (2, 3)");
    tg_release(x);
    tg_module_free(m);
}

ERROR_CASE(tg_module_forward, flatten_dims,
           "a Flatten's start_dim or end_dim is not a dim of the input, or "
           "start_dim comes after end_dim")
{
    tg_module *m = tg_flatten_new(1, -1);
    tg_tensor *x = tg_zeros(TG_SHAPE(5), TG_FLOAT32);
    EXPECT_ERROR(tg_module_forward(m, x) == NULL,
                 "tg_module_forward: Flatten(start_dim=1, end_dim=-1) got an "
                 "input of shape (5,)");
    tg_release(x);
    tg_module_free(m);
}

ERROR_CASE(tg_module_forward, instance_norm_dims,
           "an InstanceNorm1d or InstanceNorm2d input has the wrong number "
           "of dims")
{
    tg_module *m = tg_instance_norm2d_new(3, 1e-5, 0.1, false, false);
    tg_tensor *x = tg_zeros(TG_SHAPE(2, 3), TG_FLOAT32);
    EXPECT_ERROR(tg_module_forward(m, x) == NULL,
                 "tg_module_forward: InstanceNorm2d takes 3D or 4D input, "
                 "got shape (2, 3) (2 dims)");
    tg_release(x);
    tg_module_free(m);
}

NEVER_FAILS(tg_module_train, "does nothing for NULL");
NEVER_FAILS(tg_module_is_training, "answers false for NULL");

ERROR_CASE(tg_module_parameter, no_such_name,
           "no parameter has that dotted name")
{
    tg_module *m = tg_linear_new(2, 3, true);
    EXPECT_ERROR(tg_module_parameter(m, "weights") == NULL,
                 "tg_module_parameter: no parameter \"weights\"");
    tg_module_free(m);
}

ERROR_CASE(tg_module_parameter, null_name, "the name is NULL")
{
    tg_module *m = tg_linear_new(2, 3, true);
    EXPECT_ERROR(tg_module_parameter(m, NULL) == NULL,
                 "tg_module_parameter: the name is NULL");
    tg_module_free(m);
}

ERROR_CASE(tg_module_parameter, null_module,
           "the module is NULL (an earlier call failed)")
{
    EXPECT_SILENT(tg_module_parameter(NULL, "weight") == NULL);
}

ERROR_CASE(tg_module_buffer, no_such_name, "no buffer has that dotted name")
{
    tg_module *m = tg_batch_norm1d_new(3, NULL);
    EXPECT_ERROR(tg_module_buffer(m, "weight") == NULL,
                 "tg_module_buffer: no buffer \"weight\"");
    tg_module_free(m);
}

ERROR_CASE(tg_module_child, no_such_name, "no child has that dotted name")
{
    tg_module *m = TG_SEQUENTIAL(tg_relu_new(), tg_tanh_new());
    EXPECT_ERROR(tg_module_child(m, "2") == NULL,
                 "tg_module_child: no child \"2\"");
    tg_module_free(m);
}

NEVER_FAILS(tg_module_num_children, "returns a count (0 for NULL)");

ERROR_CASE(tg_module_child_at, out_of_range,
           "the index is not that of a child")
{
    tg_module *m = TG_SEQUENTIAL(tg_relu_new(), tg_tanh_new());
    EXPECT_ERROR(tg_module_child_at(m, 2) == NULL,
                 "tg_module_child_at: no child 2 in Sequential");
    tg_module_free(m);
}

ERROR_CASE(tg_module_named_parameters, out_of_memory, "memory runs out")
{
    tg_module *m = tg_linear_new(2, 3, true);
    tg_fail_allocations_after(0);
    int n = tg_module_named_parameters(m, NULL, 0);
    tg_fail_allocations_after(-1);
    EXPECT_ERROR(n == -1, "tg_module_named_parameters: out of memory");
    tg_module_free(m);
}

ERROR_CASE(tg_module_named_parameters, null_module,
           "the module is NULL (an earlier call failed)")
{
    EXPECT_SILENT(tg_module_named_parameters(NULL, NULL, 0) == -1);
}

ERROR_CASE(tg_module_named_buffers, out_of_memory, "memory runs out")
{
    tg_module *m = tg_batch_norm1d_new(3, NULL);
    tg_fail_allocations_after(0);
    int n = tg_module_named_buffers(m, NULL, 0);
    tg_fail_allocations_after(-1);
    EXPECT_ERROR(n == -1, "tg_module_named_buffers: out of memory");
    tg_module_free(m);
}

ERROR_CASE(tg_module_num_elements, out_of_memory, "memory runs out")
{
    tg_module *m = tg_linear_new(2, 3, true);
    tg_fail_allocations_after(0);
    int64_t n = tg_module_num_elements(m);
    tg_fail_allocations_after(-1);
    EXPECT_ERROR(n == -1, "tg_module_num_elements: out of memory");
    tg_module_free(m);
}

NEVER_FAILS(tg_module_zero_grad, "does nothing for NULL");

ERROR_CASE(tg_module_to_dtype, integer_dtype, "the dtype is int64")
{
    tg_module *m = tg_linear_new(2, 3, true);
    EXPECT_ERROR(tg_module_to_dtype(m, TG_INT64) == -1,
                 "tg_module_to_dtype: cannot convert Linear to int64");
    tg_module_free(m);
}

ERROR_CASE(tg_module_to_dtype, out_of_memory, "memory runs out")
{
    tg_module *m = tg_linear_new(2, 3, true);
    tg_fail_allocations_after(0);
    int rc = tg_module_to_dtype(m, TG_FLOAT64);
    tg_fail_allocations_after(-1);
    EXPECT_ERROR(rc == -1, "tg_module_to_dtype: out of memory");
    tg_module_free(m);
}

ERROR_CASE(tg_module_to_dtype, null_module,
           "the module is NULL (an earlier call failed)")
{
    EXPECT_SILENT(tg_module_to_dtype(NULL, TG_FLOAT64) == -1);
}

ERROR_CASE(tg_module_format, out_of_memory, "memory runs out")
{
    tg_module *m = tg_linear_new(2, 3, true);
    tg_fail_allocations_after(0);
    char *s = tg_module_format(m);
    tg_fail_allocations_after(-1);
    EXPECT_ERROR(s == NULL, "tg_module_format: out of memory");
    tg_module_free(m);
}

ERROR_CASE(tg_module_format, null_module,
           "the module is NULL (an earlier call failed)")
{
    EXPECT_SILENT(tg_module_format(NULL) == NULL);
}

ERROR_CASE(tg_module_print, out_of_memory,
           "memory runs out (the message names tg_module_format)")
{
    tg_module *m = tg_linear_new(2, 3, true);
    tg_fail_allocations_after(0);
    int rc = tg_module_print(m);
    tg_fail_allocations_after(-1);
    EXPECT_ERROR(rc == -1, "tg_module_format: out of memory");
    tg_module_free(m);
}

ERROR_CASE(tg_module_print, null_module,
           "the module is NULL (an earlier call failed)")
{
    EXPECT_SILENT(tg_module_print(NULL) == -1);
}

/* ---- normalisation ---- */

ERROR_CASE(tg_layer_norm_new, no_dims, "normalized_shape has 0 dims")
{
    EXPECT_ERROR(tg_layer_norm_new((int64_t[]){4}, 0, 1e-5, true) == NULL,
                 "tg_layer_norm_new: normalized_shape has 0 dims");
}

ERROR_CASE(tg_layer_norm_new, null_shape,
           "normalized_shape is NULL but ndim is not 0")
{
    EXPECT_ERROR(tg_layer_norm_new(NULL, 1, 1e-5, true) == NULL,
                 "tg_layer_norm_new: normalized_shape is NULL but has 1 dim");
}

ERROR_CASE(tg_layer_norm_new, negative_size,
           "a size in normalized_shape is negative")
{
    EXPECT_ERROR(tg_layer_norm_new(TG_SHAPE(3, -1), 1e-5, true) == NULL,
                 "tg_layer_norm_new: invalid shape (3, -1)");
}

ERROR_CASE(tg_layer_norm_new, bad_eps, "eps is negative, inf or NaN")
{
    EXPECT_ERROR(tg_layer_norm_new(TG_SHAPE(4), -1e-5, true) == NULL,
                 "tg_layer_norm_new: eps is -1e-05");
}

NEVER_FAILS(tg_batch_norm_config_defaults, "returns PyTorch's defaults");

ERROR_CASE(tg_batch_norm1d_new, zero_features, "num_features is 0")
{
    EXPECT_ERROR(tg_batch_norm1d_new(0, NULL) == NULL,
                 "tg_batch_norm1d_new: num_features is 0");
}

ERROR_CASE(tg_batch_norm1d_new, bad_momentum, "momentum is outside [0, 1]")
{
    tg_batch_norm_config c = tg_batch_norm_config_defaults();
    c.momentum = 1.5;
    EXPECT_ERROR(tg_batch_norm1d_new(3, &c) == NULL,
                 "tg_batch_norm1d_new: momentum is 1.5");
}

ERROR_CASE(tg_batch_norm1d_new, bad_eps, "eps is negative, inf or NaN")
{
    tg_batch_norm_config c = tg_batch_norm_config_defaults();
    c.eps = -1;
    EXPECT_ERROR(tg_batch_norm1d_new(3, &c) == NULL,
                 "tg_batch_norm1d_new: eps is -1");
}

ERROR_CASE(tg_batch_norm1d_new, bad_correction, "correction is not 0 or 1")
{
    tg_batch_norm_config c = tg_batch_norm_config_defaults();
    c.correction = 2;
    EXPECT_ERROR(tg_batch_norm1d_new(3, &c) == NULL,
                 "tg_batch_norm1d_new: correction is 2");
}

ERROR_CASE(tg_batch_norm2d_new, zero_features, "num_features is 0")
{
    EXPECT_ERROR(tg_batch_norm2d_new(0, NULL) == NULL,
                 "tg_batch_norm2d_new: num_features is 0");
}

ERROR_CASE(tg_batch_norm2d_new, bad_momentum, "momentum is outside [0, 1]")
{
    tg_batch_norm_config c = tg_batch_norm_config_defaults();
    c.momentum = -0.1;
    EXPECT_ERROR(tg_batch_norm2d_new(3, &c) == NULL,
                 "tg_batch_norm2d_new: momentum is -0.1");
}

/* ---- layers ---- */

ERROR_CASE(tg_linear_new, zero_features, "in_features is 0")
{
    tg_module *m = tg_linear_new(0, 4, true);
    EXPECT_ERROR(m == NULL,
                 "tg_linear_new: cannot make a Linear layer with in_features "
                 "0 and out_features 4");
}

ERROR_CASE(tg_linear_new, too_large,
           "in_features * out_features is beyond any memory")
{
    int64_t big = INT64_C(1) << 40;
    EXPECT_ERROR(tg_linear_new(big, big, true) == NULL,
                 "tg_linear_new: shape (1099511627776, 1099511627776) has "
                 "too many elements");
}

ERROR_CASE(tg_relu_new, out_of_memory,
           "memory runs out (the message names tg_module_new)")
{
    tg_fail_allocations_after(0);
    tg_module *m = tg_relu_new();
    tg_fail_allocations_after(-1);
    EXPECT_ERROR(m == NULL, "tg_module_new: out of memory");
}

ERROR_CASE(tg_tanh_new, out_of_memory,
           "memory runs out (the message names tg_module_new)")
{
    tg_fail_allocations_after(0);
    tg_module *m = tg_tanh_new();
    tg_fail_allocations_after(-1);
    EXPECT_ERROR(m == NULL, "tg_module_new: out of memory");
}

ERROR_CASE(tg_gelu_new, unknown_approx,
           "approx is neither TG_GELU_EXACT nor TG_GELU_TANH")
{
    EXPECT_ERROR(tg_gelu_new((tg_gelu_approx)7) == NULL,
                 "tg_gelu_new: unknown approximation 7");
}

ERROR_CASE(tg_dropout_new, p_above_one, "p is outside [0, 1]")
{
    EXPECT_ERROR(tg_dropout_new(1.5) == NULL,
                 "tg_dropout_new: dropout probability has to be between 0 "
                 "and 1, but got 1.5");
}

ERROR_CASE(tg_dropout_new, p_nan, "p is NaN")
{
    EXPECT_ERROR(tg_dropout_new(NAN) == NULL,
                 "tg_dropout_new: dropout probability has to be between 0 "
                 "and 1, but got nan");
}

ERROR_CASE(tg_sequential_new, mods_null,
           "n is positive but the array of modules is NULL")
{
    EXPECT_ERROR(tg_sequential_new(NULL, 2) == NULL,
                 "tg_sequential_new: got 2 modules at (nil)");
}

ERROR_CASE(tg_sequential_new, same_module_twice,
           "one module is given twice")
{
    tg_module *relu = tg_relu_new();
    EXPECT_ERROR(TG_SEQUENTIAL(relu, relu) == NULL,
                 "tg_module_add_child: ReLU \"1\" is already a child of "
                 "another module");
}

ERROR_CASE(tg_sequential_new, null_module,
           "a module is NULL (its constructor failed)")
{
    EXPECT_SILENT(TG_SEQUENTIAL(tg_relu_new(), NULL) == NULL);
}

ERROR_CASE(tg_sequential_append, not_a_sequential,
           "seq is another kind of module")
{
    tg_module *m = tg_linear_new(2, 3, true);
    EXPECT_ERROR(tg_sequential_append(m, tg_relu_new()) == -1,
                 "tg_sequential_append: cannot append to a Linear");
    tg_module_free(m);
}

ERROR_CASE(tg_sequential_append, cycle, "a Sequential is appended to itself")
{
    tg_module *seq = tg_sequential_new(NULL, 0);
    EXPECT_ERROR(tg_sequential_append(seq, seq) == -1,
                 "tg_module_add_child: Sequential \"0\" cannot be a child of "
                 "itself");
    tg_module_free(seq);
}

ERROR_CASE(tg_sequential_append, null_child,
           "the child is NULL (its constructor failed)")
{
    tg_module *seq = tg_sequential_new(NULL, 0);
    EXPECT_SILENT(tg_sequential_append(seq, NULL) == -1);
    tg_module_free(seq);
}

ERROR_CASE(tg_sequential_append, null_seq,
           "seq is NULL (its constructor failed); the child is freed")
{
    EXPECT_SILENT(tg_sequential_append(NULL, tg_relu_new()) == -1);
}

ERROR_CASE(tg_mlp_new, hidden_null,
           "nhidden is positive but hidden is NULL")
{
    EXPECT_ERROR(tg_mlp_new(2, NULL, 1, 3, TG_NORM_NONE, TG_ACT_RELU) == NULL,
                 "tg_mlp_new: got 1 hidden widths at (nil)");
}

ERROR_CASE(tg_mlp_new, zero_features, "in_features or out_features is 0")
{
    EXPECT_ERROR(tg_mlp_new(2, (int64_t[]){8}, 1, 0, TG_NORM_NONE,
                            TG_ACT_RELU) == NULL,
                 "tg_mlp_new: in_features is 2 and out_features 0");
}

ERROR_CASE(tg_mlp_new, zero_width, "a hidden width is 0")
{
    EXPECT_ERROR(tg_mlp_new(2, (int64_t[]){8, 0}, 2, 3, TG_NORM_NONE,
                            TG_ACT_RELU) == NULL,
                 "tg_mlp_new: hidden width 1 is 0");
}

ERROR_CASE(tg_mlp_new, unknown_norm, "norm is not a tg_norm_kind")
{
    EXPECT_ERROR(tg_mlp_new(2, (int64_t[]){8}, 1, 3, (tg_norm_kind)5,
                            TG_ACT_RELU) == NULL,
                 "tg_mlp_new: unknown norm 5");
}

ERROR_CASE(tg_mlp_new, unknown_activation,
           "activation is not a tg_activation")
{
    EXPECT_ERROR(tg_mlp_new(2, (int64_t[]){8}, 1, 3, TG_NORM_BATCH,
                            (tg_activation)9) == NULL,
                 "tg_mlp_new: unknown activation 9");
}

ERROR_CASE(tg_embedding_new, zero_size, "num_embeddings or embedding_dim is 0")
{
    EXPECT_ERROR(tg_embedding_new(27, 0) == NULL,
                 "tg_embedding_new: cannot make an Embedding with "
                 "num_embeddings 27 and embedding_dim 0");
}

ERROR_CASE(tg_embedding_new, too_large,
           "num_embeddings * embedding_dim is beyond any memory")
{
    int64_t big = INT64_C(1) << 40;
    EXPECT_ERROR(tg_embedding_new(big, big) == NULL,
                 "tg_embedding_new: shape (1099511627776, 1099511627776) "
                 "has too many elements");
}

ERROR_CASE(tg_flatten_new, out_of_memory,
           "memory runs out (the message names tg_module_new)")
{
    tg_fail_allocations_after(0);
    tg_module *m = tg_flatten_new(1, -1);
    tg_fail_allocations_after(-1);
    EXPECT_ERROR(m == NULL, "tg_module_new: out of memory");
}

/* ---- optimisers ---- */

NEVER_FAILS(tg_sgd_config_defaults, "returns PyTorch's defaults");
NEVER_FAILS(tg_adam_config_defaults, "returns PyTorch's defaults");
NEVER_FAILS(tg_adamw_config_defaults, "returns PyTorch's defaults");

ERROR_CASE(tg_sgd_new, negative_lr, "lr is negative or NaN")
{
    tg_sgd_config c = {.lr = -0.1};
    EXPECT_ERROR(tg_sgd_new(NULL, &c) == NULL,
                 "tg_sgd_new: invalid learning rate -0.1");
}

ERROR_CASE(tg_sgd_new, negative_momentum, "momentum is negative")
{
    tg_sgd_config c = {.lr = 0.1};
    c.momentum = -0.9;
    EXPECT_ERROR(tg_sgd_new(NULL, &c) == NULL,
                 "tg_sgd_new: invalid momentum value -0.9");
}

ERROR_CASE(tg_sgd_new, negative_weight_decay, "weight_decay is negative")
{
    tg_sgd_config c = {.lr = 0.1};
    c.weight_decay = -1e-4;
    EXPECT_ERROR(tg_sgd_new(NULL, &c) == NULL,
                 "tg_sgd_new: invalid weight_decay value -0.0001");
}

ERROR_CASE(tg_sgd_new, dampening_nan, "dampening is NaN")
{
    tg_sgd_config c = {.lr = 0.1};
    c.dampening = NAN;
    EXPECT_ERROR(tg_sgd_new(NULL, &c) == NULL, "tg_sgd_new: dampening is nan");
}

ERROR_CASE(tg_sgd_new, nesterov_without_momentum,
           "nesterov without momentum (or with dampening)")
{
    tg_sgd_config c = {.lr = 0.1};
    c.nesterov = true;
    EXPECT_ERROR(tg_sgd_new(NULL, &c) == NULL,
                 "tg_sgd_new: nesterov with momentum 0.0 and dampening 0.0");
}

ERROR_CASE(tg_sgd_new, frozen_parameter,
           "a parameter of the module was set not to require grad")
{
    tg_module *m = tg_linear_new(2, 3, true);
    tg_set_requires_grad(tg_module_parameter(m, "weight"), false);
    EXPECT_ERROR(tg_sgd_new(m, NULL) == NULL,
                 "tg_sgd_new: the tensor of shape (3, 2) does not require "
                 "grad");
    tg_module_free(m);
}

ERROR_CASE(tg_sgd_new, out_of_memory, "memory runs out")
{
    tg_fail_allocations_after(0);
    tg_optimizer *opt = tg_sgd_new(NULL, NULL);
    tg_fail_allocations_after(-1);
    EXPECT_ERROR(opt == NULL, "tg_sgd_new: out of memory");
}

ERROR_CASE(tg_sgd_new, out_of_memory_listing_parameters,
           "memory runs out listing the module's parameters")
{
    tg_module *m = tg_linear_new(2, 3, true);
    /* the optimiser, then counting the parameters; the list is next */
    tg_fail_allocations_after(2);
    tg_optimizer *opt = tg_sgd_new(m, NULL);
    tg_fail_allocations_after(-1);
    EXPECT_ERROR(opt == NULL, "tg_sgd_new: out of memory listing the "
                              "module's 2 parameters");
    tg_module_free(m);
}

ERROR_CASE(tg_adam_new, negative_lr, "lr is negative or NaN")
{
    tg_adam_config c = {.lr = NAN};
    EXPECT_ERROR(tg_adam_new(NULL, &c) == NULL,
                 "tg_adam_new: invalid learning rate nan");
}

ERROR_CASE(tg_adam_new, negative_eps, "eps is negative")
{
    tg_adam_config c = {.lr = 1e-3};
    c.eps = -1e-8;
    EXPECT_ERROR(tg_adam_new(NULL, &c) == NULL,
                 "tg_adam_new: invalid epsilon value -1e-08");
}

ERROR_CASE(tg_adam_new, bad_beta1, "beta1 is outside [0, 1)")
{
    tg_adam_config c = {.lr = 1e-3};
    c.beta1 = 1.0;
    EXPECT_ERROR(tg_adam_new(NULL, &c) == NULL,
                 "tg_adam_new: invalid beta1 1.0");
}

ERROR_CASE(tg_adam_new, bad_beta2, "beta2 is outside [0, 1)")
{
    tg_adam_config c = {.lr = 1e-3};
    c.beta2 = -0.5;
    EXPECT_ERROR(tg_adam_new(NULL, &c) == NULL,
                 "tg_adam_new: invalid beta2 -0.5");
}

ERROR_CASE(tg_adam_new, negative_weight_decay, "weight_decay is negative")
{
    tg_adam_config c = {.lr = 1e-3};
    c.weight_decay = -0.01;
    EXPECT_ERROR(tg_adam_new(NULL, &c) == NULL,
                 "tg_adam_new: invalid weight_decay value -0.01");
}

ERROR_CASE(tg_adamw_new, bad_beta2, "beta2 is outside [0, 1)")
{
    tg_adam_config c = {.lr = 1e-3};
    c.beta2 = 1.0;
    EXPECT_ERROR(tg_adamw_new(NULL, &c) == NULL,
                 "tg_adamw_new: invalid beta2 1.0");
}

ERROR_CASE(tg_optimizer_add_parameter, integer_tensor,
           "the tensor is int64")
{
    tg_optimizer *opt = tg_sgd_new(NULL, NULL);
    tg_tensor *t = tg_zeros(TG_SHAPE(3), TG_INT64);
    EXPECT_ERROR(tg_optimizer_add_parameter(opt, t) == -1,
                 "tg_optimizer_add_parameter: cannot optimise an int64 "
                 "tensor of shape (3,)");
    tg_release(t);
    tg_optimizer_free(opt);
}

ERROR_CASE(tg_optimizer_add_parameter, not_a_leaf,
           "the tensor was computed by an op")
{
    tg_optimizer *opt = tg_sgd_new(NULL, NULL);
    tg_tensor *p = param(3);
    tg_tensor *t = tg_mul_scalar(p, 2.0);
    EXPECT_ERROR(tg_optimizer_add_parameter(opt, t) == -1,
                 "tg_optimizer_add_parameter: cannot optimise a tensor made "
                 "by MulBackward0 (shape (3,))");
    tg_release(t);
    tg_release(p);
    tg_optimizer_free(opt);
}

ERROR_CASE(tg_optimizer_add_parameter, no_requires_grad,
           "the tensor does not require grad")
{
    tg_optimizer *opt = tg_sgd_new(NULL, NULL);
    tg_tensor *t = tg_ones(TG_SHAPE(3), TG_FLOAT32);
    EXPECT_ERROR(tg_optimizer_add_parameter(opt, t) == -1,
                 "tg_optimizer_add_parameter: the tensor of shape (3,) does "
                 "not require grad");
    tg_release(t);
    tg_optimizer_free(opt);
}

ERROR_CASE(tg_optimizer_add_parameter, expanded_view,
           "the leaf is an expanded view (a dim of stride 0), whose "
           "elements share memory")
{
    tg_optimizer *opt = tg_sgd_new(NULL, NULL);
    tg_tensor *one = tg_zeros(TG_SHAPE(1), TG_FLOAT32);
    tg_tensor *t = tg_expand(one, TG_SHAPE(3));
    cr_assert_eq(tg_set_requires_grad(t, true), 0);
    EXPECT_ERROR(tg_optimizer_add_parameter(opt, t) == -1,
                 "tg_optimizer_add_parameter: cannot optimise an expanded "
                 "view of shape (3,) (dim 0 has stride 0)");
    tg_release(t);
    tg_release(one);
    tg_optimizer_free(opt);
}

ERROR_CASE(tg_optimizer_add_parameter, out_of_memory, "memory runs out")
{
    tg_optimizer *opt = tg_sgd_new(NULL, NULL);
    tg_tensor *p = param(3);
    tg_fail_allocations_after(0);
    int rc = tg_optimizer_add_parameter(opt, p);
    tg_fail_allocations_after(-1);
    EXPECT_ERROR(rc == -1, "tg_optimizer_add_parameter: out of memory");
    tg_release(p);
    tg_optimizer_free(opt);
}

ERROR_CASE(tg_optimizer_add_parameter, null_tensor,
           "the tensor is NULL (an earlier call failed)")
{
    tg_optimizer *opt = tg_sgd_new(NULL, NULL);
    EXPECT_SILENT(tg_optimizer_add_parameter(opt, NULL) == -1);
    tg_optimizer_free(opt);
}

ERROR_CASE(tg_optimizer_add_parameter, null_optimizer,
           "the optimiser is NULL (its constructor failed)")
{
    tg_tensor *p = param(3);
    EXPECT_SILENT(tg_optimizer_add_parameter(NULL, p) == -1);
    tg_release(p);
}

ERROR_CASE(tg_optimizer_step, grad_wrong_shape,
           "a parameter's .grad (set by hand) has another shape")
{
    tg_module *m = tg_linear_new(2, 3, true);
    tg_optimizer *opt = tg_sgd_new(m, NULL);
    tg_tensor *w = tg_module_parameter(m, "weight");
    w->grad = tg_zeros(TG_SHAPE(2, 3), TG_FLOAT32);
    EXPECT_ERROR(tg_optimizer_step(opt) == -1,
                 "tg_optimizer_step: the .grad of parameter 0 (\"weight\") "
                 "is float32 (2, 3) but the parameter is float32 (3, 2)");
    tg_optimizer_free(opt);
    tg_module_free(m);
}

ERROR_CASE(tg_optimizer_step, state_out_of_memory,
           "no memory for the optimiser's state (momentum, moments)")
{
    tg_tensor *p = param(3);
    p->grad = tg_ones(TG_SHAPE(3), TG_FLOAT32);
    tg_optimizer *opt = tg_adam_new(NULL, NULL);
    cr_assert_eq(tg_optimizer_add_parameter(opt, p), 0);
    tg_fail_allocations_after(0);
    int rc = tg_optimizer_step(opt);
    tg_fail_allocations_after(-1);
    EXPECT_ERROR(rc == -1,
                 "tg_optimizer_step: out of memory for the optimiser's "
                 "state");
    tg_optimizer_free(opt);
    tg_release(p);
}

ERROR_CASE(tg_optimizer_step, work_out_of_memory,
           "no memory for a contiguous copy of a strided gradient")
{
    tg_tensor *p = tg_ones(TG_SHAPE(2, 2), TG_FLOAT32);
    tg_set_requires_grad(p, true);
    tg_tensor *g = tg_ones(TG_SHAPE(2, 2), TG_FLOAT32);
    p->grad = tg_transpose(g, 0, 1); // not contiguous
    tg_release(g);
    tg_optimizer *opt = tg_sgd_new(NULL, NULL);
    cr_assert_eq(tg_optimizer_add_parameter(opt, p), 0);
    tg_fail_allocations_after(0);
    int rc = tg_optimizer_step(opt);
    tg_fail_allocations_after(-1);
    EXPECT_ERROR(rc == -1, "tg_optimizer_step: out of memory");
    tg_optimizer_free(opt);
    tg_release(p);
}

ERROR_CASE(tg_optimizer_step, null_optimizer,
           "the optimiser is NULL (its constructor failed)")
{
    EXPECT_SILENT(tg_optimizer_step(NULL) == -1);
}

NEVER_FAILS(tg_optimizer_zero_grad, "does nothing for NULL");
NEVER_FAILS(tg_optimizer_lr, "answers NaN for NULL");

ERROR_CASE(tg_optimizer_set_lr, negative_lr, "lr is negative or NaN")
{
    tg_optimizer *opt = tg_sgd_new(NULL, NULL);
    EXPECT_ERROR(tg_optimizer_set_lr(opt, -1e-3) == -1,
                 "tg_optimizer_set_lr: invalid learning rate -0.001");
    tg_optimizer_free(opt);
}

ERROR_CASE(tg_optimizer_set_lr, null_optimizer,
           "the optimiser is NULL (its constructor failed)")
{
    EXPECT_SILENT(tg_optimizer_set_lr(NULL, 0.1) == -1);
}

NEVER_FAILS(tg_optimizer_steps, "answers -1 for NULL");
NEVER_FAILS(tg_optimizer_free, "does nothing for NULL");

ERROR_CASE(tg_lr_step, bad_step_size, "t is negative or step_size < 1")
{
    EXPECT_ERROR(isnan(tg_lr_step(0.1, 5, 0, 0.1)),
                 "tg_lr_step: t is 5 and step_size 0");
}

ERROR_CASE(tg_lr_step, bad_gamma,
           "base_lr or gamma is negative, infinite or NaN")
{
    EXPECT_ERROR(isnan(tg_lr_step(0.1, 5, 2, -0.5)),
                 "tg_lr_step: base_lr is 0.1 and gamma -0.5");
}

ERROR_CASE(tg_lr_cosine, bad_t_max, "t is negative or t_max < 1")
{
    EXPECT_ERROR(isnan(tg_lr_cosine(0.1, -1, 10, 0.0)),
                 "tg_lr_cosine: t is -1 and t_max 10");
}

ERROR_CASE(tg_lr_cosine, bad_eta_min,
           "base_lr or eta_min is negative, infinite or NaN")
{
    EXPECT_ERROR(isnan(tg_lr_cosine(INFINITY, 1, 10, 0.0)),
                 "tg_lr_cosine: base_lr is inf and eta_min 0");
}

/* ---- gradient summaries ---- */

ERROR_CASE(tg_param_grad_summary, integer_tensor, "p is an int64 tensor")
{
    tg_tensor *p = tg_zeros(TG_SHAPE(2, 3), TG_INT64);
    tg_grad_summary s;
    EXPECT_ERROR(tg_param_grad_summary(p, &s) == -1,
                 "tg_param_grad_summary: p is an int64 tensor of shape "
                 "(2, 3)");
    tg_release(p);
}

ERROR_CASE(tg_param_grad_summary, null_out, "out is NULL")
{
    tg_tensor *p = tg_zeros(TG_SHAPE(2), TG_FLOAT32);
    EXPECT_ERROR(tg_param_grad_summary(p, NULL) == -1,
                 "tg_param_grad_summary: out is NULL");
    tg_release(p);
}

ERROR_CASE(tg_param_grad_summary, null_tensor,
           "p is NULL (an earlier call failed)")
{
    tg_grad_summary s;
    EXPECT_SILENT(tg_param_grad_summary(NULL, &s) == -1);
}

ERROR_CASE(tg_module_grad_summaries, bad_room,
           "max < 0, or out NULL with max > 0")
{
    tg_module *m = tg_linear_new(2, 3, true);
    EXPECT_ERROR(tg_module_grad_summaries(m, NULL, 2) == -1,
                 "tg_module_grad_summaries: room for 2 summaries at NULL");
    tg_module_free(m);
}

ERROR_CASE(tg_module_grad_summaries, out_of_memory, "memory runs out")
{
    tg_module *m = tg_linear_new(2, 3, true);
    tg_grad_summary s[2];
    tg_fail_allocations_after(1); // counting takes one
    int rc = tg_module_grad_summaries(m, s, 2);
    tg_fail_allocations_after(-1);
    EXPECT_ERROR(rc == -1,
                 "tg_module_grad_summaries: out of memory listing 2 "
                 "parameters");
    tg_module_free(m);
}

ERROR_CASE(tg_module_grad_summaries, null_module,
           "m is NULL (a constructor failed)")
{
    tg_grad_summary s[2];
    EXPECT_SILENT(tg_module_grad_summaries(NULL, s, 2) == -1);
}

/* ---- checkpoints ---- */

ERROR_CASE(tg_module_save, null_dir, "the folder name is NULL or empty")
{
    tg_module *m = tg_linear_new(2, 3, true);
    EXPECT_ERROR(tg_module_save(m, NULL) == -1,
                 "tg_module_save: the folder name is NULL");
    tg_module_free(m);
}

ERROR_CASE(tg_module_save, cannot_create_folder,
           "a parent folder cannot be created (a file is in the way)")
{
    scratch_enter();
    touch("f");
    tg_module *m = tg_linear_new(2, 3, true);
    EXPECT_ERROR(tg_module_save(m, "f/sub/ck") == -1,
                 "tg_module_save: cannot create the folder 'f/sub' for "
                 "'f/sub/ck': Not a directory");
    tg_module_free(m);
    scratch_leave();
}

ERROR_CASE(tg_module_save, parent_not_a_folder,
           "the folder that would hold it is a file")
{
    scratch_enter();
    touch("f");
    tg_module *m = tg_linear_new(2, 3, true);
    EXPECT_ERROR(tg_module_save(m, "f/ck") == -1,
                 "tg_module_save: 'f' exists and is not a folder");
    tg_module_free(m);
    scratch_leave();
}

ERROR_CASE(tg_module_save, not_a_folder, "the path names a file")
{
    scratch_enter();
    touch("ck");
    tg_module *m = tg_linear_new(2, 3, true);
    EXPECT_ERROR(tg_module_save(m, "ck") == -1,
                 "tg_module_save: 'ck' exists and is not a folder");
    tg_module_free(m);
    scratch_leave();
}

ERROR_CASE(tg_module_save, not_its_own_folder,
           "the folder is . or .., which cannot be replaced as a unit")
{
    tg_module *m = tg_linear_new(2, 3, true);
    EXPECT_ERROR(tg_module_save(m, "a/..") == -1,
                 "tg_module_save: cannot replace the folder 'a/..' as one "
                 "unit");
    tg_module_free(m);
}

ERROR_CASE(tg_module_save, folder_in_the_way,
           "a tensor's file name is taken by a folder")
{
    scratch_enter();
    cr_assert_eq(mkdir("ck", 0777), 0);
    cr_assert_eq(mkdir("ck/weight.npy", 0777), 0); // a folder in the way
    tg_module *m = tg_linear_new(2, 3, true);
    EXPECT_ERROR(tg_module_save(m, "ck") == -1,
                 "tg_module_save: cannot write weight: 'ck/weight.npy' "
                 "exists and is a folder");
    tg_module_free(m);
    scratch_leave();
}

ERROR_CASE(tg_module_save, cannot_write_file,
           "a tensor's file cannot be written (the disk is full)")
{
    scratch_enter();
    tg_module *m = tg_linear_new(2, 3, true);
    tg_test_fail_io(TG_IO_WRITE, 0, ENOSPC, false, -1);
    int rc = tg_module_save(m, "ck");
    tg_test_io_off();
    EXPECT_ERROR(rc == -1,
                 "tg_module_save: cannot write weight: cannot write "
                 "'ck/weight.npy': No space left on device");
    assert_no_leftovers();
    cr_assert_neq(access("ck", F_OK), 0, "a failed first save made 'ck'");
    tg_module_free(m);
    scratch_leave();
}

ERROR_CASE(tg_module_save, cannot_make_new_folder,
           "the folder for the new checkpoint cannot be created")
{
    scratch_enter();
    tg_module *m = tg_linear_new(2, 3, true);
    tg_test_fail_io(TG_IO_CREATE, 0, EACCES, false, -1);
    int rc = tg_module_save(m, "ck");
    tg_test_io_off();
    EXPECT_ERROR(rc == -1,
                 "tg_module_save: cannot create a folder beside 'ck' for the "
                 "new checkpoint: Permission denied");
    tg_module_free(m);
    scratch_leave();
}

ERROR_CASE(tg_module_save, cannot_flush_new_folder,
           "the new checkpoint's folder cannot be flushed to the disk")
{
    scratch_enter();
    tg_module *m = tg_linear_new(2, 3, true);
    tg_test_fail_io(TG_IO_SYNC, 2, EIO, false, -1); // after the two files
    int rc = tg_module_save(m, "ck");
    tg_test_io_off();
    EXPECT_ERROR(rc == -1,
                 "tg_module_save: cannot flush the new checkpoint's folder "
                 "to the disk: Input/output error");
    tg_module_free(m);
    scratch_leave();
}

ERROR_CASE(tg_module_save, cannot_swap,
           "the new checkpoint cannot take the old one's place")
{
    scratch_enter();
    save_linear(true);
    tg_module *m = tg_linear_new(2, 3, true);
    tg_test_fail_io(TG_IO_EXCHANGE, 0, EIO, false, -1);
    int rc = tg_module_save(m, "ck");
    tg_test_io_off();
    EXPECT_ERROR(rc == -1,
                 "tg_module_save: cannot put the new checkpoint in the place "
                 "of 'ck': Input/output error");
    tg_module_free(m);
    scratch_leave();
}

ERROR_CASE(tg_module_save, cannot_flush_parent,
           "the folder holding the checkpoint cannot be flushed")
{
    scratch_enter();
    tg_module *m = tg_linear_new(2, 3, true);
    tg_test_fail_io(TG_IO_SYNC, 3, EIO, false, -1); // 2 files, new, parent
    int rc = tg_module_save(m, "ck");
    tg_test_io_off();
    EXPECT_ERROR(rc == -1,
                 "tg_module_save: the new checkpoint is in 'ck', but its "
                 "folder cannot be flushed to the disk: Input/output error");
    tg_module_free(m);
    scratch_leave();
}

ERROR_CASE(tg_module_save, cannot_clear_previous,
           "after the swap, the previous folder cannot be cleared")
{
    scratch_enter();
    save_linear(true);
    tg_module *m = tg_linear_new(2, 3, true);
    tg_test_fail_io(TG_IO_REMOVE, 0, EIO, false, -1);
    int rc = tg_module_save(m, "ck");
    tg_test_io_off();
    cr_assert_eq(rc, -1);
    const char *msg = tg_last_error();
    const char *start = "tg_module_save: the new checkpoint is in 'ck', but "
                        "the previous folder's files stay in 'ck.tg-save-";
    cr_assert(strncmp(msg, start, strlen(start)) == 0, "%s", msg);
    cr_assert(strstr(msg, "': Input/output error\n"), "%s", msg);
    /* The table shows the first line with its random suffix as XXXXXX:
     * the message is recorded again in that form for the comparison. */
    char shown[256];
    snprintf(shown, sizeof shown, "%s", msg + strlen("tg_module_save: "));
    memcpy(strstr(shown, ".tg-save-") + 9, "XXXXXX", 6);
    tg_error("tg_module_save", "%s", shown);
    EXPECT_ERROR(rc == -1,
                 "tg_module_save: the new checkpoint is in 'ck', but the "
                 "previous folder's files stay in 'ck.tg-save-XXXXXX': "
                 "Input/output error");
    tg_module_free(m);
    scratch_leave();
}

/* Four levels of 31-character names: the dotted names reach TG_NAME_MAX
 * and are cut (the last name loses a character), so two tensors meet
 * under one name. */
ERROR_CASE(tg_module_save, names_meet,
           "names nested past TG_NAME_MAX characters are cut and meet")
{
    tg_module *root = tg_module_new(&bare_type);
    tg_module *m = root;
    const char *names[4] = {"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
                            "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb",
                            "ccccccccccccccccccccccccccccccc",
                            "ddddddddddddddddddddddddddddddd"};
    for (int i = 0; i < 4; i++) {
        tg_module *child = tg_module_new(&bare_type);
        cr_assert_eq(tg_module_add_child(m, names[i], child), 0);
        m = child;
    }
    tg_tensor *p = param(1), *q = param(1);
    cr_assert_eq(tg_module_add_parameter(m, "x", p), 0);
    cr_assert_eq(tg_module_add_parameter(m, "y", q), 0);
    EXPECT_ERROR(tg_module_save(root, "ck") == -1,
                 "tg_module_save: two tensors have the name "
                 "\"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa."
                 "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb."
                 "ccccccccccccccccccccccccccccccc."
                 "dddddddddddddddddddddddddddddd.\"");
    tg_release(p);
    tg_release(q);
    tg_module_free(root);
}

ERROR_CASE(tg_module_save, out_of_memory, "memory runs out")
{
    tg_module *m = tg_linear_new(2, 3, true);
    /* counting the tensors takes one allocation, listing them the next */
    tg_fail_allocations_after(1);
    int rc = tg_module_save(m, "ck");
    tg_fail_allocations_after(-1);
    EXPECT_ERROR(rc == -1, "tg_module_save: out of memory listing 2 tensors");
    tg_module_free(m);
}

ERROR_CASE(tg_module_save, out_of_memory_file_names,
           "memory runs out making the file names")
{
    tg_module *m = tg_linear_new(2, 3, true);
    /* the three allocations of listing the tensors come first */
    tg_fail_allocations_after(3);
    int rc = tg_module_save(m, "ck");
    tg_fail_allocations_after(-1);
    EXPECT_ERROR(rc == -1, "tg_module_save: out of memory for the file "
                           "names");
    tg_module_free(m);
}

ERROR_CASE(tg_module_save, out_of_memory_folder_name,
           "memory runs out copying the folder name")
{
    tg_module *m = tg_linear_new(2, 3, true);
    /* listing the tensors (three allocations), then the five names, then
     * the parent folder to create */
    scratch_enter();
    tg_fail_allocations_after(8);
    int rc = tg_module_save(m, "new/ck");
    tg_fail_allocations_after(-1);
    EXPECT_ERROR(rc == -1, "tg_module_save: out of memory for the folder "
                           "name");
    tg_module_free(m);
    scratch_leave();
}

ERROR_CASE(tg_module_save, null_module,
           "the module is NULL (its constructor failed)")
{
    EXPECT_SILENT(tg_module_save(NULL, "ck") == -1);
}

/* ---- optimiser state ---- */

/* An SGD with momentum over a (2 -> 3) Linear, after one step. */
static tg_optimizer *stepped_sgd(tg_module *m)
{
    tg_sgd_config c = {.lr = 0.1, .momentum = 0.9};
    tg_optimizer *o = tg_sgd_new(m, &c);
    for (int i = 0; i < 2; i++) {
        tg_named_tensor p[2];
        tg_module_named_parameters(m, p, 2);
        p[i].tensor->grad = tg_ones(p[i].tensor->shape, p[i].tensor->ndim,
                                    TG_FLOAT32);
    }
    cr_assert_eq(tg_optimizer_step(o), 0);
    return o;
}

ERROR_CASE(tg_optimizer_save, null_dir, "the folder name is NULL or empty")
{
    tg_module *m = tg_linear_new(2, 3, true);
    tg_optimizer *o = stepped_sgd(m);
    EXPECT_ERROR(tg_optimizer_save(o, NULL) == -1,
                 "tg_optimizer_save: the folder name is NULL");
    tg_optimizer_free(o);
    tg_module_free(m);
}

ERROR_CASE(tg_optimizer_save, out_of_memory, "memory runs out")
{
    tg_module *m = tg_linear_new(2, 3, true);
    tg_optimizer *o = stepped_sgd(m);
    tg_fail_allocations_after(0);
    int rc = tg_optimizer_save(o, "st");
    tg_fail_allocations_after(-1);
    EXPECT_ERROR(rc == -1, "tg_optimizer_save: out of memory for the state "
                           "of 2 parameters");
    tg_optimizer_free(o);
    tg_module_free(m);
}

ERROR_CASE(tg_optimizer_save, null_optimizer,
           "opt is NULL (a constructor failed)")
{
    EXPECT_SILENT(tg_optimizer_save(NULL, "st") == -1);
}

ERROR_CASE(tg_optimizer_load, null_dir, "the folder name is NULL or empty")
{
    tg_optimizer *o = tg_sgd_new(NULL, NULL);
    EXPECT_ERROR(tg_optimizer_load(o, NULL) == -1,
                 "tg_optimizer_load: the folder name is NULL");
    tg_optimizer_free(o);
}

ERROR_CASE(tg_optimizer_load, out_of_memory, "memory runs out")
{
    tg_module *m = tg_linear_new(2, 3, true);
    tg_optimizer *o = tg_sgd_new(m, NULL);
    tg_fail_allocations_after(0);
    int rc = tg_optimizer_load(o, "st");
    tg_fail_allocations_after(-1);
    EXPECT_ERROR(rc == -1, "tg_optimizer_load: out of memory for the state "
                           "of 2 parameters");
    tg_optimizer_free(o);
    tg_module_free(m);
}

ERROR_CASE(tg_optimizer_load, out_of_memory_file_name,
           "memory runs out for a file name")
{
    tg_optimizer *o = tg_sgd_new(NULL, NULL);
    tg_fail_allocations_after(1);
    int rc = tg_optimizer_load(o, "st");
    tg_fail_allocations_after(-1);
    EXPECT_ERROR(rc == -1, "tg_optimizer_load: out of memory for a file "
                           "name");
    tg_optimizer_free(o);
}

ERROR_CASE(tg_optimizer_load, missing_file, "a file of the state is missing")
{
    scratch_enter();
    tg_optimizer *o = tg_sgd_new(NULL, NULL);
    EXPECT_ERROR(tg_optimizer_load(o, "st") == -1,
                 "tg_optimizer_load: cannot read header of the optimiser "
                 "state in 'st': cannot open 'st/header.npy': No such file "
                 "or directory");
    tg_optimizer_free(o);
    scratch_leave();
}

ERROR_CASE(tg_optimizer_load, does_not_fit,
           "the state is of another kind, or of other parameters")
{
    scratch_enter();
    tg_module *m = tg_linear_new(2, 3, true);
    tg_optimizer *o = stepped_sgd(m);
    cr_assert_eq(tg_optimizer_save(o, "st"), 0);
    tg_optimizer *adam = tg_adam_new(m, NULL);
    EXPECT_ERROR(tg_optimizer_load(adam, "st") == -1,
                 "tg_optimizer_load: the optimiser state in 'st' does not "
                 "fit: it is the state of SGD, this optimiser is Adam");
    tg_optimizer_free(adam);
    tg_optimizer_free(o);
    tg_module_free(m);
    scratch_leave();
}

ERROR_CASE(tg_optimizer_load, null_optimizer,
           "opt is NULL (a constructor failed)")
{
    EXPECT_SILENT(tg_optimizer_load(NULL, "st") == -1);
}

ERROR_CASE(tg_module_load, empty_dir, "the folder name is NULL or empty")
{
    tg_module *m = tg_linear_new(2, 3, true);
    EXPECT_ERROR(tg_module_load(m, "") == -1,
                 "tg_module_load: the folder name is empty");
    tg_module_free(m);
}

ERROR_CASE(tg_module_load, missing_folder, "the folder does not exist")
{
    scratch_enter();
    tg_module *m = tg_linear_new(2, 3, true);
    EXPECT_ERROR(tg_module_load(m, "ck") == -1,
                 "tg_module_load: there is no checkpoint folder 'ck'");
    tg_module_free(m);
    scratch_leave();
}

ERROR_CASE(tg_module_load, interrupted_save,
           "the folder is missing because a save was interrupted between "
           "its two renames (file systems without an atomic swap)")
{
    scratch_enter();
    save_linear(true);
    cr_assert_eq(rename("ck", "ck.tg-old-abc123"), 0);
    tg_module *m = tg_linear_new(2, 3, true);
    EXPECT_ERROR(tg_module_load(m, "ck") == -1,
                 "tg_module_load: there is no checkpoint folder 'ck': a save "
                 "was interrupted, and the previous checkpoint is in "
                 "'ck.tg-old-abc123'");
    cr_assert_eq(tg_module_load(m, "ck.tg-old-abc123"), 0);
    tg_module_free(m);
    scratch_leave();
}

ERROR_CASE(tg_module_load, missing_file,
           "the folder has no file for one of the model's tensors")
{
    scratch_enter();
    save_linear(false);
    tg_module *m = tg_linear_new(2, 3, true);
    EXPECT_ERROR(tg_module_load(m, "ck") == -1,
                 "tg_module_load: the checkpoint has no bias: 'ck/bias.npy' "
                 "does not exist");
    tg_module_free(m);
    scratch_leave();
}

ERROR_CASE(tg_module_load, corrupt_file, "a file is not a valid .npy file")
{
    scratch_enter();
    save_linear(true);
    touch("ck/weight.npy"); // emptied
    tg_module *m = tg_linear_new(2, 3, true);
    EXPECT_ERROR(tg_module_load(m, "ck") == -1,
                 "tg_module_load: cannot read weight: cannot load "
                 "'ck/weight.npy': the file is empty");
    tg_module_free(m);
    scratch_leave();
}

ERROR_CASE(tg_module_load, shape_mismatch,
           "a tensor in the checkpoint has another shape than the model's")
{
    scratch_enter();
    save_linear(true);
    tg_module *m = tg_linear_new(2, 4, true);
    EXPECT_ERROR(tg_module_load(m, "ck") == -1,
                 "tg_module_load: checkpoint has (3, 2) for weight, the "
                 "model has (4, 2) (file 'ck/weight.npy')");
    tg_module_free(m);
    scratch_leave();
}

ERROR_CASE(tg_module_load, dtype_mismatch,
           "a tensor in the checkpoint has another dtype than the model's")
{
    scratch_enter();
    save_linear(true);
    tg_module *m = tg_linear_new(2, 3, true);
    cr_assert_eq(tg_module_to_dtype(m, TG_FLOAT64), 0);
    EXPECT_ERROR(tg_module_load(m, "ck") == -1,
                 "tg_module_load: checkpoint has float32 for weight, the "
                 "model has float64 (file 'ck/weight.npy')");
    tg_module_free(m);
    scratch_leave();
}

ERROR_CASE(tg_module_load, out_of_memory, "memory runs out")
{
    scratch_enter();
    save_linear(true);
    tg_module *m = tg_linear_new(2, 3, true);
    /* counting the tensors, listing them and filling the list take the
     * first three allocations */
    tg_fail_allocations_after(3);
    int rc = tg_module_load(m, "ck");
    tg_fail_allocations_after(-1);
    EXPECT_ERROR(rc == -1, "tg_module_load: out of memory for 2 tensors");
    tg_module_free(m);
    scratch_leave();
}

ERROR_CASE(tg_module_load, out_of_memory_file_name,
           "memory runs out making a file's name")
{
    scratch_enter();
    save_linear(true);
    tg_module *m = tg_linear_new(2, 3, true);
    /* the tensors' list (three allocations), then the list of loaded ones */
    tg_fail_allocations_after(4);
    int rc = tg_module_load(m, "ck");
    tg_fail_allocations_after(-1);
    EXPECT_ERROR(rc == -1, "tg_module_load: out of memory for a file name");
    tg_module_free(m);
    scratch_leave();
}

ERROR_CASE(tg_module_load, null_module,
           "the module is NULL (its constructor failed)")
{
    EXPECT_SILENT(tg_module_load(NULL, "ck") == -1);
}

/* ---- data ---- */

NEVER_FAILS(tg_dataset_free, "does nothing for NULL");

ERROR_CASE(tg_make_spirals, out_null, "out is NULL")
{
    EXPECT_ERROR(tg_make_spirals(10, 3, 0.1, NULL, NULL) == -1,
                 "tg_make_spirals: out is NULL");
}

ERROR_CASE(tg_make_spirals, zero_points, "n_per_class is 0")
{
    tg_dataset d;
    EXPECT_ERROR(tg_make_spirals(0, 3, 0.1, NULL, &d) == -1,
                 "tg_make_spirals: n_per_class is 0");
}

ERROR_CASE(tg_make_spirals, one_class, "classes is less than 2")
{
    tg_dataset d;
    EXPECT_ERROR(tg_make_spirals(10, 1, 0.1, NULL, &d) == -1,
                 "tg_make_spirals: classes is 1");
}

ERROR_CASE(tg_make_spirals, negative_noise, "noise is negative, inf or NaN")
{
    tg_dataset d;
    EXPECT_ERROR(tg_make_spirals(10, 3, -0.1, NULL, &d) == -1,
                 "tg_make_spirals: noise is -0.1");
}

ERROR_CASE(tg_make_spirals, too_many_points,
           "n_per_class * classes is beyond any memory")
{
    tg_dataset d;
    EXPECT_ERROR(tg_make_spirals(INT64_C(1) << 58, 3, 0.1, NULL, &d) == -1,
                 "tg_make_spirals: 288230376151711744 points per class in 3 "
                 "classes is too many");
}

ERROR_CASE(tg_make_moons, zero_points, "n_per_class is 0")
{
    tg_dataset d;
    EXPECT_ERROR(tg_make_moons(0, 0.1, NULL, &d) == -1,
                 "tg_make_moons: n_per_class is 0");
}

ERROR_CASE(tg_make_moons, noise_nan, "noise is negative, inf or NaN")
{
    tg_dataset d;
    EXPECT_ERROR(tg_make_moons(10, NAN, NULL, &d) == -1,
                 "tg_make_moons: noise is nan");
}

ERROR_CASE(tg_make_blobs, negative_spread, "spread is negative, inf or NaN")
{
    tg_dataset d;
    EXPECT_ERROR(tg_make_blobs(10, 3, -1.0, NULL, &d) == -1,
                 "tg_make_blobs: spread is -1");
}

ERROR_CASE(tg_dataset_split, same_outputs,
           "train and val are the same dataset (or one of them is d)")
{
    tg_dataset d = toy(), out;
    EXPECT_ERROR(tg_dataset_split(&d, 0.2, NULL, &out, &out) == -1,
                 "tg_dataset_split: train and val must be two different "
                 "datasets to fill, other than d");
    tg_dataset_free(&d);
}

ERROR_CASE(tg_dataset_split, null_dataset, "d is NULL")
{
    tg_dataset tr, va;
    EXPECT_ERROR(tg_dataset_split(NULL, 0.2, NULL, &tr, &va) == -1,
                 "tg_dataset_split: the dataset is NULL");
}

ERROR_CASE(tg_dataset_split, bad_fraction, "val_fraction is outside [0, 1)")
{
    tg_dataset d = toy(), tr, va;
    EXPECT_ERROR(tg_dataset_split(&d, 1.0, NULL, &tr, &va) == -1,
                 "tg_dataset_split: val_fraction is 1");
    tg_dataset_free(&d);
}

ERROR_CASE(tg_dataset_split, no_training_row,
           "the held-out share rounds to every row")
{
    tg_dataset d = toy(), tr, va;
    EXPECT_ERROR(tg_dataset_split(&d, 0.95, NULL, &tr, &va) == -1,
                 "tg_dataset_split: holding out 0.95 of 6 rows leaves no row "
                 "for training");
    tg_dataset_free(&d);
}

ERROR_CASE(tg_dataset_split, out_of_memory, "memory runs out")
{
    tg_dataset d = toy(), tr, va;
    tg_fail_allocations_after(0);
    int rc = tg_dataset_split(&d, 0.5, NULL, &tr, &va);
    tg_fail_allocations_after(-1);
    EXPECT_ERROR(rc == -1, "tg_dataset_split: out of memory for a "
                           "permutation of 6 rows");
    tg_dataset_free(&d);
}

ERROR_CASE(tg_dataset_split, null_tensors,
           "d holds NULL tensors (the call that made it failed)")
{
    tg_dataset d = {NULL, NULL}, tr, va;
    EXPECT_SILENT(tg_dataset_split(&d, 0.2, NULL, &tr, &va) == -1);
}

ERROR_CASE(tg_batches_new, zero_batch_size, "batch_size is 0")
{
    tg_dataset d = toy();
    EXPECT_ERROR(tg_batches_new(&d, 0, true, false, NULL) == NULL,
                 "tg_batches_new: batch_size is 0");
    tg_dataset_free(&d);
}

ERROR_CASE(tg_batches_new, x_scalar, "x is a 0-d tensor")
{
    tg_dataset d = toy();
    tg_release(d.x);
    d.x = tg_scalar(1.0, TG_FLOAT32);
    EXPECT_ERROR(tg_batches_new(&d, 2, true, false, NULL) == NULL,
                 "tg_batches_new: x is a 0-d tensor");
    tg_dataset_free(&d);
}

ERROR_CASE(tg_batches_new, float_labels,
           "the labels are not an int64 (N,) tensor")
{
    tg_dataset d = toy();
    tg_tensor *y = tg_to_dtype(d.y, TG_FLOAT32);
    tg_release(d.y);
    d.y = y;
    EXPECT_ERROR(tg_batches_new(&d, 2, true, false, NULL) == NULL,
                 "tg_batches_new: y has dtype float32 and shape (6,)");
    tg_dataset_free(&d);
}

ERROR_CASE(tg_batches_new, row_count_mismatch,
           "x and y have different numbers of rows")
{
    tg_dataset d = toy();
    tg_tensor *y = tg_narrow(d.y, 0, 0, 4);
    tg_release(d.y);
    d.y = y;
    EXPECT_ERROR(tg_batches_new(&d, 2, true, false, NULL) == NULL,
                 "tg_batches_new: x of shape (6, 2) has 6 rows but y of "
                 "shape (4,) has 4 labels");
    tg_dataset_free(&d);
}

ERROR_CASE(tg_batches_new, out_of_memory, "memory runs out")
{
    tg_dataset d = toy();
    tg_fail_allocations_after(0);
    tg_batches *it = tg_batches_new(&d, 2, true, false, NULL);
    tg_fail_allocations_after(-1);
    EXPECT_ERROR(it == NULL,
                 "tg_batches_new: out of memory for the batches of 6 rows");
    tg_dataset_free(&d);
}

ERROR_CASE(tg_batches_next, out_null, "x or y is NULL")
{
    tg_dataset d = toy();
    tg_batches *it = tg_batches_new(&d, 2, true, false, NULL);
    tg_tensor *x;
    EXPECT_ERROR(!tg_batches_next(it, &x, NULL),
                 "tg_batches_next: y is NULL");
    tg_batches_free(it);
    tg_dataset_free(&d);
}

ERROR_CASE(tg_batches_next, null_iterator,
           "the iterator is NULL (tg_batches_new failed)")
{
    tg_tensor *x, *y;
    EXPECT_SILENT(!tg_batches_next(NULL, &x, &y));
}

ERROR_CASE(tg_batches_per_epoch, null_iterator,
           "the iterator is NULL (tg_batches_new failed)")
{
    EXPECT_SILENT(tg_batches_per_epoch(NULL) == -1);
}

NEVER_FAILS(tg_batches_free, "does nothing for NULL");

ERROR_CASE(tg_accuracy, logits_not_2d, "logits are not (N, C)")
{
    tg_tensor *logits = tg_zeros(TG_SHAPE(4), TG_FLOAT32);
    tg_tensor *labels = tg_zeros(TG_SHAPE(4), TG_INT64);
    EXPECT_ERROR(isnan(tg_accuracy(logits, labels)),
                 "tg_accuracy: logits have shape (4,)");
    tg_release(labels);
    tg_release(logits);
}

ERROR_CASE(tg_accuracy, float_labels, "the labels are not int64")
{
    tg_tensor *logits = tg_zeros(TG_SHAPE(4, 3), TG_FLOAT32);
    tg_tensor *labels = tg_zeros(TG_SHAPE(4), TG_FLOAT32);
    EXPECT_ERROR(isnan(tg_accuracy(logits, labels)),
                 "tg_accuracy: labels are float32");
    tg_release(labels);
    tg_release(logits);
}

ERROR_CASE(tg_accuracy, shape_mismatch,
           "there is not one label per row of logits")
{
    tg_tensor *logits = tg_zeros(TG_SHAPE(4, 3), TG_FLOAT32);
    tg_tensor *labels = tg_zeros(TG_SHAPE(5), TG_INT64);
    EXPECT_ERROR(isnan(tg_accuracy(logits, labels)),
                 "tg_accuracy: logits of shape (4, 3) and labels of shape "
                 "(5,) do not match");
    tg_release(labels);
    tg_release(logits);
}

ERROR_CASE(tg_accuracy, empty_batch, "logits have no rows (or no classes)")
{
    tg_tensor *logits = tg_zeros(TG_SHAPE(0, 3), TG_FLOAT32);
    tg_tensor *labels = tg_zeros(TG_SHAPE(0), TG_INT64);
    EXPECT_ERROR(isnan(tg_accuracy(logits, labels)),
                 "tg_accuracy: logits of shape (0, 3) have no rows");
    tg_release(labels);
    tg_release(logits);
}

ERROR_CASE(tg_accuracy, label_out_of_range, "a label is not in [0, C)")
{
    tg_tensor *logits = tg_zeros(TG_SHAPE(2, 3), TG_FLOAT32);
    tg_tensor *labels = tg_from_array((int64_t[]){0, 3}, TG_SHAPE(2),
                                      TG_INT64);
    EXPECT_ERROR(isnan(tg_accuracy(logits, labels)),
                 "tg_accuracy: label 3 of row 1 is not a class of logits of "
                 "shape (2, 3)");
    tg_release(labels);
    tg_release(logits);
}

ERROR_CASE(tg_accuracy, null_tensor,
           "logits or labels is NULL (an earlier call failed)")
{
    tg_tensor *labels = tg_zeros(TG_SHAPE(2), TG_INT64);
    EXPECT_SILENT(isnan(tg_accuracy(NULL, labels)));
    tg_release(labels);
}

/* ---- Python's random module ---- */

ERROR_CASE(tg_pyrandom_new, out_of_memory, "memory runs out")
{
    tg_fail_allocations_after(0);
    tg_pyrandom *r = tg_pyrandom_new(42);
    tg_fail_allocations_after(-1);
    EXPECT_ERROR(r == NULL, "tg_pyrandom_new: out of memory allocating a "
                            "generator (2500 bytes)");
}

NEVER_FAILS(tg_pyrandom_seed, "does nothing for NULL");
NEVER_FAILS(tg_pyrandom_free, "does nothing for NULL");

ERROR_CASE(tg_pyrandom_random, null_generator,
           "r is NULL (tg_pyrandom_new failed): NaN")
{
    EXPECT_SILENT(isnan(tg_pyrandom_random(NULL)));
}

ERROR_CASE(tg_pyrandom_getrandbits, out_null, "out is NULL")
{
    tg_pyrandom *r = tg_pyrandom_new(42);
    EXPECT_ERROR(tg_pyrandom_getrandbits(r, 8, NULL) == -1,
                 "tg_pyrandom_getrandbits: out is NULL");
    tg_pyrandom_free(r);
}

ERROR_CASE(tg_pyrandom_getrandbits, too_many_bits,
           "k is negative or more than 64")
{
    tg_pyrandom *r = tg_pyrandom_new(42);
    uint64_t v;
    EXPECT_ERROR(tg_pyrandom_getrandbits(r, 65, &v) == -1,
                 "tg_pyrandom_getrandbits: k is 65");
    tg_pyrandom_free(r);
}

ERROR_CASE(tg_pyrandom_getrandbits, null_generator,
           "r is NULL (tg_pyrandom_new failed)")
{
    uint64_t v;
    EXPECT_SILENT(tg_pyrandom_getrandbits(NULL, 8, &v) == -1);
}

ERROR_CASE(tg_pyrandom_getrandbits_words, negative_bits, "k is negative")
{
    tg_pyrandom *r = tg_pyrandom_new(42);
    uint32_t w[1];
    EXPECT_ERROR(tg_pyrandom_getrandbits_words(r, -1, w) == -1,
                 "tg_pyrandom_getrandbits_words: k is -1");
    tg_pyrandom_free(r);
}

ERROR_CASE(tg_pyrandom_getrandbits_words, words_null,
           "words is NULL for k > 0")
{
    tg_pyrandom *r = tg_pyrandom_new(42);
    EXPECT_ERROR(tg_pyrandom_getrandbits_words(r, 100, NULL) == -1,
                 "tg_pyrandom_getrandbits_words: words is NULL");
    tg_pyrandom_free(r);
}

ERROR_CASE(tg_pyrandom_getrandbits_words, null_generator,
           "r is NULL (tg_pyrandom_new failed)")
{
    uint32_t w[4];
    EXPECT_SILENT(tg_pyrandom_getrandbits_words(NULL, 100, w) == -1);
}

ERROR_CASE(tg_pyrandom_randbelow, out_null, "out is NULL")
{
    tg_pyrandom *r = tg_pyrandom_new(42);
    EXPECT_ERROR(tg_pyrandom_randbelow(r, 10, NULL) == -1,
                 "tg_pyrandom_randbelow: out is NULL");
    tg_pyrandom_free(r);
}

ERROR_CASE(tg_pyrandom_randbelow, zero, "n is 0")
{
    tg_pyrandom *r = tg_pyrandom_new(42);
    uint64_t v;
    EXPECT_ERROR(tg_pyrandom_randbelow(r, 0, &v) == -1,
                 "tg_pyrandom_randbelow: n is 0");
    tg_pyrandom_free(r);
}

ERROR_CASE(tg_pyrandom_randbelow, null_generator,
           "r is NULL (tg_pyrandom_new failed)")
{
    uint64_t v;
    EXPECT_SILENT(tg_pyrandom_randbelow(NULL, 10, &v) == -1);
}

ERROR_CASE(tg_pyrandom_randrange, out_null, "out is NULL")
{
    tg_pyrandom *r = tg_pyrandom_new(42);
    EXPECT_ERROR(tg_pyrandom_randrange(r, 0, 10, NULL) == -1,
                 "tg_pyrandom_randrange: out is NULL");
    tg_pyrandom_free(r);
}

ERROR_CASE(tg_pyrandom_randrange, empty_range, "stop <= start")
{
    tg_pyrandom *r = tg_pyrandom_new(42);
    int64_t v;
    EXPECT_ERROR(tg_pyrandom_randrange(r, 3, 2, &v) == -1,
                 "tg_pyrandom_randrange: empty range [3, 2)");
    tg_pyrandom_free(r);
}

ERROR_CASE(tg_pyrandom_randrange, null_generator,
           "r is NULL (tg_pyrandom_new failed)")
{
    int64_t v;
    EXPECT_SILENT(tg_pyrandom_randrange(NULL, 0, 10, &v) == -1);
}

ERROR_CASE(tg_pyrandom_randint, out_null, "out is NULL")
{
    tg_pyrandom *r = tg_pyrandom_new(42);
    EXPECT_ERROR(tg_pyrandom_randint(r, 0, 10, NULL) == -1,
                 "tg_pyrandom_randint: out is NULL");
    tg_pyrandom_free(r);
}

ERROR_CASE(tg_pyrandom_randint, empty_range, "b < a")
{
    tg_pyrandom *r = tg_pyrandom_new(42);
    int64_t v;
    EXPECT_ERROR(tg_pyrandom_randint(r, 1, 0, &v) == -1,
                 "tg_pyrandom_randint: empty range [1, 0]");
    tg_pyrandom_free(r);
}

ERROR_CASE(tg_pyrandom_randint, all_of_int64,
           "[a, b] is all of int64 (2^64 integers)")
{
    tg_pyrandom *r = tg_pyrandom_new(42);
    int64_t v;
    EXPECT_ERROR(tg_pyrandom_randint(r, INT64_MIN, INT64_MAX, &v) == -1,
                 "tg_pyrandom_randint: [-9223372036854775808, "
                 "9223372036854775807] holds 2^64 integers");
    tg_pyrandom_free(r);
}

ERROR_CASE(tg_pyrandom_randint, null_generator,
           "r is NULL (tg_pyrandom_new failed)")
{
    int64_t v;
    EXPECT_SILENT(tg_pyrandom_randint(NULL, 0, 10, &v) == -1);
}

ERROR_CASE(tg_pyrandom_shuffle, base_null, "base is NULL for 2 or more "
                                           "elements")
{
    tg_pyrandom *r = tg_pyrandom_new(42);
    EXPECT_ERROR(tg_pyrandom_shuffle(r, NULL, 3, 8) == -1,
                 "tg_pyrandom_shuffle: base is NULL for 3 elements");
    tg_pyrandom_free(r);
}

ERROR_CASE(tg_pyrandom_shuffle, size_zero, "size is 0")
{
    tg_pyrandom *r = tg_pyrandom_new(42);
    int64_t x[3] = {0, 1, 2};
    EXPECT_ERROR(tg_pyrandom_shuffle(r, x, 3, 0) == -1,
                 "tg_pyrandom_shuffle: size is 0 for 3 elements");
    tg_pyrandom_free(r);
}

ERROR_CASE(tg_pyrandom_shuffle, null_generator,
           "r is NULL (tg_pyrandom_new failed)")
{
    int64_t x[3] = {0, 1, 2};
    EXPECT_SILENT(tg_pyrandom_shuffle(NULL, x, 3, sizeof x[0]) == -1);
}

/* ---- words ---- */

/* Writes text to the file path (in the scratch folder). */
static void write_words(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    cr_assert_not_null(f, "cannot create %s", path);
    fputs(text, f);
    fclose(f);
}

/* "emma\nava\n" as a word list (in the scratch folder, then removed). */
static tg_words *two_words(void)
{
    scratch_enter();
    write_words("w.txt", "emma\nava\n");
    tg_words *w = tg_words_load("w.txt");
    cr_assert_not_null(w, "%s", tg_last_error());
    scratch_leave();
    return w;
}

ERROR_CASE(tg_words_load, path_null, "path is NULL")
{
    EXPECT_ERROR(tg_words_load(NULL) == NULL, "tg_words_load: path is NULL");
}

ERROR_CASE(tg_words_load, missing_file, "the file does not exist")
{
    scratch_enter();
    EXPECT_ERROR(tg_words_load("missing.txt") == NULL,
                 "tg_words_load: cannot open 'missing.txt': No such file or "
                 "directory");
    scratch_leave();
}

ERROR_CASE(tg_words_load, directory, "the path is a folder")
{
    scratch_enter();
    cr_assert_eq(mkdir("d", 0700), 0);
    EXPECT_ERROR(tg_words_load("d") == NULL,
                 "tg_words_load: 'd' is a folder");
    scratch_leave();
}

ERROR_CASE(tg_words_load, fifo,
           "the path is a FIFO (or a device, a socket): refused unread")
{
    scratch_enter();
    cr_assert_eq(mkfifo("f", 0600), 0);
    EXPECT_ERROR(tg_words_load("f") == NULL,
                 "tg_words_load: 'f' is a FIFO (named pipe)");
    scratch_leave();
}

ERROR_NOT_TRIGGERED(tg_words_load, "read error on '%s': %s",
                    "needs a regular file that opens but cannot be read "
                    "(a failing disk)");

ERROR_CASE(tg_words_load, empty_line, "a line is empty")
{
    scratch_enter();
    write_words("w.txt", "emma\n\nava\n");
    EXPECT_ERROR(tg_words_load("w.txt") == NULL,
                 "tg_words_load: line 2 of 'w.txt' "
                 "is empty");
    scratch_leave();
}

ERROR_CASE(tg_words_load, long_word, "a word is longer than TG_WORD_MAX")
{
    char text[TG_WORD_MAX + 2];
    memset(text, 'a', TG_WORD_MAX + 1);
    text[TG_WORD_MAX + 1] = '\0';
    scratch_enter();
    write_words("w.txt", text);
    EXPECT_ERROR(tg_words_load("w.txt") == NULL,
                 "tg_words_load: line 1 of 'w.txt' is longer "
                 "than 256 characters");
    scratch_leave();
}

ERROR_CASE(tg_words_load, dot, "a word contains '.'")
{
    scratch_enter();
    write_words("w.txt", "emma\nj.r.\n");
    EXPECT_ERROR(tg_words_load("w.txt") == NULL,
                 "tg_words_load: line 2 of 'w.txt' "
                 "contains '.' at column 2");
    scratch_leave();
}

ERROR_CASE(tg_words_load, non_ascii, "a byte is not ASCII (UTF-8 text)")
{
    scratch_enter();
    write_words("w.txt", "zo\xc3\xab\n");
    EXPECT_ERROR(tg_words_load("w.txt") == NULL,
                 "tg_words_load: line 1 of 'w.txt' "
                 "has the non-ASCII byte 0xc3 at "
                 "column 3");
    scratch_leave();
}

ERROR_CASE(tg_words_load, control, "a byte is a control character (a tab)")
{
    scratch_enter();
    write_words("w.txt", "a\tb\n");
    EXPECT_ERROR(tg_words_load("w.txt") == NULL,
                 "tg_words_load: line 1 of 'w.txt' has the "
                 "control byte 0x09 at column 2");
    scratch_leave();
}

ERROR_CASE(tg_words_load, no_words, "the file is empty")
{
    scratch_enter();
    write_words("w.txt", "");
    EXPECT_ERROR(tg_words_load("w.txt") == NULL,
                 "tg_words_load: 'w.txt' holds no words");
    scratch_leave();
}

ERROR_CASE(tg_words_load, out_of_memory_list, "memory runs out at once")
{
    scratch_enter();
    write_words("w.txt", "emma\nava\n");
    tg_fail_allocations_after(0);
    tg_words *w = tg_words_load("w.txt");
    tg_fail_allocations_after(-1);
    EXPECT_ERROR(w == NULL, "tg_words_load: out of memory for a word list");
    scratch_leave();
}

ERROR_CASE(tg_words_load, out_of_memory_text,
           "memory runs out for the file's bytes")
{
    scratch_enter();
    write_words("w.txt", "emma\nava\n");
    tg_fail_allocations_after(1);
    tg_words *w = tg_words_load("w.txt");
    tg_fail_allocations_after(-1);
    EXPECT_ERROR(w == NULL, "tg_words_load: out of memory reading 'w.txt' "
                            "(9 bytes)");
    scratch_leave();
}

ERROR_CASE(tg_words_load, out_of_memory_words,
           "memory runs out for the table of words")
{
    scratch_enter();
    write_words("w.txt", "emma\nava\n");
    tg_fail_allocations_after(2);
    tg_words *w = tg_words_load("w.txt");
    tg_fail_allocations_after(-1);
    EXPECT_ERROR(w == NULL, "tg_words_load: out of memory for the 2 words "
                            "of 'w.txt'");
    scratch_leave();
}

NEVER_FAILS(tg_words_free, "does nothing for NULL");

ERROR_CASE(tg_words_count, null_list, "w is NULL (tg_words_load failed): -1")
{
    EXPECT_SILENT(tg_words_count(NULL) == -1);
}

ERROR_CASE(tg_words_get, out_of_range, "i is not in [0, count)")
{
    tg_words *w = two_words();
    EXPECT_ERROR(tg_words_get(w, 2) == NULL,
                 "tg_words_get: index 2 is out of range for 2 words");
    tg_words_free(w);
}

ERROR_CASE(tg_words_get, null_list, "w is NULL (tg_words_load failed)")
{
    EXPECT_SILENT(tg_words_get(NULL, 0) == NULL);
}

ERROR_CASE(tg_words_vocab, null_list, "w is NULL (tg_words_load failed)")
{
    EXPECT_SILENT(tg_words_vocab(NULL) == NULL);
}

ERROR_CASE(tg_words_stoi, not_in_vocabulary,
           "the character is not in the vocabulary")
{
    tg_words *w = two_words();
    EXPECT_ERROR(tg_words_stoi(w, 'z') == -1,
                 "tg_words_stoi: the character 122 ('z') is not in the "
                 "vocabulary");
    tg_words_free(w);
}

ERROR_CASE(tg_words_stoi, null_list, "w is NULL (tg_words_load failed)")
{
    EXPECT_SILENT(tg_words_stoi(NULL, 'a') == -1);
}

ERROR_CASE(tg_words_shuffle, null_argument,
           "w or r is NULL (the call that made it failed)")
{
    tg_words *w = two_words();
    EXPECT_SILENT(tg_words_shuffle(w, NULL) == -1);
    tg_words_free(w);
}

ERROR_CASE(tg_words_dataset, out_null, "out is NULL")
{
    tg_words *w = two_words();
    EXPECT_ERROR(tg_words_dataset(w, 0, 2, 3, NULL) == -1,
                 "tg_words_dataset: out is NULL");
    tg_words_free(w);
}

ERROR_CASE(tg_words_dataset, zero_block_size, "block_size is less than 1")
{
    tg_words *w = two_words();
    tg_dataset d;
    EXPECT_ERROR(tg_words_dataset(w, 0, 2, 0, &d) == -1,
                 "tg_words_dataset: block_size is 0");
    tg_words_free(w);
}

ERROR_CASE(tg_words_dataset, bad_range,
           "[begin, end) is not a slice of the words")
{
    tg_words *w = two_words();
    tg_dataset d;
    EXPECT_ERROR(tg_words_dataset(w, 1, 3, 3, &d) == -1,
                 "tg_words_dataset: the words [1, 3) are not a range of the "
                 "2 words");
    tg_words_free(w);
}

ERROR_NOT_TRIGGERED(tg_words_dataset,
                    "%lld rows of block_size %d are too many",
                    "X would have more than 2^59 elements: with the largest "
                    "block_size, a file of more than 2^28 characters");

ERROR_CASE(tg_words_dataset, null_list, "w is NULL (tg_words_load failed)")
{
    tg_dataset d;
    EXPECT_SILENT(tg_words_dataset(NULL, 0, 1, 3, &d) == -1);
}

ERROR_CASE(tg_words_split, same_outputs,
           "train, dev and test are not three different datasets")
{
    tg_words *w = two_words();
    tg_dataset a, b;
    EXPECT_ERROR(tg_words_split(w, 3, 42, &a, &b, &a) == -1,
                 "tg_words_split: train, dev and test must be three "
                 "different datasets to fill");
    tg_words_free(w);
}

ERROR_CASE(tg_words_split, zero_block_size, "block_size is less than 1")
{
    tg_words *w = two_words();
    tg_dataset a, b, c;
    EXPECT_ERROR(tg_words_split(w, 0, 42, &a, &b, &c) == -1,
                 "tg_words_split: block_size is 0");
    tg_words_free(w);
}

ERROR_CASE(tg_words_split, out_of_memory, "memory runs out")
{
    tg_words *w = two_words();
    tg_dataset a, b, c;
    tg_fail_allocations_after(0);
    int rc = tg_words_split(w, 3, 42, &a, &b, &c);
    tg_fail_allocations_after(-1);
    EXPECT_ERROR(rc == -1,
                 "tg_words_split: out of memory for the order of 2 words");
    tg_words_free(w);
}

ERROR_CASE(tg_words_split, null_list, "w is NULL (tg_words_load failed)")
{
    tg_dataset a, b, c;
    EXPECT_SILENT(tg_words_split(NULL, 3, 42, &a, &b, &c) == -1);
}

/* --------------------------------------- rewriting a tree of modules */

ERROR_CASE(tg_module_replace_child_at, out_of_range,
           "i is not the index of one of m's children")
{
    tg_module *seq = TG_SEQUENTIAL(tg_tanh_new());
    tg_module *old = tg_module_replace_child_at(seq, 1, tg_relu_new());
    EXPECT_ERROR(old == NULL,
                 "tg_module_replace_child_at: child 1 of a Sequential with 1 child");
    cr_assert(tg_module_num_children(seq) == 1);
    tg_module_free(seq);
}

ERROR_CASE(tg_module_replace_child_at, already_has_parent,
           "the new child already belongs to another module")
{
    tg_module *a = TG_SEQUENTIAL(tg_tanh_new());
    tg_module *b = TG_SEQUENTIAL(tg_relu_new());
    tg_module *old = tg_module_replace_child_at(a, 0, tg_module_child_at(b, 0));
    EXPECT_ERROR(old == NULL,
                 "tg_module_replace_child_at: the new ReLU is already a child of another module");
    tg_module_free(b);
    tg_module_free(a);
}

ERROR_CASE(tg_module_replace_child_at, cycle,
           "the new child contains m")
{
    tg_module *inner = TG_SEQUENTIAL(tg_tanh_new());
    tg_module *outer = TG_SEQUENTIAL(inner);
    tg_module *old = tg_module_replace_child_at(inner, 0, outer);
    EXPECT_ERROR(old == NULL,
                 "tg_module_replace_child_at: the new Sequential contains the module it would go into");
    tg_module_free(outer);
}

ERROR_CASE(tg_module_replace_child_at, null_module,
           "m is NULL (an earlier call failed); child is freed")
{
    EXPECT_SILENT(tg_module_replace_child_at(NULL, 0, tg_tanh_new()) == NULL);
}

ERROR_CASE(tg_module_replace_child_at, null_child,
           "child is NULL (an earlier call failed)")
{
    tg_module *seq = TG_SEQUENTIAL(tg_tanh_new());
    EXPECT_SILENT(tg_module_replace_child_at(seq, 0, NULL) == NULL);
    tg_module_free(seq);
}

NEVER_FAILS(tg_batch_norm_module_info,
            "answers false for any module that is not a BatchNorm, and for NULL");

/* ---- digits (nn/digits.c) ---- */

#include <zlib.h>

/* Writes the digits file d.csv.gz (in the scratch folder) of n lines:
 * 64 pixels 1 and the label 1, except line bad_line, which is bad. */
static void write_digits_file(int n, int bad_line, const char *bad)
{
    gzFile gz = gzopen("d.csv.gz", "wb");
    cr_assert_not_null(gz, "cannot create d.csv.gz");
    for (int i = 1; i <= n; i++) {
        if (i == bad_line) {
            gzprintf(gz, "%s\n", bad);
            continue;
        }
        for (int p = 0; p < 64; p++)
            gzputs(gz, "1,");
        gzputs(gz, "1\n");
    }
    cr_assert_eq(gzclose(gz), Z_OK);
}

ERROR_CASE(tg_digits_load, path_null, "path is NULL")
{
    tg_dataset d;
    EXPECT_ERROR(tg_digits_load(NULL, &d) == -1,
                 "tg_digits_load: path is NULL");
}

ERROR_CASE(tg_digits_load, out_null, "out is NULL")
{
    EXPECT_ERROR(tg_digits_load("d.csv.gz", NULL) == -1,
                 "tg_digits_load: out is NULL");
}

ERROR_CASE(tg_digits_load, missing_file, "the file does not exist")
{
    scratch_enter();
    tg_dataset d;
    EXPECT_ERROR(tg_digits_load("missing.csv.gz", &d) == -1,
                 "tg_digits_load: cannot open 'missing.csv.gz': No such "
                 "file or directory");
    scratch_leave();
}

ERROR_CASE(tg_digits_load, directory, "the path is a folder")
{
    scratch_enter();
    cr_assert_eq(mkdir("d", 0700), 0);
    tg_dataset d;
    EXPECT_ERROR(tg_digits_load("d", &d) == -1,
                 "tg_digits_load: 'd' is a folder, not a regular file");
    scratch_leave();
}

ERROR_CASE(tg_digits_load, not_gzip, "the gzip stream is cut short")
{
    scratch_enter();
    write_digits_file(20, 0, "");
    cr_assert_eq(truncate("d.csv.gz", 40), 0);
    tg_dataset d;
    EXPECT_ERROR(tg_digits_load("d.csv.gz", &d) == -1,
                 "tg_digits_load: 'd.csv.gz' is not a readable gzip file: "
                 "unexpected end of file");
    scratch_leave();
}

ERROR_CASE(tg_digits_load, too_big, "more than 16 MiB once uncompressed")
{
    scratch_enter();
    gzFile gz = gzopen("d.csv.gz", "wb");
    cr_assert_not_null(gz);
    static char zeros[1 << 16];
    memset(zeros, '0', sizeof zeros);
    for (int i = 0; i < 257; i++)
        cr_assert_eq(gzwrite(gz, zeros, sizeof zeros), (int)sizeof zeros);
    cr_assert_eq(gzclose(gz), Z_OK);
    tg_dataset d;
    EXPECT_ERROR(tg_digits_load("d.csv.gz", &d) == -1,
                 "tg_digits_load: 'd.csv.gz' holds more than 16777216 "
                 "bytes once uncompressed");
    scratch_leave();
}

ERROR_CASE(tg_digits_load, empty_line, "a line is empty")
{
    scratch_enter();
    write_digits_file(5, 3, "");
    tg_dataset d;
    EXPECT_ERROR(tg_digits_load("d.csv.gz", &d) == -1,
                 "tg_digits_load: line 3 of 'd.csv.gz' is empty");
    scratch_leave();
}

ERROR_CASE(tg_digits_load, bad_pixel, "a pixel is not an integer in 0..16")
{
    scratch_enter();
    write_digits_file(5, 2, "0,17");
    tg_dataset d;
    EXPECT_ERROR(tg_digits_load("d.csv.gz", &d) == -1,
                 "tg_digits_load: line 2 of 'd.csv.gz': field 2 is '17'");
    scratch_leave();
}

ERROR_CASE(tg_digits_load, too_many_fields, "a line has more than 65 fields")
{
    scratch_enter();
    char line[200] = "";
    for (int p = 0; p < 66; p++)
        strcat(line, "1,");
    strcat(line, "1");
    write_digits_file(5, 4, line);
    tg_dataset d;
    EXPECT_ERROR(tg_digits_load("d.csv.gz", &d) == -1,
                 "tg_digits_load: line 4 of 'd.csv.gz' has 67 fields");
    scratch_leave();
}

ERROR_CASE(tg_digits_load, too_few_fields, "a line has fewer than 65 fields")
{
    scratch_enter();
    write_digits_file(5, 1, "1,2,3");
    tg_dataset d;
    EXPECT_ERROR(tg_digits_load("d.csv.gz", &d) == -1,
                 "tg_digits_load: line 1 of 'd.csv.gz' has 3 fields");
    scratch_leave();
}

ERROR_CASE(tg_digits_load, wrong_count, "the file does not hold 1797 images")
{
    scratch_enter();
    write_digits_file(5, 0, "");
    tg_dataset d;
    EXPECT_ERROR(tg_digits_load("d.csv.gz", &d) == -1,
                 "tg_digits_load: 'd.csv.gz' holds 5 images");
    scratch_leave();
}

ERROR_CASE(tg_digits_load, out_of_memory_text,
           "memory runs out at once")
{
    scratch_enter();
    write_digits_file(5, 0, "");
    tg_dataset d;
    tg_fail_allocations_after(0);
    int rc = tg_digits_load("d.csv.gz", &d);
    tg_fail_allocations_after(-1);
    EXPECT_ERROR(rc == -1, "tg_digits_load: out of memory for the gzip "
                           "reader of 'd.csv.gz'");
    scratch_leave();
}

ERROR_CASE(tg_digits_load, out_of_memory_growing,
           "memory runs out as the buffer grows")
{
    scratch_enter();
    write_digits_file(TG_DIGITS_COUNT, 0, ""); // 232 kB: the buffer grows
    tg_dataset d;
    tg_fail_allocations_after(1);
    int rc = tg_digits_load("d.csv.gz", &d);
    tg_fail_allocations_after(-1);
    EXPECT_ERROR(rc == -1, "tg_digits_load: out of memory reading "
                           "'d.csv.gz'");
    scratch_leave();
}

ERROR_CASE(tg_digits_load, out_of_memory_lines,
           "memory runs out for the parsed lines")
{
    scratch_enter();
    write_digits_file(5, 0, "");
    tg_dataset d;
    tg_fail_allocations_after(1);
    int rc = tg_digits_load("d.csv.gz", &d);
    tg_fail_allocations_after(-1);
    EXPECT_ERROR(rc == -1, "tg_digits_load: out of memory for the 5 lines "
                           "of 'd.csv.gz'");
    scratch_leave();
}

ERROR_CASE(tg_digits_split, same_sets, "train and val are the same dataset")
{
    tg_dataset a;
    EXPECT_ERROR(tg_digits_split("d.csv.gz", 0.2, 1, &a, &a) == -1,
                 "tg_digits_split: train and val must be two different "
                 "datasets to fill");
}

ERROR_CASE(tg_digits_split, val_fraction, "val_fraction is not in (0, 1)")
{
    tg_dataset a, b;
    EXPECT_ERROR(tg_digits_split("d.csv.gz", 0, 1, &a, &b) == -1,
                 "tg_digits_split: val_fraction is 0");
}

ERROR_CASE(tg_digits_split, missing_file, "the file does not exist")
{
    scratch_enter();
    tg_dataset a, b;
    EXPECT_ERROR(tg_digits_split("missing.csv.gz", 0.2, 1, &a, &b) == -1,
                 "tg_digits_split: cannot open 'missing.csv.gz': No such "
                 "file or directory");
    scratch_leave();
}

/* ---- image layers ---- */

ERROR_CASE(tg_conv2d_new, zero_size, "a channel count or kernel size is < 1")
{
    tg_module *m = tg_conv2d_new(0, 8, 3, 3, NULL, true);
    EXPECT_ERROR(m == NULL, "tg_conv2d_new: cannot make a Conv2d layer from "
                            "0 to 8 channels with a (3, 3) kernel");
}

ERROR_CASE(tg_conv2d_new, negative_option,
           "a stride, padding, dilation or groups is negative")
{
    tg_module *m = tg_conv2d_new(1, 8, 3, 3,
                                 &(tg_conv2d_options){.padding = {-1, 1}},
                                 true);
    EXPECT_ERROR(m == NULL, "tg_conv2d_new: negative option: stride (0, 0), "
                            "padding (-1, 1), dilation (0, 0), groups 0");
}

ERROR_CASE(tg_conv2d_new, groups_do_not_divide,
           "groups does not divide in_channels and out_channels")
{
    tg_module *m = tg_conv2d_new(4, 6, 3, 3,
                                 &(tg_conv2d_options){.groups = 4}, true);
    EXPECT_ERROR(m == NULL, "tg_conv2d_new: groups 4 does not divide "
                            "in_channels 4 and out_channels 6");
}

ERROR_CASE(tg_conv2d_new, weight_too_large,
           "the weight would have 2^59 elements or more")
{
    tg_module *m = tg_conv2d_new(INT64_C(1) << 30, INT64_C(1) << 30, 1, 1,
                                 NULL, true);
    EXPECT_ERROR(m == NULL, "tg_conv2d_new: shape (1073741824, 1073741824, "
                            "1, 1) has too many elements");
}

ERROR_CASE(tg_max_pool2d_new, bad_window,
           "kernel_size < 1, stride < 0, or padding outside "
           "[0, kernel_size / 2]")
{
    tg_module *m = tg_max_pool2d_new(2, 0, 2);
    EXPECT_ERROR(m == NULL, "tg_max_pool2d_new: invalid window: kernel_size "
                            "2, stride 0, padding 2");
}

ERROR_CASE(tg_avg_pool2d_new, bad_window,
           "kernel_size < 1, stride < 0, or padding outside "
           "[0, kernel_size / 2]")
{
    tg_module *m = tg_avg_pool2d_new(0, 1, 0);
    EXPECT_ERROR(m == NULL, "tg_avg_pool2d_new: invalid window: kernel_size "
                            "0, stride 1, padding 0");
}

/* ------------------------------------------- GroupNorm and InstanceNorm */

ERROR_CASE(tg_group_norm_new, channels_not_divisible,
           "num_channels is not divisible by num_groups")
{
    EXPECT_ERROR(tg_group_norm_new(4, 6, 1e-5, true) == NULL,
                 "tg_group_norm_new: cannot split 6 channels into 4 groups");
}

ERROR_CASE(tg_group_norm_new, zero_groups, "num_groups is 0 or negative")
{
    EXPECT_ERROR(tg_group_norm_new(0, 6, 1e-5, true) == NULL,
                 "tg_group_norm_new: cannot split 6 channels into 0 groups");
}

ERROR_CASE(tg_group_norm_new, bad_eps, "eps is negative, inf or NaN")
{
    EXPECT_ERROR(tg_group_norm_new(2, 6, -1e-5, true) == NULL,
                 "tg_group_norm_new: eps is -1e-05");
}

ERROR_CASE(tg_instance_norm1d_new, zero_features, "num_features is 0")
{
    EXPECT_ERROR(tg_instance_norm1d_new(0, 1e-5, 0.1, false, false) == NULL,
                 "tg_instance_norm1d_new: num_features is 0");
}

ERROR_CASE(tg_instance_norm1d_new, bad_momentum, "momentum is outside [0, 1]")
{
    EXPECT_ERROR(tg_instance_norm1d_new(3, 1e-5, 2.0, false, true) == NULL,
                 "tg_instance_norm1d_new: momentum is 2");
}

ERROR_CASE(tg_instance_norm1d_new, bad_eps, "eps is negative, inf or NaN")
{
    EXPECT_ERROR(tg_instance_norm1d_new(3, -1.0, 0.1, false, false) == NULL,
                 "tg_instance_norm1d_new: eps is -1");
}

ERROR_CASE(tg_instance_norm2d_new, zero_features, "num_features is 0")
{
    EXPECT_ERROR(tg_instance_norm2d_new(-2, 1e-5, 0.1, false, false) == NULL,
                 "tg_instance_norm2d_new: num_features is -2");
}

ERROR_CASE(tg_instance_norm2d_new, bad_momentum, "momentum is outside [0, 1]")
{
    EXPECT_ERROR(tg_instance_norm2d_new(3, 1e-5, -0.5, true, true) == NULL,
                 "tg_instance_norm2d_new: momentum is -0.5");
}

ERROR_CASE(tg_instance_norm2d_new, bad_eps, "eps is negative, inf or NaN")
{
    EXPECT_ERROR(tg_instance_norm2d_new(3, INFINITY, 0.1, false, false) ==
                     NULL,
                 "tg_instance_norm2d_new: eps is inf");
}
