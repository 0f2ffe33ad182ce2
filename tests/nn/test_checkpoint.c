/*
 * tests/nn/test_checkpoint.c - saving a module to a folder of .npy files
 * and loading it back in place (nn/checkpoint.c).
 *
 * Covered here: the files written (one per parameter and buffer, named by
 * the dotted names, readable as .npy with the tensors' exact values,
 * dtypes and shapes, num_batches_tracked as an int64 0-d array); the
 * creation of missing parent folders; a round trip through a model whose
 * parameters and running statistics have moved (every tensor equal bit for
 * bit, the same tensor objects, equal outputs in both modes); that a load
 * changes nothing when any file is missing, corrupt, of another shape or
 * of another dtype, with messages naming the tensor, the shapes and the
 * file; tied weights; gradients untouched and nothing recorded on the
 * tape; the argument errors.
 *
 * Every test works in its own folder made by mkdtemp under /tmp and
 * removes it at the end.
 */
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L // mkdtemp, opendir, unlink, rmdir
#endif

#include "../common.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

/* -------------------------------------------------------- temp folders */

static char *temp_folder(void)
{
    char *dir = malloc(64);
    snprintf(dir, 64, "/tmp/tg_ckpt_XXXXXX");
    cr_assert_not_null(mkdtemp(dir), "mkdtemp failed");
    return dir;
}

/* rm -r path (files and folders only; what these tests make). */
static void remove_tree(const char *path)
{
    DIR *d = opendir(path);
    if (d) {
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
    } else {
        unlink(path);
    }
}

static void drop_folder(char *dir)
{
    remove_tree(dir);
    free(dir);
}

static char *join(const char *dir, const char *name)
{
    static char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    return path;
}

static bool exists(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0;
}

static int count_files(const char *dir)
{
    DIR *d = opendir(dir);
    cr_assert_not_null(d);
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL)
        n += e->d_name[0] != '.';
    closedir(d);
    return n;
}

static void write_bytes(const char *path, const char *bytes, size_t n)
{
    FILE *f = fopen(path, "wb");
    cr_assert_not_null(f);
    cr_assert_eq(fwrite(bytes, 1, n, f), n);
    fclose(f);
}

/* --------------------------------------------------------------- models */

/* Sequential(Linear(2, 3), BatchNorm1d(3), ReLU(), Linear(3, width)). */
static tg_module *mlp(int64_t width)
{
    tg_module *m = TG_SEQUENTIAL(tg_linear_new(2, 3, true),
                                 tg_batch_norm1d_new(3, NULL), tg_relu_new(),
                                 tg_linear_new(3, width, true));
    cr_assert_not_null(m, "%s", tg_last_error());
    return m;
}

/* The names mlp() has, parameters first. */
static const char *const mlp_names[] = {
    "0.weight", "0.bias", "1.weight", "1.bias", "3.weight", "3.bias",
    "1.running_mean", "1.running_var", "1.num_batches_tracked"};
#define MLP_TENSORS 9

/* Every parameter and buffer of m, in the order of the named lists. */
static int tensors_of(const tg_module *m, tg_named_tensor *out, int max)
{
    int np = tg_module_named_parameters(m, out, max);
    int nb = tg_module_named_buffers(m, out + np, max - np);
    cr_assert(np >= 0 && nb >= 0 && np + nb <= max);
    return np + nb;
}

/* Moves every tensor of an mlp away from its initial values: parameters
 * drawn from g, then three training batches through BatchNorm (running
 * statistics and num_batches_tracked move). */
static void train_ish(tg_module *m, tg_generator *g)
{
    tg_named_tensor t[16];
    int np = tg_module_named_parameters(m, t, 16);
    tg_no_grad_begin();
    for (int i = 0; i < np; i++)
        cr_assert_eq(tg_uniform_(t[i].tensor, -1, 1, g), 0);
    tg_no_grad_end();
    tg_module_train(m, true);
    for (int b = 0; b < 3; b++) {
        tg_tensor *x = tg_randn_gen(g, TG_SHAPE(8, 2), TG_FLOAT32);
        tg_tensor *y = tg_module_forward(m, x);
        cr_assert_not_null(y, "%s", tg_last_error());
        tg_release(y);
        tg_release(x);
    }
}

