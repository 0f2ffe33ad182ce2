/*
 * tensor/memory.c - the library's allocation functions and the test hook
 * that makes them fail.
 *
 * Every malloc/calloc/realloc/aligned_alloc in the library goes through
 * these, so a test can make the k-th allocation of an operation fail and
 * check that the operation reports "out of memory", leaks nothing and
 * leaves its arguments usable. The countdown is per thread: a test that
 * injects failures never disturbs another thread's work.
 */
#define _DEFAULT_SOURCE // madvise
#include "debug.h"
#include "internal.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

/* What the library's allocation functions keep per thread, in one
 * thread-local variable: a shared library reaches each of its own through
 * a call (__tls_get_addr), so a function takes its address once. */
typedef struct thread_memory thread_memory;
static thread_memory *this_thread(void);

/* True when the hook says this allocation must fail. */
static bool injected_failure(thread_memory *m);

/* injected_failure() for a request that will reach the system allocator:
 * counts it when it does. */
static bool refused(thread_memory *m);

void *tg_malloc(size_t size)
{
    return refused(this_thread()) ? NULL : malloc(size);
}

void *tg_calloc(size_t count, size_t size)
{
    return refused(this_thread()) ? NULL : calloc(count, size);
}

void *tg_realloc(void *p, size_t size)
{
    return refused(this_thread()) ? NULL : realloc(p, size);
}

void *tg_aligned_alloc(size_t alignment, size_t size)
{
    return refused(this_thread()) ? NULL : aligned_alloc(alignment, size);
}

/* ------------------------------------------------------- block cache */

/* Freed blocks of 64 KiB or more are kept and handed out again for a
 * request of exactly their size, in two bounded pools:
 *
 *   large: 1 MiB and more, 8 blocks, 256 MiB at most;
 *   mid:   64 KiB to 1 MiB, 64 blocks, 16 MiB at most.
 *
 * Without them glibc gives a freed multi-megabyte block back to the
 * kernel (it was mmap'ed) and the next one of the same size faults in and
 * zeroes every page again: a training loop or a benchmark repeating one
 * shape paid that on every step (LayerNorm on (4096, 768): twice the
 * kernel's own time). Mid-size blocks fault too: from 128 KiB glibc mmaps
 * them, and below that it trims the heap's free top back to the kernel
 * once it passes 128 KiB, so LayerNorm on (64, 768) or the medium MLP
 * step (batch 256, width 128) took page faults on every step. Smaller
 * blocks glibc keeps by itself. Sanitizer builds keep no blocks, so a use
 * after free is still caught. */
#define MID_MIN ((size_t)64 << 10)
#define MID_SLOTS 64
#define MID_MAX_TOTAL ((size_t)16 << 20)
#define CACHE_MIN ((size_t)1 << 20)
#define CACHE_SLOTS 8
#define CACHE_MAX_TOTAL ((size_t)256 << 20)
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define CACHE_ON 0
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define CACHE_ON 0
#endif
#endif
#ifndef CACHE_ON
#define CACHE_ON 1
#endif

/* An on/off switch from the environment (TG_BLOCK_CACHE=0,
 * TG_HUGE_PAGES=0): *setting is -1 until read, then 0 or 1. Two threads
 * reading it at once read the same value. */
static bool env_switch(atomic_int *setting, const char *var,
                       const char *on_says)
{
    int v = atomic_load_explicit(setting, memory_order_relaxed);
    if (v < 0) {
        static const char *const names[] = {"0", "1"};
        v = tg_env_choice(var, names, 2, 1, on_says);
        atomic_store_explicit(setting, v, memory_order_relaxed);
    }
    return v;
}

static atomic_int cache_setting = -1;

static bool cache_on(void)
{
    return CACHE_ON && env_switch(&cache_setting, TG_BLOCK_CACHE,
                                  "the block cache stays on");
}

typedef struct cached_block {
    void *block;
    size_t size;
    uint64_t age; // pool->clock when kept: the smallest is the oldest
} cached_block;

typedef struct block_pool {
    cached_block *slots; // (nslots,)
    int nslots;
    size_t max_total;
    size_t total; // bytes kept
    uint64_t clock;
} block_pool;

static cached_block large_slots[CACHE_SLOTS], mid_slots[MID_SLOTS];
static block_pool large_pool = {large_slots, CACHE_SLOTS, CACHE_MAX_TOTAL,
                                0, 0};
