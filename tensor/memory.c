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

void *tg_block_alloc(size_t size)
{
    if (injected_failure())
        return NULL;
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
    return malloc(size);
}

void tg_block_free(void *block, size_t size)
{
    block_pool *pool = pool_for(size);
    if (block && pool && cache_on()) {
        /* The newest block stays: a loop that moved on to other shapes
         * must not find the cache full of the old ones. The oldest go
         * until the new one fits. */
        void *evicted[MID_SLOTS > CACHE_SLOTS ? MID_SLOTS : CACHE_SLOTS];
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
            evicted[nevicted++] = pool->slots[oldest].block;
            pool->total -= pool->slots[oldest].size;
            pool->slots[oldest].block = NULL;
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
    enum { ALL = CACHE_SLOTS + MID_SLOTS };
    void *kept[ALL];
    int n = 0;
    cache_acquire(); // take the blocks out; free them outside the lock
    block_pool *pools[] = {&large_pool, &mid_pool};
    for (int p = 0; p < 2; p++) {
        for (int i = 0; i < pools[p]->nslots; i++) {
            kept[n++] = pools[p]->slots[i].block;
            pools[p]->slots[i].block = NULL;
        }
        pools[p]->total = 0;
    }
    cache_release();
    for (int i = 0; i < n; i++)
        free(kept[i]);
}
