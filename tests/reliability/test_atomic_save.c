/*
 * tests/reliability/test_atomic_save.c - a failed or interrupted save never
 * costs the previous file or checkpoint (tensor/fileio.c, tensor/npy.c,
 * nn/checkpoint.c).
 *
 * Each sweep saves model A, then tries to save model B with one fault at
 * step k of the save, for k = 0, 1, ... until the save goes through with
 * no fault left to inject; after every attempt the folder must load as
 * exactly A or exactly B, bit for bit. The faults:
 *   - every file-system step failing in turn (tg_set_io_hook), with the
 *     errno a full disk or a broken disk gives;
 *   - the disk filling up at every byte offset of the checkpoint (writes
 *     succeed for b bytes in all, then fail with ENOSPC);
 *   - the process ending at every step (a crash or power cut: a child
 *     process _exits there; the parent then loads);
 *   - every allocation failing in turn (tg_fail_allocations_after);
 *   - all of the above again where folders cannot be swapped atomically
 *     (the hook answers EINVAL to the swap, as NFS does), where a crash
 *     between the two renames is allowed to leave no folder, but then the
 *     previous checkpoint must sit whole in the "<dir>.tg-old-*" folder
 *     that tg_module_load names;
 *   - a real full disk: a small tmpfs in a private mount namespace (root
 *     only; skipped with the reason otherwise), filled to leave 0, 1, 2,
 *     ... pages free.
 * A failed save must leave no temporary file or folder behind, and files
 * of the checkpoint folder that are not the model's must survive. For
 * tg_save_npy: the old file's bytes and permissions survive every fault,
 * links stay links, and a FIFO or a device at the path is never removed.
 *
 * Every test works in its own folder under /dev/shm (a tmpfs, so the
 * fsyncs of the sweeps cost nothing) or /tmp, and removes it.
 */
#define _GNU_SOURCE // unshare, mount, mknod
#include "../common.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

/* ------------------------------------------------------------- folders */

static char home[64];

static void enter_scratch(void)
{
    const char *base = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
    snprintf(home, sizeof home, "%s/tg_atomic_XXXXXX", base);
    cr_assert_not_null(mkdtemp(home), "mkdtemp failed");
    cr_assert_eq(chdir(home), 0);
}

static void remove_tree(const char *path)
{
    struct stat st;
    if (lstat(path, &st) == 0 && S_ISDIR(st.st_mode)) {
        DIR *d = opendir(path);
        struct dirent *e;
        while (d && (e = readdir(d)) != NULL) {
            if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
                continue;
            char sub[1024];
            snprintf(sub, sizeof sub, "%s/%s", path, e->d_name);
            remove_tree(sub);
        }
        if (d)
            closedir(d);
        rmdir(path);
    } else {
        unlink(path);
    }
}

static void leave_scratch(void)
{
    cr_assert_eq(chdir("/"), 0);
    remove_tree(home);
}

/* The names in folder, sorted and joined by ' ' (for comparisons). */
static void list_folder(const char *folder, char *out, size_t size)
{
    char names[32][256];
    int n = 0;
    DIR *d = opendir(folder);
    cr_assert_not_null(d, "cannot list %s", folder);
    struct dirent *e;
    while ((e = readdir(d)) != NULL && n < 32)
        if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0)
            snprintf(names[n++], 256, "%s", e->d_name);
    closedir(d);
    for (int i = 0; i < n; i++) // insertion sort
        for (int j = i; j > 0 && strcmp(names[j - 1], names[j]) > 0; j--) {
            char t[256];
            memcpy(t, names[j], 256);
            memcpy(names[j], names[j - 1], 256);
            memcpy(names[j - 1], t, 256);
        }
    out[0] = '\0';
    for (int i = 0; i < n; i++)
        snprintf(out + strlen(out), size - strlen(out), "%s%s", i ? " " : "",
                 names[i]);
}