static block_pool mid_pool = {mid_slots, MID_SLOTS, MID_MAX_TOTAL, 0, 0};

/* The pool a block of this size belongs to, or NULL: not kept. */
static block_pool *pool_for(size_t size)
{
    if (size >= CACHE_MIN)
        return &large_pool;
    return size >= MID_MIN ? &mid_pool : NULL;
}
static atomic_flag cache_lock = ATOMIC_FLAG_INIT;

static void cache_acquire(void)
{
    while (atomic_flag_test_and_set_explicit(&cache_lock,
                                             memory_order_acquire))
        ;
}

static void cache_release(void)
{
    atomic_flag_clear_explicit(&cache_lock, memory_order_release);
}

/* ------------------------------------------------------- huge pages */

/* A block of 2 MiB or more starts on a 2 MiB boundary and asks the kernel
 * for transparent huge pages over its whole 2 MiB stretches (madvise
 * MADV_HUGEPAGE; the partial stretch at its end keeps 4 KiB pages, so no
 * memory is touched beyond the request). A kernel streaming such a block
 * then needs one TLB entry per 2 MiB instead of one per 4 KiB: on
 * (4096, 768) (12.6 MB a buffer) LayerNorm's forward and backward took
 * 0.95 of the time, BatchNorm1d's 0.85 (docs/performance.md, "Huge pages
 * for large tensors"). It asks only where the kernel gives huge pages to
 * the mappings that ask and to no others ("madvise" in
 * /sys/kernel/mm/transparent_hugepage/enabled, Debian's default): with
 * "always" every large mapping has them without asking, with "never" (or
 * no such file) none does. When the block goes back to malloc, its
 * stretches are set back to what a mapping that did not ask gets
 * (MADV_NOHUGEPAGE), so the memory malloc hands out next from that place
 * takes 4 KiB pages as before. TG_HUGE_PAGES=0 in the environment asks
 * for none. Sanitizer builds ask for none either. */
#define HUGE_PAGE ((size_t)2 << 20)

static atomic_int huge_setting = -1, thp_madvise = -1;

/* Whether the kernel's transparent huge pages are on for "madvise": -1
 * until read, then 0 or 1. */
static bool thp_on_request(void)
{
    int v = atomic_load_explicit(&thp_madvise, memory_order_relaxed);
    if (v < 0) {
        char mode[128] = "";
        FILE *f = fopen("/sys/kernel/mm/transparent_hugepage/enabled", "r");
        if (f) {
            if (!fgets(mode, sizeof mode, f))
                mode[0] = '\0';
            fclose(f);
        }
        v = strstr(mode, "[madvise]") != NULL;
        atomic_store_explicit(&thp_madvise, v, memory_order_relaxed);
    }
    return v;
}

static bool huge_pages_on(void)
{
    return CACHE_ON && thp_on_request() &&
           env_switch(&huge_setting, TG_HUGE_PAGES,
                      "large blocks ask for huge pages");
}

static void *huge_alloc(size_t size)
{
    void *p;
    if (posix_memalign(&p, HUGE_PAGE, size) != 0)
        return NULL;
#ifdef MADV_HUGEPAGE
    (void)madvise(p, size & ~(HUGE_PAGE - 1), MADV_HUGEPAGE); // advice only
#endif
    return p;
}

/* free() for a block that tg_block_alloc took from the system: a huge one
 * (huge_alloc) first takes its advice back. */
static void system_free(void *block, size_t size)
{
#ifdef MADV_NOHUGEPAGE
    if (block && size >= HUGE_PAGE && huge_pages_on())
        (void)madvise(block, size & ~(HUGE_PAGE - 1), MADV_NOHUGEPAGE);
#endif
    free(block);
}

/* ------------------------------------------------- small-block free lists */

