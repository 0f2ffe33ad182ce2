/*
 * tensor/debug.h - what tensor/ and autograd/ share of the debug mode and
 * the leak report (tensor/debug.c). Not installed.
 *
 * A tensor made while TG_DEBUG or TG_LEAK_CHECK is on has a header of its
 * own (never inside its storage's block) followed by a tg_tensor_debug
 * record, and is linked into the list of live tensors that
 * tg_print_live_tensors walks. Any other tensor has debug == NULL and
 * costs the debug mode nothing but one test at creation.
 */
#ifndef TG_TENSOR_DEBUG_H
#define TG_TENSOR_DEBUG_H

#include "internal.h"

#include <stdatomic.h>

typedef struct tg_tensor_debug {
    struct tg_tensor_debug *prev, *next; // the live list, oldest first
    tg_tensor *tensor;                   // the header this record follows
    bool released;                       // poisoned, in the quarantine
    const char *released_in;             // the function that released it
    const char *released_file;
    int released_line;
} tg_tensor_debug;

/* The two switches as every tensor's creation and release read them: -1
 * until the environment is read, then TG_DEBUG_MODE | TG_DEBUG_LEAK_CHECK
 * for those on. One relaxed load inline, where making a tensor called
 * into debug.c to learn whether it is tracked and freeing a small block
 * to learn whether the debug mode is on. debug.c sets it from its own
 * switches whenever they change. */
enum { TG_DEBUG_MODE = 1, TG_DEBUG_LEAK_CHECK = 2 };
extern atomic_int tg_debug_switches;

/* Reads the environment (once) and returns tg_debug_switches. */
int tg_debug_switches_read(void);

static inline int tg_debug_switches_now(void)
{
    int s = atomic_load_explicit(&tg_debug_switches, memory_order_relaxed);
    return s >= 0 ? s : tg_debug_switches_read();
}

/* Whether new tensors are tracked (TG_DEBUG or TG_LEAK_CHECK on). Reads
 * the environment the first time. */
static inline bool tg_debug_tracking(void)
{
    return tg_debug_switches_now() != 0;
}

/* A tracked header: the tensor's memory and its record, linked into the
 * live list. Uninitialised except t->debug, which the caller keeps. NULL
 * when memory runs out. */
tg_tensor *tg_debug_header_new(void);

/* The last reference of a tracked t is gone (its storage and grad are
 * released already): unlinks it, then, in the debug mode, poisons the
 * header and keeps it in the quarantine with where it was released;
 * otherwise frees it. */
void tg_debug_header_free(tg_tensor *t, const char *file, int line,
                          const char *func);

/* Reports that fn was given t after its last release (or is releasing it
 * again), then aborts unless the error handler never returns. */
_Noreturn void tg_debug_report_released(const char *fn, const tg_tensor *t);

/* The check every public function makes of a tensor argument that is not
 * NULL: a released tensor (refcount 0, its header kept by the debug mode
 * or still inside a block its views keep) is reported, and the process
 * aborts. One load and one compare, so it stays in release builds. */
static inline void tg_check_alive(const char *fn, const tg_tensor *t)
{
    if (t && t->refcount <= 0)
        tg_debug_report_released(fn, t);
}

#endif