/* Clones of every tensor of m, to check later that nothing changed. */
typedef struct snapshot {
    int n;
    tg_tensor *copy[16];
    tg_tensor *object[16];
} snapshot;

static snapshot take_snapshot(const tg_module *m)
{
    tg_named_tensor t[16];
    snapshot s = {.n = tensors_of(m, t, 16)};
    tg_no_grad_begin(); // plain copies, not recorded
    for (int i = 0; i < s.n; i++) {
        s.object[i] = t[i].tensor;
        s.copy[i] = tg_clone(t[i].tensor);
    }
    tg_no_grad_end();
    return s;
}

/* True when m's tensors are the same objects with the same values as at
 * s; otherwise says which one differs in report. */
static bool unchanged(const tg_module *m, const snapshot *s, char *report,
                      size_t size)
{
    tg_named_tensor t[16];
    int n = tensors_of(m, t, 16);
    if (n != s->n) {
        snprintf(report, size, "%d tensors, %d before", n, s->n);
        return false;
    }
    for (int i = 0; i < n; i++) {
        char why[256];
        if (t[i].tensor != s->object[i]) {
            snprintf(report, size, "%s was replaced", t[i].name);
            return false;
        }
        if (!tg_test_close(t[i].tensor, s->copy[i], 0, 0, true, why,
                           sizeof why)) {
            snprintf(report, size, "%s changed: %s", t[i].name, why);
            return false;
        }
    }
    return true;
}

static void assert_unchanged(const tg_module *m, const snapshot *s)
{
    char report[512];
    cr_assert(unchanged(m, s, report, sizeof report), "%s", report);
}

static void free_snapshot(snapshot *s)
{
    for (int i = 0; i < s->n; i++)
        tg_release(s->copy[i]);
}

/* ---------------------------------------------------------------- save */

TG_TEST(checkpoint, save_writes_one_npy_per_tensor)
{
    char *dir = temp_folder();
    tg_generator *g = tg_generator_new(1);
    tg_module *m = mlp(2);
    train_ish(m, g);
    cr_assert_eq(tg_module_save(m, dir), 0, "%s", tg_last_error());
    cr_assert_eq(count_files(dir), MLP_TENSORS);
    tg_named_tensor t[16];
    cr_assert_eq(tensors_of(m, t, 16), MLP_TENSORS);
    for (int i = 0; i < MLP_TENSORS; i++) {
        cr_assert_str_eq(t[i].name, mlp_names[i]);
        char file[128];
        snprintf(file, sizeof file, "%s.npy", mlp_names[i]);
        tg_tensor *back = tg_load_npy(join(dir, file));
        cr_assert_not_null(back, "%s", tg_last_error());
        tg_assert_close(back, t[i].tensor, 0, 0); // dtype, shape, bits
        tg_release(back);
    }
    tg_tensor *nbt = tg_load_npy(join(dir, "1.num_batches_tracked.npy"));
    cr_assert_eq(nbt->dtype, TG_INT64);
    cr_assert_eq(nbt->ndim, 0);
    cr_assert_eq(tg_item(nbt), 3);
    tg_release(nbt);
    tg_module_free(m);
    tg_generator_free(g);
    drop_folder(dir);
}