/* Blocks of at most SMALL_MAX bytes (a tensor of up to about 15 KiB of
 * elements with its storage and tensor headers, a view's tensor header)
 * are kept when freed, on free lists of the thread that frees them, and
 * handed out again by that thread: a training step makes and frees the
 * same few dozen small tensors on every step, and with the lists it calls
 * neither malloc nor free for them (tg_system_allocations() counts the
 * calls that remain). A request is rounded up to a multiple of
 * SMALL_GRAIN, its class; each class keeps at most SMALL_PER_CLASS blocks
 * and a thread SMALL_MAX_TOTAL bytes in all, so a program that once had
 * thousands of small tensors alive gives the rest back to malloc.
 *
 * Per thread, so the lists take no lock and no atomic. A block freed on
 * another thread than the one that made it joins the freeing thread's
 * lists (malloc'ed memory belongs to no thread). When a thread ends, its
 * lists are freed (a pthread key's destructor), and the thread that runs
 * the exit handlers frees its own (atexit), so valgrind finds nothing
 * "still reachable". The lists are off when the other cache is
 * (TG_BLOCK_CACHE=0, sanitizer builds: there a freed block must stay
 * freed for a use after free to be reported) and in the debug mode
 * (TG_DEBUG=1), whose released tensors must never share memory with new
 * ones; a tracked tensor's header is apart from any block anyway
 * (tensor/debug.h). */
#define SMALL_GRAIN 128
#define SMALL_MAX 16384
#define SMALL_CLASSES (SMALL_MAX / SMALL_GRAIN)
#define SMALL_PER_CLASS 64
#define SMALL_MAX_TOTAL ((size_t)512 << 10)

typedef struct small_block {
    struct small_block *next;
} small_block;

typedef struct small_lists {
    small_block *head[SMALL_CLASSES]; // class c: blocks of (c+1)*GRAIN bytes
    int count[SMALL_CLASSES];
    size_t total; // bytes kept
    bool registered; // the thread-exit destructor knows these lists
    bool closed;     // freed at exit: keep nothing more
} small_lists;

struct thread_memory {
    int64_t allocations_left;   // before the hook fails them; < 0: hook off
    int64_t allocations_failed; // by the hook since it was last set
    int64_t system_allocations; // tg_system_allocations
    small_lists small;
};

static _Thread_local thread_memory memory = {.allocations_left = -1};

static thread_memory *this_thread(void)
{
    thread_memory *m = &memory;
    tg_tls_keep(m);
    return m;
}

int64_t tg_fail_allocations_after(int64_t n)
{
    thread_memory *m = this_thread();
    int64_t failed = m->allocations_failed;
    m->allocations_left = n < 0 ? -1 : n;
    m->allocations_failed = 0;
    return failed;
}

int64_t tg_system_allocations(void)
{
    return this_thread()->system_allocations;
}

static bool injected_failure(thread_memory *m)
{
    if (m->allocations_left < 0)
        return false;
    if (m->allocations_left > 0) {
        m->allocations_left--;
        return false;
    }
    m->allocations_failed++;
    return true;
}

static bool refused(thread_memory *m)
{
    if (injected_failure(m))
        return true;
    m->system_allocations++;
    return false;
}

/* The class of a request, or -1 when it is not small. */
static int small_class(size_t size)
{
    return size > 0 && size <= SMALL_MAX
               ? (int)((size + SMALL_GRAIN - 1) / SMALL_GRAIN) - 1
               : -1;
}

static void small_drain(small_lists *l)
{
    for (int c = 0; c < SMALL_CLASSES; c++) {
        while (l->head[c]) {
            small_block *b = l->head[c];
            l->head[c] = b->next;
            free(b);
        }
        l->count[c] = 0;
    }
    l->total = 0;
}

static pthread_key_t small_key;
static pthread_once_t small_once = PTHREAD_ONCE_INIT;
static bool small_key_made;

/* A thread ends: its lists go (glibc runs the destructor again if a
 * later destructor frees a block into them). */
static void small_thread_exit(void *lists)
{
    small_drain(lists);
    ((small_lists *)lists)->registered = false;
}

/* The program ends: the exiting thread's lists go, and it keeps no more. */
static void small_process_exit(void)
{
    small_lists *l = &this_thread()->small;
    l->closed = true;
    small_drain(l);
}

static void small_setup(void)
{
    small_key_made = pthread_key_create(&small_key, small_thread_exit) == 0;
    atexit(small_process_exit);
}

/* Whether freed small blocks are kept now. Whatever it says, a small
 * block is always allocated at its class's full size (when the lists are
 * built in at all), so that one freed while the lists were off and kept
 * after they came back on is as large as any request of its class. */
static bool small_on(const small_lists *l)
{
    return CACHE_ON && !l->closed && cache_on() &&
           !(tg_debug_switches_now() & TG_DEBUG_MODE);
}