static void write_text(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    cr_assert_not_null(f, "cannot write %s", path);
    fputs(text, f);
    cr_assert_eq(fclose(f), 0);
}

static size_t read_bytes(const char *path, unsigned char *buf, size_t cap)
{
    FILE *f = fopen(path, "rb");
    cr_assert_not_null(f, "cannot read %s", path);
    size_t n = fread(buf, 1, cap, f);
    fclose(f);
    return n;
}

/* ---------------------------------------------------------------- models */

/* A small model with parameters and buffers of every kind a checkpoint
 * holds: Linear(3, 4), BatchNorm1d(4) (running stats, an int64 counter),
 * Linear(4, 2). */
static tg_module *model(void)
{
    tg_module *m = tg_sequential_new(NULL, 0);
    cr_assert_eq(tg_sequential_append(m, tg_linear_new(3, 4, true)), 0);
    cr_assert_eq(tg_sequential_append(m, tg_batch_norm1d_new(4, NULL)), 0);
    cr_assert_eq(tg_sequential_append(m, tg_linear_new(4, 2, true)), 0);
    return m;
}

/* Every tensor of m (parameters, then buffers) filled from seed, so two
 * seeds give two models that differ in every tensor. */
static void fill(tg_module *m, int seed)
{
    tg_named_tensor items[16];
    int np = tg_module_named_parameters(m, items, 16);
    int nb = tg_module_named_buffers(m, items + np, 16 - np);
    for (int i = 0; i < np + nb; i++) { // contiguous, written directly
        tg_tensor *t = items[i].tensor;
        for (int64_t j = 0; j < t->numel; j++) {
            double v = seed * 100 + i * 10 + j;
            if (t->dtype == TG_INT64)
                ((int64_t *)t->storage->data)[t->offset + j] = (int64_t)v;
            else
                ((float *)t->storage->data)[t->offset + j] = (float)v + 0.25f;
        }
    }
}

/* Whether m's tensors are exactly those fill(m, seed) gives. */
static bool holds(tg_module *m, int seed)
{
    tg_module *want = model();
    fill(want, seed);
    tg_named_tensor a[16], b[16];
    int n = tg_module_named_parameters(m, a, 16);
    n += tg_module_named_buffers(m, a + n, 16 - n);
    int k = tg_module_named_parameters(want, b, 16);
    k += tg_module_named_buffers(want, b + k, 16 - k);
    bool same = n == k;
    for (int i = 0; i < n && same; i++) {
        tg_tensor *x = tg_contiguous(a[i].tensor);
        tg_tensor *y = tg_contiguous(b[i].tensor);
        same = memcmp(x->storage->data, y->storage->data,
                      (size_t)x->numel * tg_dtype_size(x->dtype)) == 0;
        tg_release(x);
        tg_release(y);
    }
    tg_module_free(want);
    return same;
}

/* Loads dir into a fresh model: 1 if it is A (seed 1), 2 if B (seed 2),
 * 0 if it does not load, -1 if it loads as anything else. */
static int which_model(const char *dir)
{
    tg_module *m = model();
    fill(m, 7);
    int r = tg_module_load(m, dir) != 0 ? 0 : holds(m, 1) ? 1
                                            : holds(m, 2) ? 2
                                                          : -1;
    tg_module_free(m);
    return r;
}

/* The checkpoint folder "ck" holds A and a file of the user's. */
static void save_a(void)
{
    tg_module *a = model();
    fill(a, 1);
    cr_assert_eq(tg_module_save(a, "ck"), 0, "%s", tg_last_error());
    tg_module_free(a);
    write_text("ck/notes.txt", "lr 0.1\n");
    cr_assert_eq(which_model("ck"), 1);
}

/* What a sweep checks after each attempt. */
typedef struct outcome {
    int rc;           // what tg_module_save returned
    char error[2048]; // its message
} outcome;

