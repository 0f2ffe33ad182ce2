/*
 * nn/checkpoint.c - saving a module's parameters and buffers to a folder
 * of .npy files and loading them back in place: PyTorch's
 * torch.save(model.state_dict()) / model.load_state_dict(...), with one
 * NumPy file per tensor so that np.load reads each of them.
 *
 * Layout: <dir>/<dotted name>.npy for every tensor of
 * tg_module_named_parameters, then of tg_module_named_buffers ("0.weight",
 * "1.running_mean", "1.num_batches_tracked" as an int64 0-d array), each
 * in its own dtype and shape. A tensor registered twice (tied weights) is
 * written once, under its first name.
 *
 * Loading is all or nothing: every file is read and checked (present,
 * a valid .npy, the tensor's dtype and shape) before the first tensor is
 * written, and then each is copied into the module's own tensor under
 * tg_no_grad, so the tensors stay the same objects (an optimiser holding
 * them keeps working) and their version counters move (a graph recorded
 * before the load refuses to run backward through the old values).
 *
 * What this file is not: no optimiser state (momentum buffers, Adam's
 * moments, the step count) and no gradients are saved; the architecture
 * is not saved either (build the same model, then load). Files in the
 * folder that name no tensor of the module are ignored, not an error
 * (PyTorch's load_state_dict(strict=True) would refuse them), and saving
 * into a folder used before does not remove its other files. POSIX only
 * (mkdir and stat).
 */
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L // mkdir, stat
#endif

#include "nn.h"

#include "../tensor/internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>

/* ---------------------------------------------------------------- helpers */

/* The parameters then the buffers of m, as one malloc'd list in *out (the
 * caller frees it); returns how many, or -1 with an error naming fn. Every
 * name must make a file name: no '/', and no two tensors under one name
 * (names nested past TG_NAME_MAX are cut and could meet). */
static int list_tensors(const char *fn, const tg_module *m,
                        tg_named_tensor **out)
{
    *out = NULL;
    int np = tg_module_named_parameters(m, NULL, 0);
    int nb = np < 0 ? -1 : tg_module_named_buffers(m, NULL, 0);
    if (nb < 0)
        return -1;
    tg_named_tensor *items = tg_malloc((size_t)(np + nb > 0 ? np + nb : 1) *
                                    sizeof *items);
    if (!items) {
        tg_error(fn, "out of memory listing %d tensors", np + nb);
        return -1;
    }
    if (tg_module_named_parameters(m, items, np) != np ||
        tg_module_named_buffers(m, items + np, nb) != nb) {
        free(items);
        return -1;
    }
    for (int i = 0; i < np + nb; i++) {
        if (strchr(items[i].name, '/')) {
            tg_error(fn,
                     "the tensor \"%s\" cannot be saved as a file: its name "
                     "has a '/'\n"
                     "  rule: each tensor becomes <dir>/<dotted name>.npy, "
                     "so names must be file names\n"
                     "  hint: register it under a name without '/'",
                     items[i].name);
            free(items);
            return -1;
        }
        for (int j = 0; j < i; j++)
            if (strcmp(items[i].name, items[j].name) == 0) {
                tg_error(fn,
                         "two tensors have the name \"%s\"\n"
                         "  rule: each tensor needs its own file name; "
                         "dotted names longer than %d characters are cut "
                         "and may meet\n"
                         "  hint: nest the model less deeply or use shorter "
                         "child names",
                         items[i].name, TG_NAME_MAX - 1);
                free(items);
                return -1;
            }
    }
    *out = items;
    return np + nb;
}

/* "<dir>/<name>.npy" (dir's trailing '/' dropped), malloc'd; NULL with an
 * error when out of memory. */
