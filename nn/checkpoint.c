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
 * Saving is all or nothing too: a checkpoint is one unit, and a failed or
 * interrupted save leaves the previous one loadable. The new checkpoint is
 * written whole into a new folder beside the old, "<dir>.tg-save-XXXXXX",
 * every file flushed to the disk, then the two folders are swapped in one
 * atomic step (Linux's renameat2 RENAME_EXCHANGE). At every instant <dir>
 * is the complete old checkpoint or the complete new one, whatever fails
 * and wherever the process dies. Only then are the replaced files removed;
 * the old folder's other files move into the new one, so saving into a
 * folder used before keeps them, as it always did. A save that fails
 * removes what it created (the new folder, the parent folders it made)
 * and nothing else.
 *
 * Where the file system cannot swap folders (NFS, FAT), the old folder is
 * renamed to "<dir>.tg-old-XXXXXX" and the new one to <dir>: a crash
 * between those two renames leaves no <dir>, and tg_module_load then
 * names the folder that holds the previous checkpoint.
 *
 * The same atomic writer saves an optimiser's state (tg_optimizer_save,
 * nn/optim.c) through tg_checkpoint_write.
 *
 * What this file is not: no gradients are saved; the architecture
 * is not saved either (build the same model, then load). Files in the
 * folder that name no tensor of the module are ignored, not an error
 * (PyTorch's load_state_dict(strict=True) would refuse them). A folder
 * left by a save that crashed ("<dir>.tg-save-*") is never removed by a
 * later save: delete it by hand. Two processes saving to one folder at
 * once is not supported. POSIX only (mkdir, stat, rename).
 */
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L // mkdir, stat, opendir
#endif

#include "nn.h"

#include "../tensor/internal.h"
#include "internal.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>

/* ---------------------------------------------------------------- helpers */

/* The parameters then the buffers of m, as one malloc'd list in *out (the
 * caller frees it); returns how many, or -1 with an error naming fn. Every
 * name makes a file name (registration refuses '/' and control
 * characters), but no two tensors may share one (names nested past
 * TG_NAME_MAX are cut and could meet). */
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

/* The last name of path, trailing '/'s aside: its start, returned, and
 * its length in *blen; *len is the length of path without those '/'s
 * ("a/b/" gives "b", 1 and 3). */
static const char *last_name(const char *path, size_t *len, size_t *blen)
{
    size_t n = strlen(path);
    while (n > 1 && path[n - 1] == '/')
        n--;
    const char *base = path + n;
    while (base > path && base[-1] != '/')
        base--;
    *len = n;
    *blen = (size_t)(path + n - base);
    return base;
}

static bool is_folder(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

/* mkdir -p dir: creates each missing folder along the path. *made is the
 * length of the path up to the first folder it created (0: none), so that
 * remove_made_folders can undo exactly that much. */
static int make_folders(const char *fn, const char *dir, const char *shown,
                        size_t *made)
{
    *made = 0;
    if (is_folder(dir))
        return 0;
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
        if (tg_io_mkdir(path) == 0) {
            if (*made == 0)
                *made = i;
        } else if (errno != EEXIST) {
            int err = errno;
            char a[TG_PATH_SHOWN_MAX + 1], b[TG_PATH_SHOWN_MAX + 1];
            tg_error(fn,
                     "cannot create the folder '%s' for '%s': %s\n"
                     "  rule: the checkpoint folder and its parents must be "
                     "creatable\n"
                     "  hint: choose a folder you can write to",
                     tg_path_shown(path, a), tg_path_shown(shown, b),
                     strerror(err));
            free(path);
            return -1;
        }
        path[i] = c;
    }
    free(path);
    if (!is_folder(dir)) {
        char a[TG_PATH_SHOWN_MAX + 1];
        tg_error(fn,
                 "'%s' exists and is not a folder\n"
                 "  rule: the folders that hold a checkpoint must be "
                 "folders\n"
                 "  hint: choose another path, or move the file",
                 tg_path_shown(dir, a));
        return -1;
    }
    return 0;
}

/* Removes the folders make_folders(dir) created, deepest first (in
 * place: dir is cut as it goes). */
static void remove_made_folders(char *dir, size_t made)
{
    size_t len = strlen(dir);
    while (made > 0 && len >= made) {
        dir[len] = '\0';
        if (tg_io_rmdir(dir) != 0)
            return;
        while (len > 0 && dir[len - 1] != '/')
            len--;
        while (len > 0 && dir[len - 1] == '/')
            len--;
    }
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

/* The names one save works with, all malloc'd in one block. */
typedef struct save_paths {
    char *dir;    // the checkpoint folder, without trailing '/'
    char *parent; // the folder that holds it
    char *fresh;  // "<dir>.tg-save-XXXXXX": the new checkpoint, written whole
    char *old;    // "<dir>.tg-old-XXXXXX": where the fallback moves the old one
    char *file;   // scratch for "<folder>/<name>.npy"
    size_t file_size;
    size_t name_size; // bytes of fresh and of old
} save_paths;

static void save_paths_free(save_paths *p)
{
    free(p->dir);
    free(p->parent);
    free(p->fresh);
    free(p->old);
    free(p->file);
}

static int save_paths_make(const char *fn, const char *dir, save_paths *p)
{
    memset(p, 0, sizeof *p);
    size_t len, blen;
    const char *base = last_name(dir, &len, &blen);
    if ((blen == 1 && base[0] == '.') ||
        (blen == 2 && base[0] == '.' && base[1] == '.') ||
        (blen == 1 && base[0] == '/')) {
        char a[TG_PATH_SHOWN_MAX + 1];
        const char *shown = tg_path_shown(dir, a);
        tg_error(fn,
                 "cannot replace the folder '%s' as one unit\n"
                 "  rule: a checkpoint is saved into a new folder that then "
                 "takes the place of the old one, so it needs a name of its "
                 "own\n"
                 "  hint: save into a subfolder, e.g. \"%s%scheckpoint\"",
                 shown, shown, dir[strlen(dir) - 1] == '/' ? "" : "/");
        return -1;
    }
    p->name_size = len + sizeof ".tg-save-" + TG_IO_SUFFIX_SIZE;
    p->file_size = p->name_size + TG_NAME_MAX + 8;
    p->dir = tg_malloc(len + 1);
    p->fresh = tg_malloc(p->name_size);
    p->old = tg_malloc(p->name_size);
    p->file = tg_malloc(p->file_size);
    if (p->dir) {
        memcpy(p->dir, dir, len);
        p->dir[len] = '\0';
        p->parent = tg_io_parent(p->dir);
    }
    if (!p->dir || !p->parent || !p->fresh || !p->old || !p->file) {
        save_paths_free(p);
        tg_error(fn, "out of memory for the file names");
        return -1;
    }
    return 0;
}

/* "<folder>/<name>.npy" into p->file. */
static const char *in_folder(save_paths *p, const char *folder,
                             const char *name)
{
    snprintf(p->file, p->file_size, "%s/%s.npy", folder, name);
    return p->file;
}

/* Each tensor's file in an existing checkpoint folder must be a file that
 * a new one can replace (a folder of that name could not be). */
static int check_replaceable(const char *fn, save_paths *p,
                             const tg_named_tensor *items, int n)
{
    for (int i = 0; i < n; i++) {
        struct stat st;
        const char *path = in_folder(p, p->dir, items[i].name);
        if (lstat(path, &st) == 0 && S_ISDIR(st.st_mode)) {
            char a[TG_PATH_SHOWN_MAX + 1];
            tg_error(fn,
                     "cannot write %s: '%s' exists and is %s\n"
                     "  rule: each tensor's file replaces what has its "
                     "name\n"
                     "  hint: move it out of the checkpoint folder",
                     items[i].name, tg_path_shown(path, a),
                     tg_file_kind(st.st_mode));
            return -1;
        }
    }
    return 0;
}

/* Creates p->fresh under a name nobody has. */
static int make_fresh_folder(const char *fn, save_paths *p)
{
    for (int attempt = 0; attempt < 16; attempt++) {
        char suffix[TG_IO_SUFFIX_SIZE];
        tg_io_unique_suffix(suffix);
        snprintf(p->fresh, p->name_size, "%s.tg-save-%s", p->dir, suffix);
        if (tg_io_mkdir(p->fresh) == 0)
            return 0;
        if (errno != EEXIST)
            break;
    }
    int err = errno;
    char a[TG_PATH_SHOWN_MAX + 1];
    tg_error(fn,
             "cannot create a folder beside '%s' for the new checkpoint: %s\n"
             "  rule: the new checkpoint is written whole into a new folder "
             "in the same place, then swapped with the old one",
             tg_path_shown(p->dir, a), strerror(err));
    return -1;
}

/* Writes every tensor into p->fresh and flushes the folder. */
static int write_fresh(const char *fn, save_paths *p,
                       const tg_named_tensor *items, int n)
{
    for (int i = 0; i < n; i++) {
        char shown[4096];
        snprintf(shown, sizeof shown, "%s/%s.npy", p->dir, items[i].name);
        tg_error_handler h = quiet_begin();
        int rc = tg_npy_write_new("tg_save_npy",
                                  in_folder(p, p->fresh, items[i].name),
                                  shown, items[i].tensor);
        char why[1536];
        quiet_end(h, why, sizeof why, "tg_save_npy");
        if (rc != 0) {
            tg_error(fn, "cannot write %s: %s", items[i].name, why);
            return -1;
        }
    }
    if (tg_io_sync_dir(p->fresh) != 0) {
        int err = errno;
        tg_error(fn, "cannot flush the new checkpoint's folder to the disk: "
                     "%s\n"
                     "  rule: a checkpoint takes the old one's place only "
                     "once all of it is on the disk",
                 strerror(err));
        return -1;
    }
    return 0;
}

/* Undoes a save that has not taken the old one's place: removes the new
 * folder's files (only the names this save wrote) and the folder. */
static void remove_fresh(save_paths *p, const tg_named_tensor *items, int n)
{
    for (int i = 0; i < n; i++)
        tg_io_unlink(in_folder(p, p->fresh, items[i].name));
    tg_io_rmdir(p->fresh);
}

/* Puts p->fresh in p->dir's place. Afterwards the previous checkpoint is
 * in *previous (NULL when there was none). */
static int take_place(const char *fn, save_paths *p, bool exists,
                      const char **previous)
{
    *previous = NULL;
    if (!exists) {
        if (tg_io_rename(p->fresh, p->dir) == 0)
            return 0;
    } else if (tg_io_exchange(p->fresh, p->dir) == 0) {
        *previous = p->fresh; // the two names have swapped folders
        return 0;
    } else if (errno == EINVAL || errno == ENOSYS || errno == ENOTSUP) {
        /* No atomic swap here: the old folder steps aside first. */
        char suffix[TG_IO_SUFFIX_SIZE];
        tg_io_unique_suffix(suffix);
        snprintf(p->old, p->name_size, "%s.tg-old-%s", p->dir, suffix);
        if (tg_io_rename(p->dir, p->old) == 0) {
            if (tg_io_rename(p->fresh, p->dir) == 0) {
                *previous = p->old;
                return 0;
            }
            int err = errno;
            tg_io_rename(p->old, p->dir); // back where it was
            errno = err;
        }
    }
    int err = errno;
    char a[TG_PATH_SHOWN_MAX + 1];
    tg_error(fn,
             "cannot put the new checkpoint in the place of '%s': %s\n"
             "  rule: the new checkpoint is complete beside the old one and "
             "then swapped with it; the old one is unchanged",
             tg_path_shown(p->dir, a), strerror(err));
    return -1;
}

/* After the swap: the previous folder's files that are not tensors of this
 * save move into the new folder (they were there before the save, and are
 * again); the replaced ones are removed, then the emptied folder. */
static int clear_previous(const char *fn, save_paths *p, const char *previous,
                          const tg_named_tensor *items, int n)
{
    DIR *d = opendir(previous);
    int rc = d ? 0 : -1;
    struct dirent *e;
    while (rc == 0 && (e = readdir(d)) != NULL) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
            continue;
        bool replaced = false;
        for (int i = 0; i < n && !replaced; i++) {
            size_t k = strlen(items[i].name);
            replaced = strncmp(e->d_name, items[i].name, k) == 0 &&
                       strcmp(e->d_name + k, ".npy") == 0;
        }
        char from[4096], to[4096];
        if (snprintf(from, sizeof from, "%s/%s", previous, e->d_name) >=
                (int)sizeof from ||
            snprintf(to, sizeof to, "%s/%s", p->dir, e->d_name) >=
                (int)sizeof to) {
            errno = ENAMETOOLONG;
            rc = -1;
            break;
        }
        rc = replaced ? tg_io_unlink(from) : tg_io_rename(from, to);
    }
    int err = errno;
    if (d)
        closedir(d);
    if (rc == 0)
        rc = tg_io_rmdir(previous);
    if (rc == 0)
        rc = tg_io_sync_dir(p->dir);
    if (rc == 0)
        return 0;
    if (rc != 0 && err == 0)
        err = errno;
    char a[TG_PATH_SHOWN_MAX + 1], b[TG_PATH_SHOWN_MAX + 1];
    tg_error(fn,
             "the new checkpoint is in '%s', but the previous folder's "
             "files stay in '%s': %s\n"
             "  rule: after the swap, the old folder's other files move "
             "into the new one and the rest is removed\n"
             "  hint: move what you need from it, then delete it",
             tg_path_shown(p->dir, a), tg_path_shown(previous, b),
             strerror(err));
    return -1;
}

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
    int rc = tg_checkpoint_write(fn, dir, items, n);
    free(items);
    return rc;
}