/* After an attempt: the folder is A or B whole (or, with allow_aside,
 * after a crash where folders cannot be swapped, no folder but A whole in
 * the "ck.tg-old-*" that the load names); a failure before the swap
 * left A and nothing else; B with rc == -1 only when the message says the
 * new checkpoint is in place; the user's file is there. Returns which. */
static int check_after(const outcome *o, bool allow_aside, long k)
{
    int which = which_model("ck");
    if (which == 0 && allow_aside) {
        /* Only where folders cannot be swapped, and only for a crash
         * between the two renames: the old one stands aside, whole. */
        char all[1024];
        list_folder(".", all, sizeof all);
        char *old = strstr(all, "ck.tg-old-");
        cr_assert_not_null(old, "step %ld: no checkpoint and no old one: %s",
                           k, all);
        char name[32];
        snprintf(name, sizeof name, "%.16s", old);
        cr_assert_eq(which_model(name), 1, "step %ld: %s is not A", k, name);
        tg_module *m = model();
        cr_assert_eq(tg_module_load(m, "ck"), -1);
        cr_assert(strstr(tg_last_error(), name),
                  "step %ld: the load does not name %s: %s", k, name,
                  tg_last_error());
        tg_module_free(m);
        return 0;
    }
    cr_assert(which == 1 || which == 2,
              "step %ld: the folder loads as %s (rc %d: %s)", k,
              which == 0 ? "nothing" : "a mix of A and B", o->rc, o->error);
    if (o->rc == 0)
        cr_assert_eq(which, 2, "step %ld: the save succeeded, the folder "
                               "holds A", k);
    if (which == 2 && o->rc != 0)
        cr_assert(strstr(o->error, "the new checkpoint is in 'ck'"),
                  "step %ld: B is in place but the error says %s", k,
                  o->error);
    if (which == 1) {
        char all[1024];
        list_folder(".", all, sizeof all);
        cr_assert_str_eq(all, "ck", "step %ld: a failed save left %s", k,
                         all);
    }
    char files[1024];
    list_folder("ck", files, sizeof files);
    if (o->rc == 0 || which == 1)
        cr_assert(strstr(files, "notes.txt"),
                  "step %ld: the user's file is gone: %s", k, files);
    return which;
}

static void save_b(outcome *o)
{
    tg_module *b = model();
    fill(b, 2);
    tg_clear_error();
    o->rc = tg_module_save(b, "ck");
    snprintf(o->error, sizeof o->error, "%s", tg_last_error());
    tg_module_free(b);
}

/* Restores A (and removes what an attempt left) for the next attempt. */
static void reset_to_a(void)
{
    remove_tree("ck");
    DIR *d = opendir(".");
    struct dirent *e;
    while ((e = readdir(d)) != NULL)
        if (strncmp(e->d_name, "ck.tg-", 6) == 0)
            remove_tree(e->d_name);
    closedir(d);
    save_a();
}

/* ------------------------------------------------------------ the sweeps */

/* An io fault at step k of every kind until the save goes through. With
 * fallback, every swap is refused as unsupported. */
static void fault_sweep(int err, bool fallback)
{
    enter_scratch();
    save_a();
    long k = 0;
    int saw_b = 0, saw_a = 0;
    for (;; k++) {
        reset_to_a();
        tg_test_fail_io(-1, k, err, false, -1);
        if (fallback)
            tg_test_fail_io_also(TG_IO_EXCHANGE, EINVAL);
        outcome o;
        save_b(&o);
        long steps = tg_test_io_steps();
        tg_test_io_off();
        int which = check_after(&o, false, k); // a failure puts A back
        saw_a += which == 1;
        saw_b += which == 2;
        if (o.rc == 0 && k >= steps)
            break; // no step k: nothing was injected
        cr_assert_lt(k, 1000, "the sweep does not end");
    }
    /* The sweep reached both sides of the swap. */
    cr_assert_gt(saw_a, 5, "%d failures kept A", saw_a);
    cr_assert_gt(saw_b, 1, "%d attempts ended with B", saw_b);
    leave_scratch();
}