TG_TEST(checkpoint, save_creates_missing_parent_folders)
{
    char *dir = temp_folder();
    char deep[256];
    snprintf(deep, sizeof deep, "%s/runs//a/b/", dir); // '//', trailing '/'
    tg_module *m = tg_layer_norm_new(TG_SHAPE(4), 1e-5, true);
    cr_assert_eq(tg_module_save(m, deep), 0, "%s", tg_last_error());
    char path[300];
    snprintf(path, sizeof path, "%s/runs/a/b/weight.npy", dir);
    cr_assert(exists(path));
    snprintf(path, sizeof path, "%s/runs/a/b/bias.npy", dir);
    cr_assert(exists(path));
    /* again into the same folder: overwritten, still fine */
    cr_assert_eq(tg_module_save(m, deep), 0, "%s", tg_last_error());
    cr_assert_eq(tg_module_load(m, deep), 0, "%s", tg_last_error());
    tg_module_free(m);
    drop_folder(dir);
}

/* ------------------------------------------------------------ round trip */

TG_TEST(checkpoint, round_trip_restores_every_tensor_in_place)
{
    char *dir = temp_folder();
    tg_generator *g = tg_generator_new(7);
    tg_module *a = mlp(2);
    train_ish(a, g);
    cr_assert_eq(tg_module_save(a, dir), 0, "%s", tg_last_error());

    tg_module *b = mlp(2); // fresh: other weights, initial statistics
    tg_named_tensor ta[16], tb[16];
    int n = tensors_of(a, ta, 16);
    cr_assert_eq(tensors_of(b, tb, 16), n);
    tg_tensor *objects[16];
    uint64_t versions[16];
    for (int i = 0; i < n; i++) {
        objects[i] = tb[i].tensor;
        versions[i] = tb[i].tensor->storage->version;
    }
    cr_assert_eq(tg_module_load(b, dir), 0, "%s", tg_last_error());
    cr_assert_eq(tensors_of(b, tb, 16), n);
    for (int i = 0; i < n; i++) {
        cr_assert_eq(tb[i].tensor, objects[i], "%s is another object",
                     tb[i].name);
        cr_assert_gt(tb[i].tensor->storage->version, versions[i]);
        tg_assert_close(tb[i].tensor, ta[i].tensor, 0, 0);
    }
    /* parameters are still leaves that require grad */
    for (int i = 0; i < 6; i++)
        cr_assert(tb[i].tensor->requires_grad && !tb[i].tensor->grad_fn);
    cr_assert_eq(tg_tape_size(), 0);

    /* the same outputs, in eval and in training mode */
    tg_tensor *x = tg_randn_gen(g, TG_SHAPE(5, 2), TG_FLOAT32);
    for (int mode = 0; mode < 2; mode++) {
        tg_module_train(a, mode);
        tg_module_train(b, mode);
        tg_no_grad_begin();
        tg_tensor *ya = tg_module_forward(a, x);
        tg_tensor *yb = tg_module_forward(b, x);
        tg_no_grad_end();
        tg_assert_close(yb, ya, 0, 0);
        tg_release(ya);
        tg_release(yb);
    }
    tg_release(x);
    tg_module_free(a);
    tg_module_free(b);
    tg_generator_free(g);
    drop_folder(dir);
}

TG_TEST(checkpoint, float64_round_trip)
{
    char *dir = temp_folder();
    tg_generator *g = tg_generator_new(2);
    tg_module *a = mlp(3), *b = mlp(3);
    cr_assert_eq(tg_module_to_dtype(a, TG_FLOAT64), 0);
    cr_assert_eq(tg_module_to_dtype(b, TG_FLOAT64), 0);
    tg_named_tensor t[16];
    int np = tg_module_named_parameters(a, t, 16);
    tg_no_grad_begin();
    for (int i = 0; i < np; i++)
        tg_normal_(t[i].tensor, 0, 1, g); // values float32 cannot hold
    tg_no_grad_end();
    cr_assert_eq(tg_module_save(a, dir), 0);
    cr_assert_eq(tg_module_load(b, dir), 0, "%s", tg_last_error());
    tg_named_tensor tb[16];
    int n = tensors_of(a, t, 16);
    tensors_of(b, tb, 16);
    for (int i = 0; i < n; i++)
        tg_assert_close(tb[i].tensor, t[i].tensor, 0, 0);
    tg_module_free(a);
    tg_module_free(b);
    tg_generator_free(g);
    drop_folder(dir);
}

