/*
 * tests/reliability/test_free_lists.c - the per-thread free lists of small
 * blocks (tensor/memory.c): a training loop in its steady state makes no
 * call to malloc for its tensors, tape nodes and views, and nothing about
 * the counts or the debug mode changes.
 *
 * What it asserts:
 *  - after a warm-up, 100 steps of a small MLP (Linear, ReLU, Linear,
 *    ReLU, Linear, cross-entropy, backward, SGD) make no call to the
 *    system allocator (tg_system_allocations() does not move);
 *  - the counter counts: a live set larger than the lists keep (200
 *    (32, 32) tensors made, released, made again) does call malloc, and
 *    the same loop in the debug mode, which bypasses the lists, does too;
 *  - tg_live_tensors() stays exact when tensors made on one thread are
 *    released on another (whose lists then hold the blocks, and free them
 *    when it ends);
 *  - a tensor released in the debug mode after the lists were warm is
 *    still reported when used (its header is never on a list).
 *
 * The lists are off in sanitizer builds and with TG_BLOCK_CACHE=0 (the
 * valgrind setup): there the steady-state test is skipped, as nothing is
 * kept on purpose. Not here: the large-block cache (nn/test_steady_faults).
 */
#include "../common.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define LISTS_BUILT 0
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define LISTS_BUILT 0
#endif
#endif
#ifndef LISTS_BUILT
#define LISTS_BUILT 1
#endif

static bool lists_on(void)
{
    const char *s = getenv(TG_BLOCK_CACHE);
    const char *d = getenv(TG_DEBUG);
    return LISTS_BUILT && !(s && strcmp(s, "0") == 0) &&
           !(d && strcmp(d, "1") == 0);
}

/* ------------------------------------------------------ a training loop */

typedef struct mlp_run {
    tg_module *mlp;
    tg_optimizer *opt;
    tg_tensor *x, *y;
} mlp_run;

static mlp_run mlp_run_new(tg_norm_kind norm)
{
    mlp_run r;
    tg_manual_seed(0);
    r.mlp = tg_mlp_new(2, TG_SHAPE(32, 32), 3, norm, TG_ACT_RELU);
    cr_assert(r.mlp, "%s", tg_last_error());
    tg_sgd_config c = {.lr = 0.1};
    r.opt = tg_sgd_new(r.mlp, &c);
    r.x = tg_randn(TG_SHAPE(32, 2), TG_FLOAT32);
    r.y = tg_randint(0, 3, TG_SHAPE(32));
    cr_assert(r.opt && r.x && r.y, "%s", tg_last_error());
    return r;
}

static void mlp_run_steps(mlp_run *r, int steps)
{
    for (int i = 0; i < steps; i++) {
        tg_optimizer_zero_grad(r->opt);
        tg_tensor *logits = tg_module_forward(r->mlp, r->x);
        tg_tensor *loss = tg_cross_entropy(logits, r->y, TG_REDUCTION_MEAN);
        cr_assert(loss && tg_backward(loss) == 0 &&
                      tg_optimizer_step(r->opt) == 0,
                  "%s", tg_last_error());
        tg_release(logits);
        tg_release(loss);
    }
}

static void mlp_run_free(mlp_run *r)
{
    tg_optimizer_free(r->opt);
    tg_module_free(r->mlp);
    tg_release(r->x);
    tg_release(r->y);
}

/* System allocator calls of `steps` steps, after a warm-up of 10. */
static int64_t steady_allocations_with(tg_norm_kind norm, int steps)
{
    mlp_run r = mlp_run_new(norm);
    mlp_run_steps(&r, 10);
    int64_t before = tg_system_allocations();
    mlp_run_steps(&r, steps);
    int64_t made = tg_system_allocations() - before;
    mlp_run_free(&r);
    return made;
}

static int64_t steady_allocations(int steps)
{
    return steady_allocations_with(TG_NORM_NONE, steps);
}

TG_TEST(free_lists, steady_training_calls_no_malloc)
{
    if (!lists_on())
        cr_skip_test("the free lists are off (sanitizer build, "
                     "TG_BLOCK_CACHE=0 or TG_DEBUG=1)");
    int64_t made = steady_allocations(100);
    cr_assert_eq(made, 0,
                 "100 steady steps called the system allocator %lld times",
                 (long long)made);
}

/* With LayerNorm (the bench's tiny MLP): its forward and backward
 * scratch and the backward's dw and db sums come from the lists too. */
