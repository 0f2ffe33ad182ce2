/*
 * tensor/parallel.c - which kernels run (fast, portable, reference) and on
 * how many threads.
 *
 * The kernel choice is per thread, like grad mode: a test can run the
 * reference kernels on one thread while another trains. The thread count
 * is one setting for the process, as torch.set_num_threads. Both start
 * from the environment (TG_KERNELS, TG_NUM_THREADS), read at first use.
 * This file is not a thread pool: the parallel loops are OpenMP's.
 */
#include "internal.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef _OPENMP
#include <omp.h>
#endif
#ifdef TG_HAVE_OPENBLAS
#include <cblas.h>
#endif

/* ------------------------------------------------------------- kernels */

/* This thread's choice: -1 until first used (then the environment
 * decides), else a tg_kernels value. */
static _Thread_local int kernels_mode = -1;

/* TG_KERNELS, read once per process (-1 until read). Two threads reading
 * it at once read the same value, so the race is harmless. */
static atomic_int env_kernels = -1;

static int kernels_from_env(void)
{
    int v = atomic_load(&env_kernels);
    if (v >= 0)
        return v;
    static const char *const names[] = {"fast", "portable", "reference"};
    v = tg_env_choice(TG_KERNELS, names, 3, TG_KERNELS_FAST,
                      "using the fast kernels");
    atomic_store(&env_kernels, v);
    return v;
}

tg_kernels tg_get_kernels(void)
{
    if (kernels_mode < 0)
        kernels_mode = kernels_from_env();
    return (tg_kernels)kernels_mode;
}

int tg_set_kernels(tg_kernels kernels)
{
    if ((int)kernels < TG_KERNELS_FAST || (int)kernels > TG_KERNELS_REFERENCE) {
        tg_error("tg_set_kernels",
                 "%d is not a kernel choice\n"
                 "  rule: kernels is TG_KERNELS_FAST, TG_KERNELS_PORTABLE "
                 "or TG_KERNELS_REFERENCE\n"
                 "  hint: TG_KERNELS_REFERENCE runs the plain loops the "
                 "fast kernels are tested against",
                 (int)kernels);
        return -1;
    }
    kernels_mode = (int)kernels;
    return 0;
}

bool tg_use_blas(void)
{
#ifdef TG_HAVE_OPENBLAS
    return tg_get_kernels() == TG_KERNELS_FAST;
#else
    return false;
#endif
}

/* ------------------------------------------------------------- threads */

/* The process's thread count: 0 until first used (then the environment
 * decides). */
static atomic_int num_threads = 0;
/* Whether the count was asked for (TG_NUM_THREADS, OMP_NUM_THREADS or
 * tg_set_num_threads): then every team has that many threads. Otherwise
 * the count is the CPUs OpenMP sees, and a team may get fewer on a loaded
 * machine (choose_dynamic_teams). */
static atomic_bool threads_asked = false;

static void apply_threads(int n)
{
#ifdef TG_HAVE_OPENBLAS
    openblas_set_num_threads(n);
#else
    (void)n;
#endif
}

static int threads_from_env(void)
{
    int n = 1;
#ifdef _OPENMP
    n = omp_get_max_threads();
#endif
    const char *omp = getenv("OMP_NUM_THREADS");
    if (omp && *omp)
        atomic_store(&threads_asked, true);
    const char *s = getenv(TG_NUM_THREADS);
    if (s && *s) {
        char *end;
        long v = strtol(s, &end, 10);
        if (*end == '\0' && v >= 1 && v <= 4096) {
            n = (int)v;
            atomic_store(&threads_asked, true);
        } else
            fprintf(stderr,
                    "tapegrad: %s=\"%s\" is not understood; using %d "
                    "thread%s\n"
                    "  rule: %s is a whole number >= 1\n",
                    TG_NUM_THREADS, s, n, n == 1 ? "" : "s",
                    TG_NUM_THREADS);
    }
    return n;
}

#ifdef _OPENMP
/* OpenMP's dynamic team size, chosen by each thread that starts a team
 * (OpenMP keeps the setting per thread): on when the thread count was not
 * asked for, so that libgomp gives a team at most the CPUs its load
 * average leaves free and a loop does not wait at its end for a thread
 * that shares a CPU with another busy process (docs/performance.md,
 * "Threads on a shared machine"); off when it was, so a program that
 * asked for n threads gets n. OMP_DYNAMIC in the environment, either way,
 * overrides the choice. This thread's last choice: -1 none yet. */
static _Thread_local int dynamic_chosen = -1;

static void choose_dynamic_teams(void)
{
    int want = !atomic_load_explicit(&threads_asked, memory_order_relaxed);
    if (dynamic_chosen == want)
        return;
    dynamic_chosen = want;
    if (!getenv("OMP_DYNAMIC"))
        omp_set_dynamic(want);
}
#endif

int tg_get_num_threads(void)
{
    int n = atomic_load(&num_threads);
    if (n == 0) {
        n = threads_from_env();
        int expected = 0;
        if (atomic_compare_exchange_strong(&num_threads, &expected, n))
            apply_threads(n);
        else
            n = expected; // tg_set_num_threads got there first
    }
#ifdef _OPENMP
    /* every parallel loop asks here first, on the thread that starts the
     * team */
    if (n > 1)
        choose_dynamic_teams();
    return n;
#else
    return 1;
#endif
}

int tg_set_num_threads(int n)
{
    if (n < 1) {
        tg_error("tg_set_num_threads",
                 "n is %d\n"
                 "  rule: the kernels run on n >= 1 threads\n"
                 "  hint: 1 runs everything on the calling thread",
                 n);
        return -1;
    }
    atomic_store(&threads_asked, true);
    atomic_store(&num_threads, n);
    apply_threads(n);
    return 0;
}

void tg_forget_num_threads(void)
{
    atomic_store(&threads_asked, false);
    atomic_store(&num_threads, 0);
}

bool tg_dynamic_teams(void)
{
#ifdef _OPENMP
    return omp_get_dynamic() != 0;
#else
    return false;
#endif
}

int tg_parallel_threads(int64_t work)
{
    if (work < TG_PARALLEL_MIN_WORK)
        return 1;
    return tg_get_num_threads();
}