/* Gradients are not part of a checkpoint: a load leaves .grad alone, and
 * the model trains on from the loaded values. */
TG_TEST(checkpoint, load_leaves_gradients_and_records_nothing)
{
    char *dir = temp_folder();
    tg_generator *g = tg_generator_new(3);
    tg_module *a = mlp(2), *b = mlp(2);
    train_ish(a, g);
    cr_assert_eq(tg_module_save(a, dir), 0);
    tg_tensor *x = tg_randn_gen(g, TG_SHAPE(4, 2), TG_FLOAT32);
    tg_tensor *y = tg_module_forward(b, x);
    tg_tensor *loss = tg_sum(y, NULL, 0, false);
    cr_assert_eq(tg_backward(loss), 0, "%s", tg_last_error());
    tg_release(loss);
    tg_release(y);
    tg_tensor *w = tg_module_parameter(b, "0.weight");
    tg_tensor *grad = tg_clone(w->grad);
    cr_assert_eq(tg_module_load(b, dir), 0, "%s", tg_last_error());
    tg_assert_close(w->grad, grad, 0, 0);
    cr_assert_eq(tg_tape_size(), 0);
    /* and a new forward/backward works from the loaded weights */
    y = tg_module_forward(b, x);
    loss = tg_sum(y, NULL, 0, false);
    cr_assert_eq(tg_backward(loss), 0, "%s", tg_last_error());
    tg_release(loss);
    tg_release(y);
    tg_release(grad);
    tg_release(x);
    tg_module_free(a);
    tg_module_free(b);
    tg_generator_free(g);
    drop_folder(dir);
}

/* An optimiser made before the load steps the loaded tensors: they are
 * the ones it holds. SGD with lr 0.5: w = w_loaded - 0.5 grad. */
TG_TEST(checkpoint, optimiser_made_before_the_load_steps_the_loaded_values)
{
    char *dir = temp_folder();
    tg_generator *g = tg_generator_new(6);
    tg_module *a = mlp(2), *b = mlp(2);
    train_ish(a, g);
    cr_assert_eq(tg_module_save(a, dir), 0);
    tg_sgd_config c = {.lr = 0.5};
    tg_optimizer *opt = tg_sgd_new(b, &c);
    cr_assert_not_null(opt, "%s", tg_last_error());
    cr_assert_eq(tg_module_load(b, dir), 0, "%s", tg_last_error());
    tg_tensor *x = tg_randn_gen(g, TG_SHAPE(4, 2), TG_FLOAT32);
    tg_tensor *y = tg_module_forward(b, x);
    tg_tensor *loss = tg_sum(y, NULL, 0, false);
    cr_assert_eq(tg_backward(loss), 0, "%s", tg_last_error());
    tg_tensor *w = tg_module_parameter(b, "3.weight");
    tg_no_grad_begin();
    tg_tensor *step = tg_mul_scalar(w->grad, -0.5);
    tg_tensor *want = tg_add(tg_module_parameter(a, "3.weight"), step);
    tg_no_grad_end();
    cr_assert_eq(tg_optimizer_step(opt), 0, "%s", tg_last_error());
    /* one float32 rounding of w - lr * grad, either way round */
    tg_assert_close(w, want, 0, 1e-6);
    tg_release(want);
    tg_release(step);
    tg_release(loss);
    tg_release(y);
    tg_release(x);
    tg_optimizer_free(opt);
    tg_module_free(a);
    tg_module_free(b);
    tg_generator_free(g);
    drop_folder(dir);
}

/* A tensor registered twice is one file, under its first name. */
static tg_tensor *tied_forward(tg_module *m, const tg_tensor *x)
{
    (void)m;
    return tg_retain((tg_tensor *)x);
}
static const tg_module_type tied_type = {"Tied", tied_forward, NULL, 0};