static char *file_path(const char *fn, const char *dir, const char *name)
{
    size_t len = strlen(dir);
    while (len > 1 && dir[len - 1] == '/')
        len--;
    bool root = len == 1 && dir[0] == '/';
    size_t size = len + strlen(name) + 6; // '/', ".npy", '\0'
    char *path = tg_malloc(size);
    if (!path) {
        tg_error(fn, "out of memory for a file name");
        return NULL;
    }
    snprintf(path, size, "%.*s%s%s.npy", (int)len, dir, root ? "" : "/",
             name);
    return path;
}

/* The .npy functions run with the quiet handler so that their message
 * reaches the user once, inside ours, rather than twice. */
static tg_error_handler quiet_begin(void)
{
    return tg_set_error_handler(tg_error_handler_quiet);
}

/* Restores the handler and copies the error the .npy function recorded,
 * without its "fn: " prefix, into buf (the next tg_error overwrites it). */
static void quiet_end(tg_error_handler previous, char *buf, size_t size,
                      const char *fn)
{
    tg_set_error_handler(previous);
    const char *msg = tg_last_error();
    size_t n = strlen(fn);
    if (strncmp(msg, fn, n) == 0 && strncmp(msg + n, ": ", 2) == 0)
        msg += n + 2;
    snprintf(buf, size, "%s", msg);
}

