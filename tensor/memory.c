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

#include <stdlib.h>

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