TG_TEST(checkpoint, tied_weights_are_saved_once)
{
    char *dir = temp_folder();
    tg_module *a = tg_module_new(&tied_type), *b = tg_module_new(&tied_type);
    tg_module *both[2] = {a, b};
    for (int k = 0; k < 2; k++) {
        tg_tensor *w = tg_full(TG_SHAPE(2), k ? 0.0 : 1.5, TG_FLOAT32);
        cr_assert_eq(tg_module_add_parameter(both[k], "encoder", w), 0);
        cr_assert_eq(tg_module_add_parameter(both[k], "decoder", w), 0);
        tg_release(w);
    }
    cr_assert_eq(tg_module_save(a, dir), 0, "%s", tg_last_error());
    cr_assert_eq(count_files(dir), 1);
    cr_assert(exists(join(dir, "encoder.npy")));
    cr_assert_eq(tg_module_load(b, dir), 0, "%s", tg_last_error());
    tg_tensor *d = tg_module_parameter(b, "decoder");
    cr_assert_eq(d, tg_module_parameter(b, "encoder"));
    cr_assert_eq(tg_data_f32(d)[1], 1.5f);
    tg_module_free(a);
    tg_module_free(b);
    drop_folder(dir);
}

/* Files that name no tensor of the model are ignored (see the header of
 * nn/checkpoint.c); a module without tensors saves an empty folder. */
TG_TEST(checkpoint, other_files_are_ignored_and_empty_modules_work)
{
    char *dir = temp_folder();
    tg_module *m = tg_layer_norm_new(TG_SHAPE(3), 1e-5, true);
    cr_assert_eq(tg_module_save(m, dir), 0);
    write_bytes(join(dir, "notes.txt"), "hello", 5);
    tg_tensor *t = tg_zeros(TG_SHAPE(7), TG_FLOAT64);
    cr_assert_eq(tg_save_npy(join(dir, "extra.npy"), t), 0);
    tg_release(t);
    cr_assert_eq(tg_module_load(m, dir), 0, "%s", tg_last_error());
    tg_module_free(m);

    tg_module *empty = tg_relu_new();
    char sub[256];
    snprintf(sub, sizeof sub, "%s/empty", dir);
    cr_assert_eq(tg_module_save(empty, sub), 0, "%s", tg_last_error());
    cr_assert_eq(count_files(sub), 0);
    cr_assert_eq(tg_module_load(empty, sub), 0, "%s", tg_last_error());
    tg_module_free(empty);
    drop_folder(dir);
}

/* The check used below can fail: one element of one buffer moved, or a
 * tensor replaced by an equal copy, is reported. */
TG_TEST(checkpoint, unchanged_check_rejects_a_change)
{
    tg_module *m = mlp(2);
    snapshot s = take_snapshot(m);
    char report[512];
    cr_assert(unchanged(m, &s, report, sizeof report), "%s", report);
    tg_tensor *rv = tg_module_buffer(m, "1.running_var");
    cr_assert_eq(tg_set(rv, (int64_t[]){2}, 1, 1.0000001), 0);
    cr_assert_not(unchanged(m, &s, report, sizeof report));
    cr_assert(strstr(report, "1.running_var changed"), "%s", report);
    free_snapshot(&s);
    tg_module_free(m);

    tg_module *a = tg_module_new(&tied_type);
    tg_tensor *w = tg_zeros(TG_SHAPE(2), TG_FLOAT32);
    cr_assert_eq(tg_module_add_buffer(a, "w", w), 0);
    s = take_snapshot(a);
    tg_module *b = tg_module_new(&tied_type);
    tg_tensor *w2 = tg_zeros(TG_SHAPE(2), TG_FLOAT32);
    cr_assert_eq(tg_module_add_buffer(b, "w", w2), 0);
    cr_assert_not(unchanged(b, &s, report, sizeof report));
    cr_assert(strstr(report, "w was replaced"), "%s", report);
    free_snapshot(&s);
    tg_release(w);
    tg_release(w2);
    tg_module_free(a);
    tg_module_free(b);
}

