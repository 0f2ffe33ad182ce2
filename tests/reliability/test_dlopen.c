/*
 * tests/reliability/test_dlopen.c - the library loaded with dlopen by a
 * program not linked with it, as Python's ctypes loads it, works on every
 * thread.
 *
 * The library's thread-locals (each thread's tape, last error, free lists
 * and allocation counts) are reached through TLS descriptors (meson.build:
 * -mtls-dialect=gnu2): cheap in a library loaded at start-up, and in one
 * loaded later by dlopen they take the dynamic path, one block per thread
 * allocated on first use. This program is that later load: it links only
 * libc, opens the library by path (TG_LIBRARY_PATH, from meson), and on
 * the main thread and on a second one records a small graph, runs its
 * backward, checks the gradient, reports an error and reads it back, and
 * checks that each thread sees its own tape and its own last error. A TLS
 * model that needs room in the static TLS block (initial-exec) could fail
 * right at dlopen ("cannot allocate memory in static TLS block"), which
 * this reports too.
 *
 * Plain C without Criterion (which would link the library in): exit
 * status 0 when everything held, 1 with a message otherwise.
 */
#include "tapegrad.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

static struct {
    tg_tensor *(*ones)(const int64_t *, int, tg_dtype);
    int (*set_requires_grad)(tg_tensor *, bool);
    tg_tensor *(*mul)(const tg_tensor *, const tg_tensor *);
    tg_tensor *(*sum)(const tg_tensor *, const int *, int, bool);
    int (*backward)(tg_tensor *);
    void (*release)(tg_tensor *);
    int64_t (*live_tensors)(void);
    int64_t (*tape_size)(void);
    const char *(*last_error)(void);
    tg_error_handler (*set_error_handler)(tg_error_handler);
    void (*quiet)(const char *);
} lib;

static int failures;

#define CHECK(cond, ...)                                                    \
    do {                                                                    \
        if (!(cond)) {                                                      \
            fprintf(stderr, "test_dlopen: " __VA_ARGS__);                   \
            fprintf(stderr, "\n");                                          \
            failures++;                                                     \
        }                                                                   \
    } while (0)

/* One thread's work: y = sum(x * x) for x = ones(3), whose gradient is
 * 2 x = 2 everywhere; then a refused call and its message. The tape
 * holds y's two nodes while y lives, on this thread only. */
static void *work(void *name)
{
    const char *who = name;
    lib.set_error_handler(lib.quiet);
    CHECK(lib.last_error()[0] == '\0', "%s: a last error before any call: %s",
          who, lib.last_error());
    int64_t shape[1] = {3};
    tg_tensor *x = lib.ones(shape, 1, TG_FLOAT32);
    CHECK(x && lib.set_requires_grad(x, true) == 0, "%s: ones: %s", who,
          lib.last_error());
    tg_tensor *xx = lib.mul(x, x);
    tg_tensor *y = lib.sum(xx, NULL, 0, false);
    CHECK(y && lib.tape_size() == 2, "%s: tape of %lld nodes, not 2", who,
          (long long)lib.tape_size());
    CHECK(y && lib.backward(y) == 0, "%s: backward: %s", who,
          lib.last_error());
    const float *g = x && x->grad ? (const float *)x->grad->storage->data
                                  : NULL;
    CHECK(g && g[0] == 2.0f && g[1] == 2.0f && g[2] == 2.0f,
          "%s: the gradient is not (2, 2, 2)", who);
    lib.release(y);
    lib.release(xx);
    lib.release(x);
    CHECK(lib.tape_size() == 0, "%s: %lld nodes left on the tape", who,
          (long long)lib.tape_size());
    CHECK(!lib.ones(shape, -1, TG_FLOAT32), "%s: ndim -1 accepted", who);
    CHECK(strncmp(lib.last_error(), "tg_ones", 7) == 0,
          "%s: the last error is \"%s\"", who, lib.last_error());
    return NULL;
}

int main(void)
{
    void *h = dlopen(TG_LIBRARY_PATH, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        fprintf(stderr, "test_dlopen: dlopen(%s): %s\n", TG_LIBRARY_PATH,
                dlerror());
        return 1;
    }
    struct {
        void **slot;
        const char *name;
    } symbols[] = {
        {(void **)&lib.ones, "tg_ones"},
        {(void **)&lib.set_requires_grad, "tg_set_requires_grad"},
        {(void **)&lib.mul, "tg_mul"},
        {(void **)&lib.sum, "tg_sum"},
        {(void **)&lib.backward, "tg_backward"},
        {(void **)&lib.release, "tg_release"},
        {(void **)&lib.live_tensors, "tg_live_tensors"},
        {(void **)&lib.tape_size, "tg_tape_size"},
        {(void **)&lib.last_error, "tg_last_error"},
        {(void **)&lib.set_error_handler, "tg_set_error_handler"},
        {(void **)&lib.quiet, "tg_error_handler_quiet"},
    };
    for (size_t i = 0; i < sizeof symbols / sizeof symbols[0]; i++)
        if (!(*symbols[i].slot = dlsym(h, symbols[i].name))) {
            fprintf(stderr, "test_dlopen: no symbol %s: %s\n",
                    symbols[i].name, dlerror());
            return 1;
        }
    work("main thread");
    /* The main thread's error stays its own while another thread runs. */
    pthread_t t;
    CHECK(pthread_create(&t, NULL, work, "second thread") == 0,
          "pthread_create failed");
    pthread_join(t, NULL);
    CHECK(strncmp(lib.last_error(), "tg_ones", 7) == 0,
          "main thread: its last error became \"%s\"", lib.last_error());
    CHECK(lib.live_tensors() == 0, "%lld tensors alive at the end",
          (long long)lib.live_tensors());
    if (failures)
        return 1;
    printf("test_dlopen: ok\n");
    return 0;
}