TG_TEST(free_lists, steady_layer_norm_training_calls_no_malloc)
{
    if (!lists_on())
        cr_skip_test("the free lists are off (sanitizer build, "
                     "TG_BLOCK_CACHE=0 or TG_DEBUG=1)");
    int64_t made = steady_allocations_with(TG_NORM_LAYER, 100);
    cr_assert_eq(made, 0,
                 "100 steady LayerNorm steps called the system allocator "
                 "%lld times",
                 (long long)made);
}

/* The control: the same loop with the lists bypassed (the debug mode)
 * calls malloc on every step, so the count above could have failed. */
TG_TEST(free_lists, debug_mode_bypasses_the_lists)
{
    tg_set_debug(true);
    int64_t made = steady_allocations(10);
    tg_set_debug(false);
    cr_assert_gt(made, 10 * 20,
                 "10 steps in the debug mode made %lld allocations",
                 (long long)made);
}

/* The other control: the lists are bounded. 200 tensors of (32, 32)
 * float32 (about 4.3 KiB each with their headers) are more than one class
 * keeps, so making them again calls malloc; 20 are not. */
static int64_t remake_allocations(int n)
{
    tg_tensor *t[200];
    for (int round = 0; round < 2; round++) {
        for (int i = 0; i < n; i++)
            cr_assert(t[i] = tg_zeros(TG_SHAPE(32, 32), TG_FLOAT32));
        for (int i = 0; i < n; i++)
            tg_release(t[i]);
    }
    int64_t before = tg_system_allocations();
    for (int i = 0; i < n; i++)
        cr_assert(t[i] = tg_zeros(TG_SHAPE(32, 32), TG_FLOAT32));
    int64_t made = tg_system_allocations() - before;
    for (int i = 0; i < n; i++)
        tg_release(t[i]);
    return made;
}

TG_TEST(free_lists, bounded)
{
    int64_t many = remake_allocations(200);
    cr_assert_geq(many, 200 - 64, "200 tensors made again: %lld mallocs",
                  (long long)many);
    if (lists_on())
        cr_assert_eq(remake_allocations(20), 0);
}

/* ------------------------------------------------- across two threads */

enum { HANDED = 1000 };

static void *release_all(void *arg)
{
    tg_tensor **t = arg;
    for (int i = 0; i < HANDED; i++)
        tg_release(t[i]);
    /* Made and released on this thread: these blocks come from and go
     * back to this thread's lists, which it frees when it ends. */
    for (int i = 0; i < HANDED; i++)
        tg_release(tg_zeros(TG_SHAPE(4, 4), TG_FLOAT32));
    return NULL;
}

TG_TEST(free_lists, live_count_exact_across_threads)
{
    int64_t before = tg_live_tensors();
    static tg_tensor *t[HANDED];
    for (int i = 0; i < HANDED; i++) {
        /* Storage blocks, and views (headers of their own) of them. */
        tg_tensor *x = tg_ones(TG_SHAPE(4, 4), TG_FLOAT32);
        t[i] = i % 2 ? tg_transpose(x, 0, 1) : tg_retain(x);
        tg_release(x);
        cr_assert(t[i]);
    }
    cr_assert_eq(tg_live_tensors(), before + HANDED);
    pthread_t th;
    cr_assert_eq(pthread_create(&th, NULL, release_all, t), 0);
    cr_assert_eq(pthread_join(th, NULL), 0);
    cr_assert_eq(tg_live_tensors(), before,
                 "%lld tensors alive after the other thread released them",
                 (long long)(tg_live_tensors() - before));
    cr_assert_eq(tg_live_storages(), 0);
}

/* --------------------------------------------------------- debug mode */

/* Warm lists, then the debug mode on: a tensor used after its release is
 * reported (and the process aborts), in a child. */
TG_TEST(free_lists, debug_mode_still_catches_use_after_release)
{
    mlp_run r = mlp_run_new(TG_NORM_NONE);
    mlp_run_steps(&r, 5);
    mlp_run_free(&r);
    fflush(NULL);
    pid_t pid = fork();
    cr_assert(pid >= 0);
    if (pid == 0) {
        if (!freopen("/dev/null", "w", stderr)) // the report is expected
            _exit(2);
        tg_set_debug(true);
        tg_tensor *a = tg_ones(TG_SHAPE(32, 32), TG_FLOAT32);
        tg_release(a);
        tg_tensor *b = tg_ones(TG_SHAPE(32, 32), TG_FLOAT32); // same class
        tg_release(tg_exp(a));                                // aborts
        tg_release(b);
        _exit(0);
    }
    int status;
    cr_assert_eq(waitpid(pid, &status, 0), pid);
    cr_assert(WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT,
              "the use after release was not reported");
}