/* The .npy loader's message reaches the error handler once, inside
 * tg_module_load's, and the handler is the caller's again afterwards. */
static int handler_calls;
static char handler_first[256];
static void counting_handler(const char *message)
{
    if (handler_calls++ == 0)
        snprintf(handler_first, sizeof handler_first, "%s", message);
}

TG_TEST(checkpoint, file_errors_reach_the_handler_once)
{
    char *dir = temp_folder();
    tg_module *m = tg_layer_norm_new(TG_SHAPE(2), 1e-5, true);
    cr_assert_eq(tg_module_save(m, dir), 0);
    write_bytes(join(dir, "bias.npy"), "garbage", 7);
    handler_calls = 0;
    tg_set_error_handler(counting_handler);
    int rc = tg_module_load(m, dir);
    int calls = handler_calls;
    tg_error("test", "after");
    int calls_after = handler_calls;
    tg_set_error_handler(tg_error_handler_quiet);
    cr_assert_eq(rc, -1);
    cr_assert_eq(calls, 1);
    cr_assert_eq(calls_after, 2);
    const char *start = "tg_module_load: cannot read bias: cannot load '";
    cr_assert(strncmp(handler_first, start, strlen(start)) == 0, "%s",
              handler_first);
    /* saving onto a folder named like the file */
    char sub[256];
    snprintf(sub, sizeof sub, "%s/s", dir);
    cr_assert_eq(tg_module_save(m, sub), 0);
    cr_assert_eq(remove(join(sub, "weight.npy")), 0);
    cr_assert_eq(mkdir(join(sub, "weight.npy"), 0777), 0);
    handler_calls = 0;
    tg_set_error_handler(counting_handler);
    rc = tg_module_save(m, sub);
    calls = handler_calls;
    tg_set_error_handler(tg_error_handler_quiet);
    cr_assert_eq(rc, -1);
    cr_assert_eq(calls, 1);
    tg_assert_error("tg_module_save: cannot write weight: '",
                    "weight.npy' exists and is a folder");
    tg_module_free(m);
    drop_folder(dir);
}

/* ------------------------------------------- all or nothing, messages */

/* The last file of the list is the one broken, so every other file has
 * been read (and would have been copied by a loader that copies as it
 * goes) before the error. */
TG_TEST(checkpoint, missing_file_changes_nothing)
{
    char *dir = temp_folder();
    tg_generator *g = tg_generator_new(4);
    tg_module *a = mlp(2), *b = mlp(2);
    train_ish(a, g);
    cr_assert_eq(tg_module_save(a, dir), 0);
    char *path = join(dir, "1.num_batches_tracked.npy");
    cr_assert_eq(unlink(path), 0);
    snapshot s = take_snapshot(b);
    cr_assert_eq(tg_module_load(b, dir), -1);
    tg_assert_error("tg_module_load: the checkpoint has no "
                    "1.num_batches_tracked: '",
                    "1.num_batches_tracked.npy' does not exist",
                    "rule: every parameter and buffer of the model needs",
                    "hint: was the checkpoint saved from a model of this "
                    "architecture");
    cr_assert(strstr(tg_last_error(), path));
    assert_unchanged(b, &s);
    free_snapshot(&s);
    tg_module_free(a);
    tg_module_free(b);
    tg_generator_free(g);
    drop_folder(dir);
}

