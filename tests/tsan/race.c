/*
 * tests/tsan/race.c - a data race on purpose, so that the ThreadSanitizer
 * run is seen to fail when the library is used unsafely: two threads draw
 * at the same time from one tg_generator, which tensor/tensor.h documents
 * as not thread-safe (each thread must have its own). Disabled: it runs
 * only when named (tsan_threads tsan/shared_generator_race), and
 * expect-race.sh passes only if ThreadSanitizer reports a race there.
 */
#include "../common.h"

#include <pthread.h>

static tg_generator *shared;
static pthread_barrier_t start;

static void *draw(void *arg)
{
    (void)arg;
    pthread_barrier_wait(&start);
    for (int i = 0; i < 200; i++)
        tg_release(tg_rand_gen(shared, TG_SHAPE(16), TG_FLOAT32));
    return NULL;
}

Test(tsan, shared_generator_race, .init = tg_test_setup, .disabled = true)
{
    shared = tg_generator_new(1);
    cr_assert_not_null(shared);
    cr_assert_eq(pthread_barrier_init(&start, NULL, 2), 0);
    pthread_t a, b;
    cr_assert_eq(pthread_create(&a, NULL, draw, NULL), 0);
    cr_assert_eq(pthread_create(&b, NULL, draw, NULL), 0);
    pthread_join(a, NULL);
    pthread_join(b, NULL);
    pthread_barrier_destroy(&start);
    tg_generator_free(shared);
    tg_test_teardown();
}
