/*
 * tensor/fileio.c - the file-system calls behind saving: create a new file,
 * write all of it, flush it to the disk, rename or swap it into place.
 *
 * Saving never writes over a file in place. tg_save_npy writes a new file
 * under a temporary name beside the target, flushes it (fsync) and renames
 * it over the target; tg_module_save writes a whole new folder and swaps it
 * with the old one. A rename is atomic, so a reader (or a program started
 * after a crash) sees the complete old file or the complete new one, never
 * a mix; and a failure removes only what the library created.
 *
 * Every call here goes through one test hook, tg_set_io_hook (tensor.h),
 * which can make any step fail with an errno of its choosing, cut a write
 * short, or end the process right there (a simulated crash), so the tests
 * can check that promise at every step. The functions return 0 or -1 with
 * errno set and report nothing: their callers word the messages.
 *
 * What this file is not: no buffering (callers write large blocks), no
 * locking (two processes saving to one path at once is not supported),
 * POSIX only.
 */
#define _GNU_SOURCE // syscall(SYS_renameat2) on Linux
#include "internal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>
#ifdef __linux__
#include <sys/syscall.h>
#endif

/* ------------------------------------------------------------- the hook */

static _Thread_local tg_io_hook io_hook;
static _Thread_local void *io_hook_ctx;

void tg_set_io_hook(tg_io_hook hook, void *ctx)
{
    io_hook = hook;
    io_hook_ctx = ctx;
}

/* Asks the hook whether this step may run; -1 with errno set when the hook
 * fails it. A write's size may come back smaller (a short write). */
static int hook_allows(tg_io_step step, const char *path, size_t *nbytes)
{
    if (!io_hook)
        return 0;
    size_t unused = 0;
    int err = io_hook(step, path, nbytes ? nbytes : &unused, io_hook_ctx);
    if (err == 0)
        return 0;
    errno = err;
    return -1;
}

/* ---------------------------------------------------------- the calls */

int tg_io_create(const char *path, int *fd)
{
    *fd = -1;
    if (hook_allows(TG_IO_CREATE, path, NULL) < 0)
        return -1;
    /* O_EXCL: never open (and so never truncate) a file that exists. */
    int f;
    do
        f = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    while (f < 0 && errno == EINTR);
    if (f < 0)
        return -1;
    *fd = f;
    return 0;
}

int tg_io_write(int fd, const void *bytes, size_t n, const char *path)
{
    const unsigned char *p = bytes;
    while (n > 0) {
        size_t chunk = n < ((size_t)1 << 30) ? n : (size_t)1 << 30;
        if (hook_allows(TG_IO_WRITE, path, &chunk) < 0)
            return -1;
        if (chunk == 0) { // the hook cut the write to nothing: disk full
            errno = ENOSPC;
            return -1;
        }
        ssize_t k = write(fd, p, chunk);
        if (k < 0 && errno == EINTR)
            continue;
        if (k < 0)
            return -1;
        if (k == 0) {
            errno = ENOSPC;
            return -1;
        }
        p += k;
        n -= (size_t)k;
    }
    return 0;
}

int tg_io_fsync(int fd, const char *path)
{
    if (hook_allows(TG_IO_SYNC, path, NULL) < 0)
        return -1;
    return fsync(fd);
}

int tg_io_close(int fd, const char *path)
{
    /* close() can report a delayed write error (NFS); the file descriptor
     * is gone whatever it returns, so it is never retried. */
    if (hook_allows(TG_IO_CLOSE, path, NULL) < 0) {
        int err = errno;
        close(fd);
        errno = err;
        return -1;
    }
    return close(fd);
}

int tg_io_sync_dir(const char *dir)
{
    if (hook_allows(TG_IO_SYNC, dir, NULL) < 0)
        return -1;
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    int rc = fsync(fd);
    int err = errno;
    close(fd);
    /* Some file systems cannot sync a folder; their renames are as durable
     * as they get. */
    if (rc < 0 && (err == EINVAL || err == ENOTSUP))
        return 0;
    errno = err;
    return rc;
}