TG_TEST(checkpoint, corrupt_file_changes_nothing)
{
    char *dir = temp_folder();
    tg_generator *g = tg_generator_new(5);
    tg_module *a = mlp(2), *b = mlp(2);
    train_ish(a, g);
    cr_assert_eq(tg_module_save(a, dir), 0);
    const char *path = join(dir, "1.num_batches_tracked.npy");
    write_bytes(path, "\x93NUMPY\x01", 7); // cut short after the magic
    char want[4400]; // room for a path from join()
    snprintf(want, sizeof want,
             "tg_module_load: cannot read 1.num_batches_tracked: cannot "
             "load '%s': ",
             path);
    snapshot s = take_snapshot(b);
    cr_assert_eq(tg_module_load(b, dir), -1);
    tg_assert_error(want);
    assert_unchanged(b, &s);
    /* a header that lies about the size: truncated data */
    tg_tensor *big = tg_zeros(TG_SHAPE(3), TG_FLOAT32);
    path = join(dir, "3.bias.npy");
    cr_assert_eq(tg_save_npy(path, big), 0);
    tg_release(big);
    FILE *f = fopen(path, "r+b");
    fseek(f, 0, SEEK_END);
    long size = ftell(f);
    fclose(f);
    cr_assert_eq(truncate(path, size - 4), 0);
    cr_assert_eq(tg_module_load(b, dir), -1);
    tg_assert_error("tg_module_load: cannot read 3.bias: cannot load '");
    assert_unchanged(b, &s);
    free_snapshot(&s);
    tg_module_free(a);
    tg_module_free(b);
    tg_generator_free(g);
    drop_folder(dir);
}

/* Loading into another architecture fails on the first tensor whose
 * shape differs, with both shapes and the file. */
TG_TEST(checkpoint, other_architecture_names_both_shapes)
{
    char *dir = temp_folder();
    tg_module *a = mlp(2), *b = mlp(4); // last Linear (3, 2) vs (3, 4)
    cr_assert_eq(tg_module_save(a, dir), 0);
    snapshot s = take_snapshot(b);
    cr_assert_eq(tg_module_load(b, dir), -1);
    char want[4400]; // room for a path from join()
    snprintf(want, sizeof want,
             "tg_module_load: checkpoint has (2, 3) for 3.weight, the model "
             "has (4, 3) (file '%s')",
             join(dir, "3.weight.npy"));
    tg_assert_error(want, "rule: tensors are loaded in place",
                    "hint: build the model with the same layers");
    assert_unchanged(b, &s);
    free_snapshot(&s);
    tg_module_free(a);
    tg_module_free(b);

    /* LayerNorm((3, 2)) saved, LayerNorm((2, 3)) loading */
    a = tg_layer_norm_new(TG_SHAPE(3, 2), 1e-5, true);
    b = tg_layer_norm_new(TG_SHAPE(2, 3), 1e-5, true);
    cr_assert_eq(tg_module_save(a, dir), 0);
    cr_assert_eq(tg_module_load(b, dir), -1);
    tg_assert_error("checkpoint has (3, 2) for weight, the model has (2, 3)");
    tg_module_free(a);
    tg_module_free(b);

    /* a model with a tensor the checkpoint lacks: LayerNorm(2) has the
     * weight and bias of BatchNorm1d(2), not its running statistics */
    a = tg_layer_norm_new(TG_SHAPE(2), 1e-5, true);
    b = tg_batch_norm1d_new(2, NULL);
    cr_assert_eq(tg_module_save(a, dir), 0);
    cr_assert_eq(tg_module_load(b, dir), -1);
    tg_assert_error("the checkpoint has no running_mean");
    tg_module_free(a);
    tg_module_free(b);
    drop_folder(dir);
}

TG_TEST(checkpoint, dtype_mismatch_changes_nothing)
{
    char *dir = temp_folder();
    tg_module *a = mlp(2), *b = mlp(2);
    cr_assert_eq(tg_module_save(a, dir), 0);
    cr_assert_eq(tg_module_to_dtype(b, TG_FLOAT64), 0);
    snapshot s = take_snapshot(b);
    cr_assert_eq(tg_module_load(b, dir), -1);
    tg_assert_error("tg_module_load: checkpoint has float32 for 0.weight, "
                    "the model has float64 (file '",
                    "exactly the dtype saved",
                    "tg_module_to_dtype(m, TG_FLOAT32)");
    assert_unchanged(b, &s);
    free_snapshot(&s);
    tg_module_free(b);
    /* an int64 file where a float tensor belongs */
    tg_tensor *t = tg_zeros(TG_SHAPE(3), TG_INT64);
    cr_assert_eq(tg_save_npy(join(dir, "1.bias.npy"), t), 0);
    tg_release(t);
    cr_assert_eq(tg_module_load(a, dir), -1);
    tg_assert_error("checkpoint has int64 for 1.bias, the model has float32",
                    "an integer tensor and a float one");
    tg_module_free(a);
    drop_folder(dir);
}

