/*
 * tensor/debug.c - memory mistakes made visible: the debug mode (TG_DEBUG,
 * tg_set_debug) and the leak report (TG_LEAK_CHECK, tg_print_live_tensors).
 *
 * A tracked tensor (tensor/debug.h) is linked into one list of live
 * tensors, in the order they were made. In the debug mode its header
 * outlives its last release: it is poisoned (no storage, refcount 0,
 * strides that point nowhere) and put in a quarantine of QUARANTINE_SIZE
 * headers, so that the memory is never handed to another tensor while a
 * stale pointer may still reach it, and a second release or a later use
 * finds the record of where it was released. Not here: the check itself,
 * which is inline (tg_check_alive), and the creation number, which
 * tensor.c gives every tensor.
 */
#include "debug.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The header is rounded as tensor.c rounds it, so the record after it is
 * aligned. */
#define HEAD ((sizeof(tg_tensor) + 15) / 16 * 16)
#define QUARANTINE_SIZE 16384 // released headers kept (about 4 MiB)
#define LIST_MAX 20           // tensors listed by tg_print_live_tensors

/* -1 until the environment is read, then 0 or 1; relaxed, as the other
 * switches (a thread that sees the old value tracks one tensor less). */
static atomic_int debug_on = -1;
static atomic_int leak_check_on = -1;

/* The live list and the quarantine, under one spin lock (the debug mode
 * is not about speed, and they change together). */
static atomic_flag lock = ATOMIC_FLAG_INIT;
static tg_tensor_debug *oldest, *newest;
static tg_tensor *quarantine[QUARANTINE_SIZE];
static size_t quarantined, quarantine_next; // count; slot of the next one

static void lock_acquire(void)
{
    while (atomic_flag_test_and_set_explicit(&lock, memory_order_acquire))
        ;
}

static void lock_release(void)
{
    atomic_flag_clear_explicit(&lock, memory_order_release);
}

/* Frees the quarantined headers when the program ends. */
static void quarantine_empty(void)
{
    lock_acquire();
    for (size_t i = 0; i < QUARANTINE_SIZE; i++) {
        free(quarantine[i]);
        quarantine[i] = NULL;
    }
    quarantined = 0;
    lock_release();
}

static void leak_check_at_exit(void)
{
    if (tg_live_tensors() == 0)
        return;
    fprintf(stderr, "tapegrad: TG_LEAK_CHECK=1: ");
    tg_print_live_tensors(stderr);
    fflush(NULL);
    _Exit(1);
}

static int env_switch(const char *var, const char *fallback_says)
{
    static const char *const names[] = {"0", "1"};
    return tg_env_choice(var, names, 2, 0, fallback_says);
}

/* tg_debug_switches from the two switches, once both are read. */
static void switches_update(void)
{
    int d = atomic_load_explicit(&debug_on, memory_order_relaxed);
    int l = atomic_load_explicit(&leak_check_on, memory_order_relaxed);
    if (d >= 0 && l >= 0)
        atomic_store_explicit(&tg_debug_switches,
                              (d > 0 ? TG_DEBUG_MODE : 0) |
                                  (l > 0 ? TG_DEBUG_LEAK_CHECK : 0),
                              memory_order_relaxed);
}

/* Reads TG_DEBUG and TG_LEAK_CHECK once (two threads may both read them:
 * they read the same values). */
static void read_environment(void)
{
    if (atomic_load_explicit(&leak_check_on, memory_order_relaxed) < 0) {
        int v = env_switch(TG_LEAK_CHECK, "no leak check at exit");
        if (v)
            atexit(leak_check_at_exit);
        atomic_store_explicit(&leak_check_on, v, memory_order_relaxed);
    }
    if (atomic_load_explicit(&debug_on, memory_order_relaxed) < 0) {
        int v = env_switch(TG_DEBUG, "the debug mode stays off");
        if (v)
            atexit(quarantine_empty);
        atomic_store_explicit(&debug_on, v, memory_order_relaxed);
    }
    switches_update();
}

atomic_int tg_debug_switches = -1;

int tg_debug_switches_read(void)
{
    read_environment();
    return atomic_load_explicit(&tg_debug_switches, memory_order_relaxed);
}

void tg_set_debug(bool on)
{
    read_environment(); // so that TG_DEBUG read later cannot undo this
    static atomic_flag exit_hook = ATOMIC_FLAG_INIT;
    if (on && !atomic_flag_test_and_set(&exit_hook))
        atexit(quarantine_empty);
    atomic_store_explicit(&debug_on, on, memory_order_relaxed);
    switches_update();
}

bool tg_debug_enabled(void)
{
    return tg_debug_switches_now() & TG_DEBUG_MODE;
}

tg_tensor *tg_debug_header_new(void)
{
    char *block = tg_malloc(HEAD + sizeof(tg_tensor_debug));
    if (!block)
        return NULL;
    tg_tensor *t = (tg_tensor *)block;
    tg_tensor_debug *d = (tg_tensor_debug *)(block + HEAD);
    *d = (tg_tensor_debug){.tensor = t};
    t->debug = d;
    lock_acquire();
    d->prev = newest;
    if (newest)
        newest->next = d;
    else
        oldest = d;
    newest = d;
    lock_release();
    return t;
}

/* A pattern no tensor uses: strides and offset of a released header point
 * far outside any storage, so a kernel that was not stopped by the check
 * faults at once instead of reading another tensor's elements. */