int tg_io_mkdir(const char *path)
{
    if (hook_allows(TG_IO_CREATE, path, NULL) < 0)
        return -1;
    return mkdir(path, 0777);
}

int tg_io_rename(const char *from, const char *to)
{
    if (hook_allows(TG_IO_RENAME, to, NULL) < 0)
        return -1;
    return rename(from, to);
}

int tg_io_exchange(const char *a, const char *b)
{
    if (hook_allows(TG_IO_EXCHANGE, b, NULL) < 0)
        return -1;
#if defined(__linux__) && defined(SYS_renameat2)
    /* renameat2(RENAME_EXCHANGE): both names stay taken throughout. */
    return (int)syscall(SYS_renameat2, AT_FDCWD, a, AT_FDCWD, b,
                        1u << 1 /* RENAME_EXCHANGE */);
#else
    (void)a;
    errno = ENOSYS;
    return -1;
#endif
}

int tg_io_unlink(const char *path)
{
    if (hook_allows(TG_IO_REMOVE, path, NULL) < 0)
        return -1;
    return unlink(path);
}

int tg_io_rmdir(const char *path)
{
    if (hook_allows(TG_IO_REMOVE, path, NULL) < 0)
        return -1;
    return rmdir(path);
}

/* ------------------------------------------------------ temporary names */

void tg_io_unique_suffix(char out[TG_IO_SUFFIX_SIZE])
{
    /* Not a secret, only unlikely to meet another process's: the pid, the
     * clock and a counter, mixed (splitmix64) and written in base 36. The
     * caller creates the name with O_EXCL or mkdir and tries another one
     * if it exists. */
    static atomic_uint_fast64_t counter;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    uint64_t z = (uint64_t)getpid() * 0x9e3779b97f4a7c15u ^
                 (uint64_t)ts.tv_nsec ^ (uint64_t)ts.tv_sec << 30 ^
                 atomic_fetch_add(&counter, 1) * 0xbf58476d1ce4e5b9u;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
    z ^= z >> 31;
    static const char digits[] = "0123456789abcdefghijklmnopqrstuvwxyz";
    for (int i = 0; i < TG_IO_SUFFIX_SIZE - 1; i++, z /= 36)
        out[i] = digits[z % 36];
    out[TG_IO_SUFFIX_SIZE - 1] = '\0';
}

char *tg_io_parent(const char *path)
{
    const char *slash = strrchr(path, '/');
    while (slash && slash > path && slash[-1] == '/') // "a//b"
        slash--;
    size_t n = !slash ? 1 : slash == path ? 1 : (size_t)(slash - path);
    char *dir = tg_malloc(n + 1);
    if (!dir)
        return NULL;
    if (!slash)
        memcpy(dir, ".", 2);
    else if (slash == path)
        memcpy(dir, "/", 2);
    else {
        memcpy(dir, path, n);
        dir[n] = '\0';
    }
    return dir;
}

const char *tg_file_kind(unsigned mode)
{
    switch (mode & S_IFMT) {
    case S_IFREG: return "a regular file";
    case S_IFDIR: return "a folder";
    case S_IFCHR: return "a character device";
    case S_IFBLK: return "a block device";
    case S_IFIFO: return "a FIFO (named pipe)";
    case S_IFSOCK: return "a socket";
    case S_IFLNK: return "a symbolic link";
    }
    return "not a regular file";
}

int tg_io_open_regular(const char *path, int *fd, unsigned *mode,
                       uint64_t *size)
{
    *fd = -1;
    *mode = 0;
    *size = 0;
    /* O_NONBLOCK: opening a FIFO must not wait for a writer; it changes
     * nothing for a regular file, the only kind handed back. */
    int f = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (f < 0)
        return -1;
    struct stat st;
    if (fstat(f, &st) != 0) {
        int err = errno;
        close(f);
        errno = err;
        return -1;
    }
    *mode = (unsigned)st.st_mode;
    *size = (uint64_t)st.st_size;
    if (!S_ISREG(st.st_mode)) {
        close(f);
        return -2;
    }
    *fd = f;
    return 0;
}