int tg_checkpoint_write(const char *fn, const char *dir,
                        const tg_named_tensor *items, int n)
{
    if (!dir_ok(fn, dir))
        return -1;
    save_paths p;
    if (save_paths_make(fn, dir, &p) < 0)
        return -1;
    char a[TG_PATH_SHOWN_MAX + 1];
    size_t made = 0;
    struct stat st;
    int rc = make_folders(fn, p.parent, p.dir, &made);
    bool exists = rc == 0 && lstat(p.dir, &st) == 0;
    if (rc == 0 && exists && !S_ISDIR(st.st_mode)) {
        tg_error(fn,
                 "'%s' exists and is not a folder\n"
                 "  rule: a checkpoint is a folder of .npy files\n"
                 "  hint: choose another name, or remove the file",
                 tg_path_shown(p.dir, a));
        rc = -1;
    }
    if (rc == 0 && exists)
        rc = check_replaceable(fn, &p, items, n);
    /* Until the swap, a failure leaves everything as it was. */
    const char *previous = NULL;
    if (rc == 0 && make_fresh_folder(fn, &p) == 0) {
        rc = write_fresh(fn, &p, items, n);
        if (rc == 0)
            rc = take_place(fn, &p, exists, &previous);
        if (rc != 0)
            remove_fresh(&p, items, n);
    } else {
        rc = -1;
    }
    if (rc != 0) {
        remove_made_folders(p.parent, made);
    } else if (tg_io_sync_dir(p.parent) != 0) {
        int err = errno;
        tg_error(fn,
                 "the new checkpoint is in '%s', but its folder cannot be "
                 "flushed to the disk: %s\n"
                 "  rule: a rename is durable once its folder is flushed",
                 tg_path_shown(p.dir, a), strerror(err));
        rc = -1;
    } else if (previous) {
        rc = clear_previous(fn, &p, previous, items, n);
    }
    save_paths_free(&p);
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
    char a[TG_PATH_SHOWN_MAX + 1];
    struct stat st;
    if (stat(path, &st) != 0 && errno == ENOENT) {
        tg_error(fn,
                 "the checkpoint has no %s: '%s' does not exist\n"
                 "  rule: every parameter and buffer of the model needs "
                 "its <dotted name>.npy in the folder\n"
                 "  hint: was the checkpoint saved from a model of this "
                 "architecture, with tg_module_save?",
                 item->name, tg_path_shown(path, a));
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
                 tg_path_shown(path, a));
    } else if (t->dtype != mine->dtype) {
        tg_error(fn,
                 "checkpoint has %s for %s, the model has %s (file '%s')\n"
                 "  rule: tensors are loaded in place, so each must have "
                 "exactly the dtype saved\n"
                 "  hint: %s",
                 tg_dtype_name(t->dtype), item->name,
                 tg_dtype_name(mine->dtype), tg_path_shown(path, a),
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

/* Whether a save into dir stopped between moving the old folder aside
 * ("<dir>.tg-old-XXXXXX") and putting the new one in its place; the old
 * folder's path goes into out. */
static bool interrupted_save_left(const char *dir, char *out, size_t size)
{
    size_t len, blen;
    const char *base = last_name(dir, &len, &blen);
    size_t plen = (size_t)(base - dir); // the parent with its '/'
    char parent[4096];
    if (plen >= sizeof parent)
        return false;
    memcpy(parent, plen ? dir : ".", plen ? plen : 1);
    parent[plen ? plen : 1] = '\0';
    DIR *d = opendir(parent);
    if (!d)
        return false;
    bool found = false;
    struct dirent *e;
    while (!found && (e = readdir(d)) != NULL)
        if (strncmp(e->d_name, base, blen) == 0 &&
            strncmp(e->d_name + blen, ".tg-old-", 8) == 0) {
            snprintf(out, size, "%.*s%s", (int)plen, dir, e->d_name);
            found = is_folder(out);
        }
    closedir(d);
    return found;
}

int tg_module_load(tg_module *m, const char *dir)
{
    const char *fn = "tg_module_load";
    if (!m)
        return -1;
    if (!dir_ok(fn, dir))
        return -1;
    char left[4096], a[TG_PATH_SHOWN_MAX + 1], b[TG_PATH_SHOWN_MAX + 1];
    if (!is_folder(dir) && interrupted_save_left(dir, left, sizeof left)) {
        const char *d = tg_path_shown(dir, a), *l = tg_path_shown(left, b);
        tg_error(fn,
                 "there is no checkpoint folder '%s': a save was "
                 "interrupted, and the previous checkpoint is in '%s'\n"
                 "  rule: where folders cannot be swapped atomically, a save "
                 "moves the old folder aside before the new one takes its "
                 "name\n"
                 "  hint: rename '%s' to '%s', or load from it",
                 d, l, l, d);
        return -1;
    }
    if (!is_folder(dir)) {
        tg_error(fn,
                 "there is no checkpoint folder '%s'\n"
                 "  rule: tg_module_load reads the folder tg_module_save "
                 "wrote\n"
                 "  hint: check the path (relative paths start from the "
                 "working directory)",
                 tg_path_shown(dir, a));
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
        /* Each loaded tensor is fresh and of the module tensor's shape and
         * dtype, and modules hold no expanded views: the copies need no
         * memory and cannot fail, so they all happen. */
        for (int i = 0; i < n; i++) {
            tg_copy_unchecked(items[i].tensor, loaded[i]);
            items[i].tensor->storage->version++;
        }
    }
    for (int i = 0; i < n; i++)
        tg_release(loaded[i]);
    free(loaded);
    free(items);
    return rc;
}