TG_TEST(atomic_save, every_step_failing_keeps_old_or_new)
{
    fault_sweep(EIO, false);
}

TG_TEST(atomic_save, every_step_failing_without_atomic_swap)
{
    fault_sweep(ENOSPC, true);
}

/* The disk fills up after b bytes, for every b up to the whole
 * checkpoint. */
TG_TEST(atomic_save, disk_full_at_every_byte_keeps_old_or_new)
{
    enter_scratch();
    save_a();
    long total = -1;
    for (long b = 0;; b++) {
        reset_to_a();
        tg_test_fail_io(-1, -1, 0, false, b);
        outcome o;
        save_b(&o);
        tg_test_io_off();
        int which = check_after(&o, false, b);
        if (o.rc == 0) {
            total = b;
            break;
        }
        cr_assert_eq(which, 1, "byte %ld: a failed write left B", b);
        cr_assert(strstr(o.error, "No space left on device"),
                  "byte %ld: %s", b, o.error);
    }
    /* Two Linear layers and a BatchNorm: 7 files of a 128-byte header and
     * their data (12+4+16+16+16+16+8 values... checked as a lower bound). */
    cr_assert_gt(total, 7 * 128, "the whole checkpoint is %ld bytes", total);
    leave_scratch();
}

/* A crash (the process ends) before each step in turn. */
static void crash_sweep(bool fallback)
{
    enter_scratch();
    save_a();
    int saw_a = 0, saw_b = 0, saw_aside = 0;
    for (long k = 0;; k++) {
        reset_to_a();
        fflush(NULL);
        pid_t pid = fork();
        cr_assert_neq(pid, -1);
        if (pid == 0) {
            tg_test_fail_io(-1, k, 0, true, -1);
            if (fallback)
                tg_test_fail_io_also(TG_IO_EXCHANGE, EINVAL);
            outcome o;
            save_b(&o);
            _exit(o.rc == 0 ? 3 : 4); // came through: no step k
        }
        int status;
        cr_assert_eq(waitpid(pid, &status, 0), pid);
        cr_assert(WIFEXITED(status), "the child did not exit");
        outcome o = {WEXITSTATUS(status) == 3 ? 0 : -1, ""};
        if (WEXITSTATUS(status) == 0) // crashed: nothing returned
            o.rc = -2;
        /* After a crash, leftovers are allowed (the temporary folder):
         * only the folder's contents are checked. */
        int which = o.rc == -2 ? which_model("ck") : check_after(&o, fallback, k);
        if (o.rc == -2 && which == 0 && fallback) {
            o.rc = -1;
            which = check_after(&o, true, k);
        }
        cr_assert(which == 0 ? fallback : which == 1 || which == 2,
                  "crash before step %ld: the folder loads as %d", k, which);
        saw_a += which == 1;
        saw_b += which == 2;
        saw_aside += which == 0;
        if (WEXITSTATUS(status) == 3)
            break;
        cr_assert_eq(WEXITSTATUS(status), 0, "step %ld: the save failed "
                                             "without a crash", k);
        cr_assert_lt(k, 1000, "the sweep does not end");
    }
    cr_assert_gt(saw_a, 5);
    cr_assert_gt(saw_b, 0);
    if (fallback)
        cr_assert_gt(saw_aside, 0, "no crash fell between the renames");
    leave_scratch();
}

TG_TEST(atomic_save, crash_at_every_step_keeps_old_or_new)
{
    crash_sweep(false);
}

TG_TEST(atomic_save, crash_at_every_step_without_atomic_swap)
{
    crash_sweep(true);
}

