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

#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

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
/* Whether OMP_DYNAMIC is in the environment (read with the count): then
 * OpenMP's rule sizes the teams, not tg_team_threads. */
static atomic_bool omp_dynamic_set = false;

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
    atomic_store(&omp_dynamic_set, getenv("OMP_DYNAMIC") != NULL);
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

static bool cpu_pressure_known(void);

static void choose_dynamic_teams(void)
{
    /* Where the kernel reports CPU pressure, tg_team_threads decides
     * (below) and OpenMP's own rule stays off. */
    int want = !atomic_load_explicit(&threads_asked, memory_order_relaxed) &&
               !cpu_pressure_known();
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
    return tg_team_threads();
}

/* ------------------------------------------------------ a busy machine */

/*
 * A team of n threads on a machine where other programs want the CPUs
 * waits, at the end of every loop, for whichever thread the scheduler
 * left out; a 0.2 s training run took 2.8 times as long beside one busy
 * process (docs/performance.md, "Threads on a shared machine"). OpenMP's
 * dynamic teams go by the 15-minute load average, which is too slow for
 * load that starts now and too slow to forget load that has stopped.
 *
 * Linux says how busy the CPUs are now: /proc/pressure/cpu ("some ...
 * total=US") counts the microseconds during which at least one runnable
 * task waited for a CPU. When the program did not ask for a thread count,
 * tg_team_threads reads that count at most every BUSY_WINDOW_MIN_NS, and
 * if tasks waited for more than 1 / BUSY_SHARE of the time since the last
 * reading in BUSY_STRIKES windows running, teams are one thread for a
 * back-off (BUSY_BACKOFF_MIN_NS, doubled while the machine stays busy,
 * up to BUSY_BACKOFF_MAX_NS). When it ends, teams get their threads again
 * and the next windows tell whether the machine is still busy. A reading
 * older than BUSY_WINDOW_MAX_NS says nothing about now: it is replaced,
 * not judged. One busy window is not enough: a program's own new threads
 * wait a few milliseconds for the scheduler to move them to an idle CPU
 * (measured here: 4-15 ms of waiting in the first 10 ms of a run on an
 * idle 2-CPU machine, in one start of two), and two threads busy on two
 * CPUs leave other tasks waiting for up to a fifth of a window (the 99th
 * percentile of 10 ms windows here), while another busy program waits
 * about half of every window. Results do not change with the team size
 * (see the top of this file).
 */
#define BUSY_WINDOW_MIN_NS (INT64_C(10) * 1000000)
#define BUSY_WINDOW_MAX_NS (INT64_C(100) * 1000000)
#define BUSY_SHARE 4
#define BUSY_STRIKES 2
#define BUSY_BACKOFF_MIN_NS (INT64_C(250) * 1000000)
#define BUSY_BACKOFF_MAX_NS (INT64_C(4000) * 1000000)

bool tg_busy_step(tg_busy_state *s, int64_t now_ns,
                  bool (*read_stall)(uint64_t *us))
{
    if (now_ns < s->single_until_ns)
        return false;
    int64_t elapsed = now_ns - s->window_start_ns;
    if (s->window_start_ns != 0 && elapsed < BUSY_WINDOW_MIN_NS)
        return true;
    uint64_t stall_us;
    if (!read_stall(&stall_us))
        return true;
    uint64_t since = s->stall_at_start_us;
    bool stale = s->window_start_ns == 0 || elapsed > BUSY_WINDOW_MAX_NS ||
                 stall_us < since;
    s->window_start_ns = now_ns;
    s->stall_at_start_us = stall_us;
    if (stale || (int64_t)(stall_us - since) * 1000 * BUSY_SHARE <= elapsed) {
        s->strikes = 0; // the run of busy windows is broken either way
        if (!stale)
            s->backoff_ns = BUSY_BACKOFF_MIN_NS;
        return true;
    }
    if (++s->strikes < BUSY_STRIKES)
        return true;
    s->strikes = 0;
    if (s->backoff_ns < BUSY_BACKOFF_MIN_NS)
        s->backoff_ns = BUSY_BACKOFF_MIN_NS;
    s->single_until_ns = now_ns + s->backoff_ns;
    s->backoff_ns = s->backoff_ns * 2 > BUSY_BACKOFF_MAX_NS
                        ? BUSY_BACKOFF_MAX_NS
                        : s->backoff_ns * 2;
    return false;
}

/* The pressure file's "some" total, in microseconds; false when the
 * kernel has none (before Linux 4.20, or PSI turned off). */
static bool read_cpu_stall(uint64_t *us)
{
    int fd = open("/proc/pressure/cpu", O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return false;
    char buf[256];
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0)
        return false;
    buf[n] = '\0';
    const char *t = strstr(buf, "total=");
    if (strncmp(buf, "some ", 5) != 0 || !t)
        return false;
    *us = strtoull(t + 6, NULL, 10);
    return true;
}

/* Whether the pressure file can be read: -1 not tried yet. */
static atomic_int cpu_pressure = -1;

static bool cpu_pressure_known(void)
{
    int known = atomic_load_explicit(&cpu_pressure, memory_order_relaxed);
    if (known < 0) {
        uint64_t us;
        known = read_cpu_stall(&us);
        atomic_store(&cpu_pressure, known);
    }
    return known;
}

static int64_t monotonic_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

/* The process's state, and a lock a thread only tries: one that finds it
 * taken goes by the last answer. */
static tg_busy_state busy;
static atomic_flag busy_lock = ATOMIC_FLAG_INIT;
static atomic_bool busy_last = true;

int tg_team_threads(void)
{
    int n = tg_get_num_threads();
    if (n == 1 || atomic_load_explicit(&threads_asked, memory_order_relaxed) ||
        atomic_load_explicit(&omp_dynamic_set, memory_order_relaxed) ||
        !cpu_pressure_known())
        return n;
    if (atomic_flag_test_and_set_explicit(&busy_lock, memory_order_acquire))
        return atomic_load_explicit(&busy_last, memory_order_relaxed) ? n : 1;
    bool ok = tg_busy_step(&busy, monotonic_ns(), read_cpu_stall);
    atomic_store_explicit(&busy_last, ok, memory_order_relaxed);
    atomic_flag_clear_explicit(&busy_lock, memory_order_release);
    return ok ? n : 1;
}
