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
#include "internal.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

/* Allocations left before the hook fails them; < 0: hook off. */
static _Thread_local int64_t allocations_left = -1;
/* Allocations the hook failed since it was last set. */
static _Thread_local int64_t allocations_failed;

int64_t tg_fail_allocations_after(int64_t n)
{
    int64_t failed = allocations_failed;
    allocations_left = n < 0 ? -1 : n;
    allocations_failed = 0;
    return failed;
}

/* True when the hook says this allocation must fail. */
static bool injected_failure(void)
{
    if (allocations_left < 0)
        return false;
    if (allocations_left > 0) {
        allocations_left--;
        return false;
    }
    allocations_failed++;
    return true;
}

void *tg_malloc(size_t size)
{
    return injected_failure() ? NULL : malloc(size);
}

void *tg_calloc(size_t count, size_t size)
{
    return injected_failure() ? NULL : calloc(count, size);
}

void *tg_realloc(void *p, size_t size)
{
    return injected_failure() ? NULL : realloc(p, size);
}

void *tg_aligned_alloc(size_t alignment, size_t size)
{
    return injected_failure() ? NULL : aligned_alloc(alignment, size);
}

/* ------------------------------------------------- large-block cache */

/* Freed blocks of CACHE_MIN bytes or more are kept (CACHE_SLOTS of them,
 * CACHE_MAX_TOTAL bytes at most) and handed out again for a request of
 * exactly their size. Without it glibc gives a freed multi-megabyte block
 * back to the kernel and the next one of the same size faults in and
 * zeroes every page again: a training loop or a benchmark repeating one
 * shape paid that on every step (LayerNorm on (4096, 768): twice the
 * kernel's own time). Sanitizer builds keep no blocks, so a use after free
 * is still caught. */
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

/* TG_BLOCK_CACHE=0 turns the cache off: -1 until read, then 0 or 1. Two
 * threads reading it at once read the same value. */
static atomic_int cache_setting = -1;

static bool cache_on(void)
{
    if (!CACHE_ON)
        return false;
    int v = atomic_load_explicit(&cache_setting, memory_order_relaxed);
    if (v < 0) {
        static const char *const names[] = {"0", "1"};
        v = tg_env_choice(TG_BLOCK_CACHE, names, 2, 1,
                          "the block cache stays on");
        atomic_store_explicit(&cache_setting, v, memory_order_relaxed);
    }
    return v;
}

static struct {
    void *block;
    size_t size;
    uint64_t age; // cache_clock when kept: the smallest is the oldest
} cache[CACHE_SLOTS];
static uint64_t cache_clock;
static size_t cache_total; // bytes in cache[]
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

void *tg_block_alloc(size_t size)
{
    if (injected_failure())
        return NULL;
    if (size >= CACHE_MIN && cache_on()) {
        void *block = NULL;
        cache_acquire();
        for (int i = 0; i < CACHE_SLOTS && !block; i++)
            if (cache[i].block && cache[i].size == size) {
                block = cache[i].block;
                cache[i].block = NULL;
                cache_total -= size;
            }
        cache_release();
        if (block)
            return block;
    }
    return malloc(size);
}

void tg_block_free(void *block, size_t size)
{
    if (block && size >= CACHE_MIN && cache_on()) {
        /* The newest block stays: a loop that moved on to other shapes
         * must not find the cache full of the old ones. The oldest go
         * until the new one fits. */
        void *evicted[CACHE_SLOTS];
        int nevicted = 0;
        bool kept = false;
        cache_acquire();
        while (size <= CACHE_MAX_TOTAL) {
            int free_slot = -1, oldest = -1;
            for (int i = 0; i < CACHE_SLOTS; i++) {
                if (!cache[i].block)
                    free_slot = i;
                else if (oldest < 0 || cache[i].age < cache[oldest].age)
                    oldest = i;
            }
            if (free_slot >= 0 && cache_total + size <= CACHE_MAX_TOTAL) {
                cache[free_slot].block = block;
                cache[free_slot].size = size;
                cache[free_slot].age = ++cache_clock;
                cache_total += size;
                kept = true;
                break;
            }
            evicted[nevicted++] = cache[oldest].block;
            cache_total -= cache[oldest].size;
            cache[oldest].block = NULL;
        }
        cache_release();
        for (int i = 0; i < nevicted; i++)
            free(evicted[i]);
        if (kept)
            return;
    }
    free(block);
}

void tg_empty_cache(void)
{
    void *kept[CACHE_SLOTS];
    cache_acquire(); // take the blocks out; free them outside the lock
    for (int i = 0; i < CACHE_SLOTS; i++) {
        kept[i] = cache[i].block;
        cache[i].block = NULL;
    }
    cache_total = 0;
    cache_release();
    for (int i = 0; i < CACHE_SLOTS; i++)
        free(kept[i]);
}