TG_TEST(atomic_save, every_allocation_failing_keeps_old_or_new)
{
    enter_scratch();
    save_a();
    for (int64_t k = 0;; k++) {
        reset_to_a();
        tg_module *b = model();
        fill(b, 2);
        tg_fail_allocations_after(k);
        outcome o;
        o.rc = tg_module_save(b, "ck");
        int64_t failed = tg_fail_allocations_after(-1);
        snprintf(o.error, sizeof o.error, "%s", tg_last_error());
        tg_module_free(b);
        check_after(&o, false, (long)k);
        if (o.rc != 0)
            cr_assert(strstr(o.error, "out of memory"), "%s", o.error);
        if (failed == 0) {
            cr_assert_eq(o.rc, 0);
            break;
        }
        cr_assert_lt(k, 1000, "the sweep does not end");
    }
    leave_scratch();
}

/* A checker that cannot fail is no checker: a save that writes over the
 * files one by one (the old way) is caught by check_after. */
TG_TEST(atomic_save, the_check_catches_a_mix)
{
    enter_scratch();
    save_a();
    tg_module *b = model();
    fill(b, 2);
    tg_named_tensor items[16];
    int n = tg_module_named_parameters(b, items, 16);
    cr_assert_gt(n, 1);
    /* Half of B's tensors written in place, as a save dying part-way did. */
    for (int i = 0; i < n / 2; i++) {
        char path[2300];
        snprintf(path, sizeof path, "ck/%s.npy", items[i].name);
        cr_assert_eq(tg_save_npy(path, items[i].tensor), 0);
    }
    cr_assert_eq(which_model("ck"), -1, "a mix of A and B was not noticed");
    tg_module_free(b);
    leave_scratch();
}

/* ------------------------------------------------------ a real full disk */

TG_TEST(atomic_save, real_full_disk_on_a_small_tmpfs)
{
    if (geteuid() != 0)
        cr_skip_test("needs root to mount a tmpfs in its own namespace");
    if (unshare(CLONE_NEWNS) != 0)
        cr_skip_test("unshare(CLONE_NEWNS): %s", strerror(errno));
    /* Mounts made from here on stay in this process's namespace. */
    /* (source and type are ignored here; "none" rather than NULL, which
     * valgrind takes for a bad pointer) */
    cr_assert_eq(mount("none", "/", "none", MS_REC | MS_PRIVATE, NULL), 0,
                 "mount: %s", strerror(errno));
    char mnt[] = "/tmp/tg_tmpfs_XXXXXX";
    cr_assert_not_null(mkdtemp(mnt));
    cr_assert_eq(mount("tmpfs", mnt, "tmpfs", 0, "size=256k"), 0,
                 "mount: %s", strerror(errno));
    cr_assert_eq(chdir(mnt), 0);
    save_a();
    int kept_a = 0;
    for (long pages = 0; pages < 64; pages++) {
        reset_to_a();
        /* A file that leaves `pages` pages free. */
        int fd = open("filler", O_WRONLY | O_CREAT | O_TRUNC, 0600);
        cr_assert_geq(fd, 0);
        static char block[4096];
        while (write(fd, block, sizeof block) == (ssize_t)sizeof block)
            ;
        off_t size = lseek(fd, 0, SEEK_END);
        cr_assert_geq(size, pages * 4096);
        cr_assert_eq(ftruncate(fd, size - pages * 4096), 0);
        cr_assert_eq(close(fd), 0);
        outcome o;
        save_b(&o);
        unlink("filler");
        char all[1024];
        list_folder(".", all, sizeof all);
        int which = which_model("ck");
        cr_assert(which == 1 || which == 2, "%ld pages: loads as %d (%s)",
                  pages, which, o.error);
        if (o.rc != 0) {
            cr_assert_eq(which, 1, "%ld pages: %s", pages, o.error);
            cr_assert_str_eq(all, "ck", "%ld pages: left %s", pages, all);
            kept_a++;
        } else {
            cr_assert_eq(which, 2);
            break;
        }
    }
    cr_assert_gt(kept_a, 0, "the disk was never full");
    cr_assert_eq(chdir("/"), 0);
    umount(mnt);
    rmdir(mnt);
}