#define POISON INT64_C(0x5a5a5a5a5a5a5a5a)

void tg_debug_header_free(tg_tensor *t, const char *file, int line,
                          const char *func)
{
    tg_tensor_debug *d = t->debug;
    bool keep = tg_debug_enabled();
    tg_tensor *evicted = NULL;
    lock_acquire();
    if (d->prev)
        d->prev->next = d->next;
    else
        oldest = d->next;
    if (d->next)
        d->next->prev = d->prev;
    else
        newest = d->prev;
    d->prev = d->next = NULL;
    if (keep) {
        d->released = true;
        d->released_in = func;
        d->released_file = file;
        d->released_line = line;
        /* What the report shows stays: dtype, shape, numel, serial,
         * made_by. The rest points nowhere. */
        for (int k = 0; k < TG_MAX_DIMS; k++)
            t->strides[k] = POISON;
        t->offset = POISON;
        t->storage = NULL;
        t->refcount = 0;
        t->requires_grad = t->retains_grad = false;
        t->grad = NULL;
        t->grad_fn = NULL;
        evicted = quarantine[quarantine_next];
        quarantine[quarantine_next] = t;
        quarantine_next = (quarantine_next + 1) % QUARANTINE_SIZE;
        if (quarantined < QUARANTINE_SIZE)
            quarantined++;
    }
    lock_release();
    if (!keep)
        free(t);
    free(evicted); // the oldest, once the quarantine is full
}

/* "(32, 27) float32 made by tg_matmul (#412)" into buf. */
static const char *describe(const tg_tensor *t, char *buf, size_t size)
{
    char s[TG_SHAPE_STR_MAX];
    const char *by = t->made_by;
    const tg_autograd_hooks *h = tg_get_autograd_hooks();
    if (!by && t->grad_fn && h)
        by = h->grad_fn_name(t->grad_fn);
    snprintf(buf, size, "%s %s made by %s (#%llu)",
             tg_shape_format(t->shape, t->ndim, s), tg_dtype_name(t->dtype),
             by ? by : "an unnamed step", (unsigned long long)t->serial);
    return buf;
}

_Noreturn void tg_debug_report_released(const char *fn, const tg_tensor *t)
{
    char what[TG_SHAPE_STR_MAX + 128], where[512];
    describe(t, what, sizeof what);
    const tg_tensor_debug *d = t->debug;
    if (d && d->released)
        snprintf(where, sizeof where, "released in %s() at %s:%d",
                 d->released_in ? d->released_in : "?",
                 d->released_file ? d->released_file : "?",
                 d->released_line);
    else
        snprintf(where, sizeof where,
                 "released earlier (TG_DEBUG=1 records where)");
    if (strcmp(fn, "tg_release") == 0)
        tg_error(fn,
                 "the tensor %s was released again\n"
                 "  it was %s\n"
                 "  rule: each reference is released once: tg_release "
                 "gives up the reference the caller got from the function "
                 "that made it (or from tg_retain)\n"
                 "  hint: remove the second tg_release, or tg_retain the "
                 "tensor where a second owner keeps it",
                 what, where);
    else
        tg_error(fn,
                 "the tensor %s was used after its last release\n"
                 "  it was %s\n"
                 "  rule: a tensor may be used while its owner holds a "
                 "reference; its last tg_release frees it\n"
                 "  hint: move that tg_release after the last use, or "
                 "tg_retain the tensor where it is kept",
                 what, where);
    /* The handler has had the message: print it too when the handler
     * did not (the quiet one of the tests), as the process ends here. */
    tg_error_handler h = tg_set_error_handler(NULL);
    tg_set_error_handler(h);
    if (h != tg_error_handler_print && h != tg_error_handler_abort)
        fprintf(stderr, "%s\n", tg_last_error());
    abort();
}

int tg_print_live_tensors(FILE *f)
{
    if (!f) {
        tg_error("tg_print_live_tensors",
                 "f is NULL\n"
                 "  hint: pass an open stream, e.g. stderr");
        return -1;
    }
    int64_t live = tg_live_tensors();
    if (live <= 0) {
        fprintf(f, "no tensor is alive\n");
        return 0;
    }
    char line[TG_SHAPE_STR_MAX + 128];
    lock_acquire();
    int64_t listed = 0;
    for (const tg_tensor_debug *d = oldest; d; d = d->next)
        listed++;
    if (live == 1 && listed == 1) {
        fprintf(f, "1 tensor is still alive: %s\n",
                describe(oldest->tensor, line, sizeof line));
        lock_release();
        return 0;
    }
    fprintf(f, "%lld %s still alive%s\n", (long long)live,
            live == 1 ? "tensor is" : "tensors are", listed ? ":" : "");
    int64_t shown = 0;
    for (const tg_tensor_debug *d = oldest; d && shown < LIST_MAX;
         d = d->next, shown++)
        fprintf(f, "  %s\n", describe(d->tensor, line, sizeof line));
    lock_release();
    if (listed > shown)
        fprintf(f, "  ... and %lld more\n", (long long)(listed - shown));
    if (live > listed)
        fprintf(f, "  (%lld made while TG_DEBUG and TG_LEAK_CHECK were off "
                   "%s not listed: set TG_LEAK_CHECK=1 to list %s)\n",
                (long long)(live - listed),
                live - listed == 1 ? "is" : "are",
                live - listed == 1 ? "it" : "them");
    return 0;
}