TG_TEST(checkpoint, argument_errors)
{
    char *dir = temp_folder();
    tg_module *m = tg_batch_norm1d_new(2, NULL);
    cr_assert_eq(tg_module_save(m, NULL), -1);
    tg_assert_error("tg_module_save: the folder name is NULL");
    cr_assert_eq(tg_module_save(m, ""), -1);
    tg_assert_error("tg_module_save: the folder name is empty");
    cr_assert_eq(tg_module_load(m, NULL), -1);
    tg_assert_error("tg_module_load: the folder name is NULL");

    char path[256];
    snprintf(path, sizeof path, "%s/none", dir);
    cr_assert_eq(tg_module_load(m, path), -1);
    tg_assert_error("tg_module_load: there is no checkpoint folder '",
                    "/none'");

    /* a file where the folder should be, or on the way to it */
    snprintf(path, sizeof path, "%s/file", dir);
    write_bytes(path, "x", 1);
    cr_assert_eq(tg_module_save(m, path), -1);
    tg_assert_error("tg_module_save: '", "/file' exists and is not a folder");
    cr_assert_eq(tg_module_load(m, path), -1);
    tg_assert_error("there is no checkpoint folder");
    snprintf(path, sizeof path, "%s/file/sub", dir);
    cr_assert_eq(tg_module_save(m, path), -1);
    tg_assert_error("tg_module_save: '", "/file' exists and is not a folder");
    snprintf(path, sizeof path, "%s/file/sub/ck", dir);
    cr_assert_eq(tg_module_save(m, path), -1);
    tg_assert_error("tg_module_save: cannot create the folder '",
                    "/file/sub' for '", "/file/sub/ck'", "Not a directory");

    /* a name that cannot be a file name is refused when registered */
    tg_module *odd = tg_module_new(&tied_type);
    tg_tensor *w = tg_zeros(TG_SHAPE(1), TG_FLOAT32);
    cr_assert_eq(tg_module_add_parameter(odd, "a/b", w), -1);
    tg_assert_error("tg_module_add_parameter: invalid parameter name "
                    "\"a/b\"");
    tg_release(w);
    tg_module_free(odd);

    /* a NULL module (a constructor failed and said so): no new message */
    tg_clear_error();
    cr_assert_eq(tg_module_save(NULL, dir), -1);
    cr_assert_eq(tg_module_load(NULL, dir), -1);
    cr_assert_str_empty(tg_last_error());
    tg_module_free(m);
    drop_folder(dir);
}

/* A FIFO in place of a tensor's file is refused at once (the load used to
 * wait for a writer forever), and nothing is copied. */
TG_TEST(checkpoint, fifo_in_the_folder_is_refused)
{
    char *dir = temp_folder();
    tg_module *m = tg_linear_new(2, 3, true);
    cr_assert_eq(tg_module_save(m, dir), 0);
    char *path = join(dir, "bias.npy");
    cr_assert_eq(unlink(path), 0);
    cr_assert_eq(mkfifo(path, 0666), 0);
    alarm(10); // a blocked load ends the test process
    cr_assert_eq(tg_module_load(m, dir), -1);
    alarm(0);
    tg_assert_error("tg_module_load: cannot read bias: cannot read '",
                    "bias.npy': it is a FIFO (named pipe), not a regular "
                    "file");
    tg_module_free(m);
    drop_folder(dir);
}