void *tg_block_alloc(size_t size)
{
    thread_memory *m = this_thread();
    if (injected_failure(m))
        return NULL;
    int c = CACHE_ON ? small_class(size) : -1;
    if (c >= 0) {
        small_lists *l = &m->small;
        small_block *b = l->head[c];
        if (b) {
            l->head[c] = b->next;
            l->count[c]--;
            l->total -= (size_t)(c + 1) * SMALL_GRAIN;
            return b;
        }
        m->system_allocations++;
        return malloc((size_t)(c + 1) * SMALL_GRAIN);
    }
    block_pool *pool = pool_for(size);
    if (pool && cache_on()) {
        void *block = NULL;
        cache_acquire();
        for (int i = 0; i < pool->nslots && !block; i++)
            if (pool->slots[i].block && pool->slots[i].size == size) {
                block = pool->slots[i].block;
                pool->slots[i].block = NULL;
                pool->total -= size;
            }
        cache_release();
        if (block)
            return block;
    }
    m->system_allocations++;
    return size >= HUGE_PAGE && huge_pages_on() ? huge_alloc(size)
                                                : malloc(size);
}

/* Keeps a small block of class c on this thread's lists, or says no. */
static bool small_keep(void *block, int c)
{
    small_lists *l = &this_thread()->small;
    size_t bytes = (size_t)(c + 1) * SMALL_GRAIN;
    if (l->count[c] >= SMALL_PER_CLASS ||
        l->total + bytes > SMALL_MAX_TOTAL || !small_on(l))
        return false;
    if (!l->registered) {
        pthread_once(&small_once, small_setup);
        if (!small_key_made || pthread_setspecific(small_key, l) != 0)
            return false; // nothing would free the lists at thread exit
        l->registered = true;
    }
    small_block *b = block;
    b->next = l->head[c];
    l->head[c] = b;
    l->count[c]++;
    l->total += bytes;
    return true;
}

void tg_block_free(void *block, size_t size)
{
    int c = CACHE_ON ? small_class(size) : -1;
    if (c >= 0) {
        if (!block || !small_keep(block, c))
            free(block);
        return;
    }
    block_pool *pool = pool_for(size);
    if (block && pool && cache_on()) {
        /* The newest block stays: a loop that moved on to other shapes
         * must not find the cache full of the old ones. The oldest go
         * until the new one fits. */
        cached_block evicted[MID_SLOTS > CACHE_SLOTS ? MID_SLOTS
                                                     : CACHE_SLOTS];
        int nevicted = 0;
        bool kept = false;
        cache_acquire();
        while (size <= pool->max_total) {
            int free_slot = -1, oldest = -1;
            for (int i = 0; i < pool->nslots; i++) {
                cached_block *c = &pool->slots[i];
                if (!c->block)
                    free_slot = i;
                else if (oldest < 0 || c->age < pool->slots[oldest].age)
                    oldest = i;
            }
            if (free_slot >= 0 && pool->total + size <= pool->max_total) {
                cached_block *c = &pool->slots[free_slot];
                c->block = block;
                c->size = size;
                c->age = ++pool->clock;
                pool->total += size;
                kept = true;
                break;
            }
            evicted[nevicted++] = pool->slots[oldest];
            pool->total -= pool->slots[oldest].size;
            pool->slots[oldest].block = NULL;
        }
        cache_release();
        for (int i = 0; i < nevicted; i++)
            system_free(evicted[i].block, evicted[i].size);
        if (kept)
            return;
    }
    system_free(block, size);
}

void tg_empty_cache(void)
{
    small_drain(&this_thread()->small); // this thread's small blocks
    enum { ALL = CACHE_SLOTS + MID_SLOTS };
    cached_block kept[ALL];
    int n = 0;
    cache_acquire(); // take the blocks out; free them outside the lock
    block_pool *pools[] = {&large_pool, &mid_pool};
    for (int p = 0; p < 2; p++) {
        for (int i = 0; i < pools[p]->nslots; i++) {
            kept[n++] = pools[p]->slots[i];
            pools[p]->slots[i].block = NULL;
        }
        pools[p]->total = 0;
    }
    cache_release();
    for (int i = 0; i < n; i++)
        system_free(kept[i].block, kept[i].size);
}