static bool is_folder(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

/* mkdir -p dir: creates each missing folder along the path. */
static int make_folders(const char *fn, const char *dir)
{
    size_t len = strlen(dir);
    char *path = tg_malloc(len + 1);
    if (!path) {
        tg_error(fn, "out of memory for the folder name");
        return -1;
    }
    memcpy(path, dir, len + 1);
    for (size_t i = 1; i <= len; i++) {
        if (path[i] != '/' && path[i] != '\0')
            continue;
        if (path[i - 1] == '/') // "a//b" or a trailing '/'
            continue;
        char c = path[i];
        path[i] = '\0';
        if (mkdir(path, 0777) != 0 && errno != EEXIST) {
            int err = errno;
            tg_error(fn,
                     "cannot create the folder '%s' for '%s': %s\n"
                     "  rule: the checkpoint folder and its parents must be "
                     "creatable\n"
                     "  hint: choose a folder you can write to",
                     path, dir, strerror(err));
            free(path);
            return -1;
        }
        path[i] = c;
    }
    free(path);
    if (!is_folder(dir)) {
        tg_error(fn,
                 "'%s' exists and is not a folder\n"
                 "  rule: a checkpoint is a folder of .npy files\n"
                 "  hint: choose another name, or remove the file",
                 dir);
        return -1;
    }
    return 0;
}

static bool dir_ok(const char *fn, const char *dir)
{
    if (!dir || !dir[0]) {
        tg_error(fn,
                 "the folder name is %s\n"
                 "  rule: a checkpoint is a folder of .npy files: name it\n"
                 "  hint: \"checkpoints/epoch10\"",
                 dir ? "empty" : "NULL");
        return false;
    }
    return true;
}

/* ------------------------------------------------------------------ save */

int tg_module_save(const tg_module *m, const char *dir)
{
    const char *fn = "tg_module_save";
    if (!m) // a constructor that failed has said so
        return -1;
    if (!dir_ok(fn, dir))
        return -1;
    tg_named_tensor *items;
    int n = list_tensors(fn, m, &items);
    if (n < 0)
        return -1;
    if (make_folders(fn, dir) < 0) {
        free(items);
        return -1;
    }
    int rc = 0;
    for (int i = 0; i < n && rc == 0; i++) {
        char *path = file_path(fn, dir, items[i].name);
        if (!path) {
            rc = -1;
        } else {
            tg_error_handler h = quiet_begin();
            rc = tg_save_npy(path, items[i].tensor);
            char why[1536];
            quiet_end(h, why, sizeof why, "tg_save_npy");
            if (rc < 0)
                tg_error(fn, "cannot write %s: %s", items[i].name, why);
        }
        free(path);
    }
    free(items);
    return rc;
}

/* ------------------------------------------------------------------ load */

/* Reads the file of one tensor and checks it against the module's; the
 * loaded tensor (new reference), or NULL with an error. */
static tg_tensor *read_one(const char *fn, const char *dir,
                           const tg_named_tensor *item)
{
    char *path = file_path(fn, dir, item->name);
    if (!path)
        return NULL;
    struct stat st;
    if (stat(path, &st) != 0 && errno == ENOENT) {
        tg_error(fn,
                 "the checkpoint has no %s: '%s' does not exist\n"
                 "  rule: every parameter and buffer of the model needs "
                 "its <dotted name>.npy in the folder\n"
                 "  hint: was the checkpoint saved from a model of this "
                 "architecture, with tg_module_save?",
                 item->name, path);
        free(path);
        return NULL;
    }
    tg_error_handler h = quiet_begin();
    tg_tensor *t = tg_load_npy(path);
    char why[1536];
    quiet_end(h, why, sizeof why, "tg_load_npy");
    if (!t) {
        tg_error(fn, "cannot read %s: %s", item->name, why);
        free(path);
        return NULL;
    }
    const tg_tensor *mine = item->tensor;
    char s1[TG_SHAPE_STR_MAX], s2[TG_SHAPE_STR_MAX];
    if (!tg_same_shape(t, mine)) {
        tg_error(fn,
                 "checkpoint has %s for %s, the model has %s (file '%s')\n"
                 "  rule: tensors are loaded in place, so each must have "
                 "exactly the shape saved\n"
                 "  hint: build the model with the same layers and sizes "
                 "as the one saved",
                 tg_shape_str(t, s1), item->name, tg_shape_str(mine, s2),
                 path);
    } else if (t->dtype != mine->dtype) {
        tg_error(fn,
                 "checkpoint has %s for %s, the model has %s (file '%s')\n"
                 "  rule: tensors are loaded in place, so each must have "
                 "exactly the dtype saved\n"
                 "  hint: %s",
                 tg_dtype_name(t->dtype), item->name,
                 tg_dtype_name(mine->dtype), path,
                 !tg_dtype_is_float(t->dtype) || !tg_dtype_is_float(mine->dtype)
                     ? "an integer tensor and a float one are not the same "
                       "tensor: is this the checkpoint of this model?"
                 : t->dtype == TG_FLOAT64
                     ? "convert the model first: tg_module_to_dtype(m, "
                       "TG_FLOAT64)"
                     : "convert the model first: tg_module_to_dtype(m, "
                       "TG_FLOAT32)");
    } else {
        free(path);
        return t;
    }
    tg_release(t);
    free(path);
    return NULL;
}

int tg_module_load(tg_module *m, const char *dir)
{
    const char *fn = "tg_module_load";
    if (!m)
        return -1;
    if (!dir_ok(fn, dir))
        return -1;
    if (!is_folder(dir)) {
        tg_error(fn,
                 "there is no checkpoint folder '%s'\n"
                 "  rule: tg_module_load reads the folder tg_module_save "
                 "wrote\n"
                 "  hint: check the path (relative paths start from the "
                 "working directory)",
                 dir);
        return -1;
    }
    tg_named_tensor *items;
    int n = list_tensors(fn, m, &items);
    if (n < 0)
        return -1;
    tg_tensor **loaded = tg_calloc((size_t)(n > 0 ? n : 1), sizeof *loaded);
    if (!loaded) {
        free(items);
        tg_error(fn, "out of memory for %d tensors", n);
        return -1;
    }
    /* First every file, then (when all are right) every copy. */
    int ok = 0;
    while (ok < n && (loaded[ok] = read_one(fn, dir, &items[ok])) != NULL)
        ok++;
    int rc = ok == n ? 0 : -1;
    if (rc == 0) {
        tg_no_grad_begin();
        for (int i = 0; i < n && rc == 0; i++)
            rc = tg_copy_(items[i].tensor, loaded[i]); // same shape, dtype
        tg_no_grad_end();
    }
    for (int i = 0; i < n; i++)
        tg_release(loaded[i]);
    free(loaded);
    free(items);
    return rc;
}