/* ------------------------------------------------------------ tg_save_npy */

TG_TEST(atomic_save, npy_keeps_the_old_file_through_every_fault)
{
    enter_scratch();
    tg_tensor *old = tg_arange(0, 10, 1, TG_FLOAT64);
    tg_tensor *neu = tg_arange(100, 110, 1, TG_FLOAT64);
    cr_assert_eq(tg_save_npy("x.npy", old), 0);
    cr_assert_eq(chmod("x.npy", 0640), 0);
    unsigned char before[512], after[512];
    size_t n = read_bytes("x.npy", before, sizeof before);
    for (long k = 0;; k++) {
        tg_test_fail_io(-1, k, EIO, false, -1);
        int rc = tg_save_npy("x.npy", neu);
        long steps = tg_test_io_steps();
        tg_test_io_off();
        char all[256];
        list_folder(".", all, sizeof all);
        cr_assert_str_eq(all, "x.npy", "step %ld left %s", k, all);
        struct stat st;
        cr_assert_eq(stat("x.npy", &st), 0);
        cr_assert_eq(st.st_mode & 0777, 0640, "step %ld: mode %o", k,
                     st.st_mode & 0777);
        if (rc == 0 && k >= steps)
            break;
        /* A failure leaves the old bytes, except the flush of the folder
         * after the rename, which says the new file is written. */
        if (rc != 0 && !strstr(tg_last_error(), "but cannot flush")) {
            cr_assert_eq(read_bytes("x.npy", after, sizeof after), n);
            cr_assert_eq(memcmp(before, after, n), 0, "step %ld", k);
        }
        cr_assert_lt(k, 100);
    }
    tg_tensor *back = tg_load_npy("x.npy");
    cr_assert(tg_test_close(back, neu, 0, 0, true, NULL, 0));
    tg_release(back);
    tg_release(neu);
    tg_release(old);
    leave_scratch();
}

TG_TEST(atomic_save, npy_never_removes_what_it_did_not_make)
{
    enter_scratch();
    tg_tensor *x = tg_arange(0, 4, 1, TG_FLOAT32);
    struct stat st;
    /* A FIFO and a folder are refused and stay. */
    cr_assert_eq(mkfifo("fifo.npy", 0666), 0);
    cr_assert_eq(tg_save_npy("fifo.npy", x), -1);
    cr_assert(lstat("fifo.npy", &st) == 0 && S_ISFIFO(st.st_mode));
    cr_assert_eq(mkdir("dir.npy", 0777), 0);
    cr_assert_eq(tg_save_npy("dir.npy", x), -1);
    cr_assert(lstat("dir.npy", &st) == 0 && S_ISDIR(st.st_mode));
    /* A copy of /dev/full's device node (root only): a failed write used
     * to remove it. */
    if (geteuid() == 0 &&
        mknod("full.npy", S_IFCHR | 0666, makedev(1, 7)) == 0) {
        cr_assert_eq(tg_save_npy("full.npy", x), -1);
        tg_assert_error("tg_save_npy: 'full.npy' exists and is not a regular "
                        "file but a character device");
        cr_assert(lstat("full.npy", &st) == 0 && S_ISCHR(st.st_mode));
    }
    /* A link to a file stays a link; the file it points to is replaced. */
    tg_tensor *y = tg_arange(5, 9, 1, TG_FLOAT32);
    cr_assert_eq(tg_save_npy("real.npy", y), 0);
    cr_assert_eq(symlink("real.npy", "link.npy"), 0);
    cr_assert_eq(tg_save_npy("link.npy", x), 0);
    cr_assert(lstat("link.npy", &st) == 0 && S_ISLNK(st.st_mode));
    tg_tensor *back = tg_load_npy("real.npy");
    cr_assert(tg_test_close(back, x, 0, 0, true, NULL, 0));
    tg_release(back);
    tg_release(y);
    tg_release(x);
    leave_scratch();
}
