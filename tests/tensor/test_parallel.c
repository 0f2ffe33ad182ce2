/*
 * tests/tensor/test_parallel.c - tg_set_kernels, tg_set_num_threads, the
 * environment variables TG_KERNELS and TG_NUM_THREADS, and
 * tg_parallel_threads; and the contiguous fast paths of the elementwise
 * apply, the gradient accumulation, sum/mean and the optimiser step,
 * compared bit for bit with their general paths.
 *
 * The environment is read once per process, at first use. So the
 * environment tests start this very test binary again (/proc/self/exe)
 * with the variable set and a filter that runs only the probe test below:
 * a fresh process whose first call to the library is the probe's, which
 * writes what it saw to a file and whose stderr goes to another. Not here:
 * the threaded kernels' results (tests/autograd/test_fast_*.c).
 */
#include "../common.h"

#include "tensor/internal.h"

#include <fcntl.h>
#include <math.h>
#include <pthread.h>
#include <spawn.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

/* ------------------------------------------------------------- kernels */

TG_TEST(parallel, kernels_set_and_get)
{
    tg_kernels before = tg_get_kernels();
    const tg_kernels all[] = {TG_KERNELS_REFERENCE, TG_KERNELS_PORTABLE,
                              TG_KERNELS_FAST};
    for (int i = 0; i < 3; i++) {
        cr_assert_eq(tg_set_kernels(all[i]), 0, "%s", tg_last_error());
        cr_assert_eq(tg_get_kernels(), all[i]);
    }
    tg_set_kernels(before);
}

/* Values outside the enum are refused with the catalogue's message and
 * change nothing. */
TG_TEST(parallel, kernels_invalid_refused)
{
    cr_assert_eq(tg_set_kernels(TG_KERNELS_PORTABLE), 0);
    const int bad[] = {-1, 3, 7};
    for (int i = 0; i < 3; i++) {
        tg_clear_error();
        cr_assert_eq(tg_set_kernels((tg_kernels)bad[i]), -1);
        cr_assert_eq(tg_get_kernels(), TG_KERNELS_PORTABLE);
        char want[64];
        snprintf(want, sizeof want, "tg_set_kernels: %d is not a kernel "
                                    "choice", bad[i]);
        tg_assert_error(want, "rule: ", "hint: ");
    }
    tg_set_kernels(TG_KERNELS_FAST);
}

typedef struct kernels_probe {
    tg_kernels set;  // what the thread sets first (-1: nothing)
    tg_kernels seen; // what it then reads
} kernels_probe;

static void *read_kernels(void *arg)
{
    kernels_probe *p = arg;
    if ((int)p->set >= 0)
        tg_set_kernels(p->set);
    p->seen = tg_get_kernels();
    return NULL;
}

static tg_kernels on_new_thread(tg_kernels set)
{
    kernels_probe p = {set, (tg_kernels)-1};
    pthread_t t;
    cr_assert_eq(pthread_create(&t, NULL, read_kernels, &p), 0);
    pthread_join(t, NULL);
    return p.seen;
}

/* The choice is per thread: a new thread starts from the environment's
 * value whatever this thread chose, and its own choice stays its own. */
TG_TEST(parallel, kernels_per_thread)
{
    tg_kernels start = on_new_thread((tg_kernels)-1);
    tg_kernels other = start == TG_KERNELS_REFERENCE ? TG_KERNELS_FAST
                                                     : TG_KERNELS_REFERENCE;
    cr_assert_eq(tg_set_kernels(other), 0);
    cr_assert_eq(on_new_thread((tg_kernels)-1), start,
                 "a new thread saw this thread's choice");
    cr_assert_eq(on_new_thread(TG_KERNELS_PORTABLE), TG_KERNELS_PORTABLE);
    cr_assert_eq(tg_get_kernels(), other,
                 "another thread's choice changed this thread's");
    tg_set_kernels(start);
}

/* ------------------------------------------------------------- threads */

/* The count is n with OpenMP and 1 without it, whatever n is. */
TG_TEST(parallel, num_threads_set_and_get)
{
    int before = tg_get_num_threads();
    cr_assert_geq(before, 1);
    cr_assert_eq(tg_set_num_threads(3), 0, "%s", tg_last_error());
    bool openmp = tg_get_num_threads() == 3;
    if (!openmp)
        cr_assert_eq(tg_get_num_threads(), 1);
    for (int n = 1; n <= 4; n++) {
        cr_assert_eq(tg_set_num_threads(n), 0);
        cr_assert_eq(tg_get_num_threads(), openmp ? n : 1);
    }
    tg_set_num_threads(before);
}

TG_TEST(parallel, num_threads_invalid_refused)
{
    cr_assert_eq(tg_set_num_threads(2), 0);
    int before = tg_get_num_threads();
    const int bad[] = {0, -1, -1000};
    for (int i = 0; i < 3; i++) {
        tg_clear_error();
        cr_assert_eq(tg_set_num_threads(bad[i]), -1);
        cr_assert_eq(tg_get_num_threads(), before);
        char want[48];
        snprintf(want, sizeof want, "tg_set_num_threads: n is %d", bad[i]);
        tg_assert_error(want, "rule: ", "hint: ");
    }
}

static void *read_threads(void *arg)
{
    *(int *)arg = tg_get_num_threads();
    return NULL;
}

/* One setting for the process: another thread reads what this one set. */
TG_TEST(parallel, num_threads_process_wide)
{
    int before = tg_get_num_threads();
    for (int n = 1; n <= 2; n++) {
        cr_assert_eq(tg_set_num_threads(n), 0);
        int seen = 0;
        pthread_t t;
        cr_assert_eq(pthread_create(&t, NULL, read_threads, &seen), 0);
        pthread_join(t, NULL);
        cr_assert_eq(seen, tg_get_num_threads());
    }
    tg_set_num_threads(before);
}

/* Small work stays on the calling thread; large work gets the setting. */
TG_TEST(parallel, parallel_threads_threshold)
{
    int before = tg_get_num_threads();
    cr_assert_eq(tg_set_num_threads(2), 0);
    int n = tg_get_num_threads();
    cr_assert_eq(tg_parallel_threads(0), 1);
    cr_assert_eq(tg_parallel_threads(1), 1);
    cr_assert_eq(tg_parallel_threads(TG_PARALLEL_MIN_WORK - 1), 1);
    cr_assert_eq(tg_parallel_threads(TG_PARALLEL_MIN_WORK), n);
    cr_assert_eq(tg_parallel_threads(INT64_C(1) << 40), n);
    cr_assert_eq(tg_set_num_threads(1), 0);
    cr_assert_eq(tg_parallel_threads(INT64_C(1) << 40), 1);
    tg_set_num_threads(before);
}

/* Dynamic teams: on when no thread count was asked for (neither
 * TG_NUM_THREADS, OMP_NUM_THREADS nor tg_set_num_threads) and the count
 * is above 1, OMP_DYNAMIC is not set and the kernel gives no CPU
 * pressure; off when a count was asked for,
 * when OMP_DYNAMIC says false (the test setup's), or at one thread. Each
 * case on a new thread, as OpenMP keeps the setting per thread. */
typedef struct dyn_probe {
    int threads;
    bool dynamic;
} dyn_probe;

static void *probe_dynamic(void *arg)
{
    dyn_probe *p = arg;
    p->threads = tg_get_num_threads();
    p->dynamic = tg_dynamic_teams();
    return NULL;
}

/* n > 0: tg_set_num_threads(n) first; 0: the count the environment
 * gives. */
static dyn_probe dynamic_on_new_thread(int n)
{
    dyn_probe p = {0, false};
    if (n > 0)
        cr_assert_eq(tg_set_num_threads(n), 0);
    pthread_t t;
    cr_assert_eq(pthread_create(&t, NULL, probe_dynamic, &p), 0);
    pthread_join(t, NULL);
    return p;
}

/* Saves var's value and sets it (value NULL: unsets it). */
static char *swap_env(const char *var, const char *value)
{
    const char *old = getenv(var);
    char *saved = old ? strdup(old) : NULL;
    if (value)
        setenv(var, value, 1);
    else
        unsetenv(var);
    return saved;
}

static void restore_env(const char *var, char *saved)
{
    if (saved)
        setenv(var, saved, 1);
    else
        unsetenv(var);
    free(saved);
}

TG_TEST(parallel, dynamic_teams_chosen)
{
    int before = tg_get_num_threads();
    char *dyn = swap_env("OMP_DYNAMIC", NULL);
    char *tg = swap_env(TG_NUM_THREADS, NULL);
    char *omp = swap_env("OMP_NUM_THREADS", NULL);

    /* Nothing asked: the CPUs OpenMP sees, and dynamic teams when that is
     * more than one (libgomp read OMP_NUM_THREADS at start, so the count
     * may be 1 here; then there is no team to shrink). */
    tg_forget_num_threads();
    dyn_probe p = dynamic_on_new_thread(0);
    /* ... unless the kernel reports CPU pressure: then tg_team_threads
     * sizes the teams and OpenMP's rule stays off. */
    bool pressure = access("/proc/pressure/cpu", R_OK) == 0;
    cr_assert_eq(p.dynamic, p.threads > 1 && !pressure,
                 "no count asked, %d threads, pressure file %d: dynamic %d",
                 p.threads, pressure, p.dynamic);
    /* Asked for, by the program or the environment: fixed teams. */
    p = dynamic_on_new_thread(2);
    cr_assert_eq(p.threads, 2);
    cr_assert(!p.dynamic, "tg_set_num_threads(2), yet dynamic teams");
    setenv(TG_NUM_THREADS, "2", 1);
    tg_forget_num_threads();
    p = dynamic_on_new_thread(0);
    cr_assert(!p.dynamic, "TG_NUM_THREADS=2, yet dynamic teams");
    unsetenv(TG_NUM_THREADS);
    p = dynamic_on_new_thread(1);
    cr_assert(!p.dynamic, "1 thread: dynamic teams chosen");
    /* OMP_DYNAMIC overrides: false keeps a default count fixed. */
    setenv("OMP_DYNAMIC", "false", 1);
    tg_forget_num_threads();
    p = dynamic_on_new_thread(0);
    cr_assert(!p.dynamic, "OMP_DYNAMIC=false overridden");

    restore_env("OMP_NUM_THREADS", omp);
    restore_env(TG_NUM_THREADS, tg);
    restore_env("OMP_DYNAMIC", dyn);
    tg_set_num_threads(before);
}

/* ------------------------------------------------------ a busy machine */

/* The busy-machine rule (tg_busy_step) on a made-up clock and a made-up
 * CPU-wait count: fake_stall_us is what the reader says, fake_reads how
 * often it was asked. */
static uint64_t fake_stall_us;
static int fake_reads;
static bool fake_ok = true;

static bool fake_reader(uint64_t *us)
{
    fake_reads++;
    *us = fake_stall_us;
    return fake_ok;
}

#define MS (INT64_C(1000000)) /* nanoseconds */

TG_TEST(parallel, busy_rule_quiet_machine)
{
    tg_busy_state s = {0};
    fake_stall_us = 1000, fake_reads = 0, fake_ok = true;
    int64_t t = 5000 * MS;
    /* Teams keep their threads while nobody waits; the count is read
     * once per window (10 ms), not at every loop. */
    for (int i = 0; i < 100; i++, t += 1 * MS)
        cr_assert(tg_busy_step(&s, t, fake_reader), "quiet, step %d", i);
    cr_assert(fake_reads >= 9 && fake_reads <= 11, "%d reads in 100 ms",
              fake_reads);
    /* Waiting for a quarter of the window or less is still quiet. */
    t += 10 * MS;
    fake_stall_us += 2500;
    cr_assert(tg_busy_step(&s, t, fake_reader));
    /* No count to be had: nothing to go by, the threads stay. */
    fake_ok = false;
    fake_stall_us += 1000000;
    cr_assert(tg_busy_step(&s, t + 20 * MS, fake_reader));
    fake_ok = true;
}

TG_TEST(parallel, busy_rule_backs_off)
{
    tg_busy_state s = {0};
    fake_stall_us = 0, fake_reads = 0, fake_ok = true;
    int64_t t = 5000 * MS;
    cr_assert(tg_busy_step(&s, t, fake_reader)); /* the first reading */
    /* 10 ms later tasks have waited 6 ms: one busy window, still a team;
     * after a second one, one thread... */
    t += 10 * MS;
    fake_stall_us += 6000;
    cr_assert(tg_busy_step(&s, t, fake_reader), "one busy window backs off");
    t += 10 * MS;
    fake_stall_us += 6000;
    cr_assert_not(tg_busy_step(&s, t, fake_reader), "busy, yet a team");
    /* ... for 250 ms, without reading the count again. */
    int reads = fake_reads;
    fake_stall_us = 0; /* would be nonsense if it were read */
    for (int64_t d = 1; d < 250; d += 7)
        cr_assert_not(tg_busy_step(&s, t + d * MS, fake_reader),
                      "back-off over after %lld ms", (long long)d);
    cr_assert_eq(fake_reads, reads);
    fake_stall_us = 6000;
    /* Then a team again, to find out; a reading older than 100 ms is
     * not judged. */
    t += 250 * MS;
    cr_assert(tg_busy_step(&s, t, fake_reader));
    /* Still busy, two windows: the back-off doubles (500 ms). */
    t += 20 * MS;
    fake_stall_us += 15000;
    cr_assert(tg_busy_step(&s, t, fake_reader));
    t += 20 * MS;
    fake_stall_us += 15000;
    cr_assert_not(tg_busy_step(&s, t, fake_reader));
    cr_assert_not(tg_busy_step(&s, t + 499 * MS, fake_reader));
    cr_assert(tg_busy_step(&s, t + 500 * MS, fake_reader));
    /* Quiet again: teams stay, and the next back-off is 250 ms again. */
    t += 520 * MS;
    cr_assert(tg_busy_step(&s, t, fake_reader));
    for (int w = 0; w < 2; w++) {
        t += 20 * MS;
        fake_stall_us += 6000;
        cr_assert_eq(tg_busy_step(&s, t, fake_reader), w == 0);
    }
    cr_assert(tg_busy_step(&s, t + 250 * MS, fake_reader),
              "the back-off was not reset by the quiet window");
}

/* A burst of waiting in one window, between quiet ones (a new thread
 * waiting to be moved to an idle CPU), never backs off. */
TG_TEST(parallel, busy_rule_ignores_a_burst)
{
    tg_busy_state s = {0};
    fake_stall_us = 0, fake_reads = 0, fake_ok = true;
    int64_t t = 5000 * MS;
    cr_assert(tg_busy_step(&s, t, fake_reader));
    for (int w = 0; w < 20; w++) {
        t += 10 * MS;
        fake_stall_us += w % 2 == 0 ? 9000 : 100;
        cr_assert(tg_busy_step(&s, t, fake_reader), "window %d", w);
    }
}

/* A counter that went backwards (another kernel, a bad read) or a gap
 * longer than a window is a fresh start, not a verdict. */
TG_TEST(parallel, busy_rule_stale_readings)
{
    tg_busy_state s = {0};
    fake_stall_us = 50000, fake_reads = 0, fake_ok = true;
    int64_t t = 5000 * MS;
    cr_assert(tg_busy_step(&s, t, fake_reader));
    fake_stall_us += 90000; /* 90 ms of waiting, over 2 s */
    cr_assert(tg_busy_step(&s, t + 2000 * MS, fake_reader));
    fake_stall_us = 10;
    cr_assert(tg_busy_step(&s, t + 2020 * MS, fake_reader));
    /* A busy window, a gap of 2 s, another busy window: not two in a
     * row, so no back-off. */
    t += 3000 * MS;
    cr_assert(tg_busy_step(&s, t, fake_reader));
    fake_stall_us += 9000;
    cr_assert(tg_busy_step(&s, t + 10 * MS, fake_reader));
    fake_stall_us += 9000;
    cr_assert(tg_busy_step(&s, t + 2010 * MS, fake_reader));
    fake_stall_us += 9000;
    cr_assert(tg_busy_step(&s, t + 2020 * MS, fake_reader),
              "two busy windows 2 s apart counted as a run");
}

static atomic_bool spin_stop;

static void *spin(void *arg)
{
    (void)arg;
    volatile uint64_t x = 0;
    while (!atomic_load(&spin_stop))
        x++;
    return NULL;
}

/* The live rule: with no thread count asked for, threads that keep every
 * CPU busy make tg_team_threads answer 1 within a few windows; a count
 * that was asked for is kept whatever the load. Needs the kernel's CPU
 * pressure and more than one CPU for OpenMP. */
TG_TEST(parallel, team_threads_on_a_busy_machine)
{
    if (access("/proc/pressure/cpu", R_OK) != 0)
        cr_skip_test("no /proc/pressure/cpu: OpenMP's rule decides");
    int before = tg_get_num_threads();
    char *dyn = swap_env("OMP_DYNAMIC", NULL);
    char *tg = swap_env(TG_NUM_THREADS, NULL);
    char *omp = swap_env("OMP_NUM_THREADS", NULL);
    tg_forget_num_threads();
    int n = tg_get_num_threads();
    if (n < 2) {
        restore_env("OMP_NUM_THREADS", omp);
        restore_env(TG_NUM_THREADS, tg);
        restore_env("OMP_DYNAMIC", dyn);
        tg_set_num_threads(before);
        cr_skip_test("OpenMP sees one CPU: no team to shrink");
    }
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    enum { MAX_SPIN = 64 };
    int nspin = (int)(2 * cpus < MAX_SPIN ? 2 * cpus : MAX_SPIN);
    pthread_t th[MAX_SPIN];
    atomic_store(&spin_stop, false);
    for (int i = 0; i < nspin; i++)
        cr_assert_eq(pthread_create(&th[i], NULL, spin, NULL), 0);
    int seen = n;
    struct timespec nap = {0, 2 * 1000000};
    for (int i = 0; i < 500 && seen != 1; i++) {
        seen = tg_team_threads();
        nanosleep(&nap, NULL);
    }
    /* Asked for: kept, busy or not. */
    cr_assert_eq(tg_set_num_threads(n), 0);
    int asked = tg_team_threads();
    atomic_store(&spin_stop, true);
    for (int i = 0; i < nspin; i++)
        pthread_join(th[i], NULL);
    restore_env("OMP_NUM_THREADS", omp);
    restore_env(TG_NUM_THREADS, tg);
    restore_env("OMP_DYNAMIC", dyn);
    tg_set_num_threads(before);
    cr_assert_eq(seen, 1, "%d spinning threads on %ld CPUs for 1 s, yet "
                 "teams of %d", nspin, cpus, seen);
    cr_assert_eq(asked, n, "a count asked for was not kept: %d of %d",
                 asked, n);
}

/* --------------------------------------------------------- environment */

/* Run in a child process started by run_probe (TG_PARALLEL_PROBE names
 * the output file), else does nothing: its first library calls are the
 * first reads of the environment. */
Test(parallel, env_probe)
{
    const char *path = getenv("TG_PARALLEL_PROBE");
    if (!path)
        return;
    FILE *f = fopen(path, "w");
    cr_assert_not_null(f);
    /* Threads first, while TG_NUM_THREADS has not been read; then the
     * kernels of this thread and of a new one (whose first read also
     * comes from the environment). */
    int threads = tg_get_num_threads();
    int kernels = (int)tg_get_kernels();
    int other = (int)on_new_thread((tg_kernels)-1);
    fprintf(f, "%d %d %d\n", kernels, other, threads);
    fclose(f);
}

typedef struct probe_result {
    int kernels, kernels_other_thread, threads;
    char err[1024]; // what the child printed on stderr (Criterion's
                    // summary, and the library's warnings if any)
} probe_result;

static void read_file(const char *path, char *buf, size_t size)
{
    buf[0] = '\0';
    FILE *f = fopen(path, "r");
    if (!f)
        return;
    size_t n = fread(buf, 1, size - 1, f);
    buf[n] = '\0';
    fclose(f);
}

/* Starts this test binary again with var=value (value NULL: unset) and
 * runs only the probe. */
static void run_probe(const char *var, const char *value, probe_result *r)
{
    char out[] = "/tmp/tg_parallel_out_XXXXXX";
    char err[] = "/tmp/tg_parallel_err_XXXXXX";
    int fo = mkstemp(out), fe = mkstemp(err);
    cr_assert(fo >= 0 && fe >= 0);
    close(fo);

    /* The child's environment: ours without TG_KERNELS / TG_NUM_THREADS
     * (the other one must not leak in from the caller) and without the
     * variables that make a Criterion process a worker of this run's
     * sandbox, plus var. */
    size_t n = 0;
    while (environ[n])
        n++;
    char **env = calloc(n + 3, sizeof *env);
    cr_assert_not_null(env);
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        if (strncmp(environ[i], TG_KERNELS "=", strlen(TG_KERNELS) + 1) &&
            strncmp(environ[i], TG_NUM_THREADS "=",
                    strlen(TG_NUM_THREADS) + 1) &&
            strncmp(environ[i], "TG_PARALLEL_PROBE=", 18) &&
            strncmp(environ[i], "BXFI_", 5)) // Criterion's sandbox: a
                                              // worker would attach to it
            env[k++] = environ[i];
    char setting[256], probe[128];
    if (value) {
        snprintf(setting, sizeof setting, "%s=%s", var, value);
        env[k++] = setting;
    }
    snprintf(probe, sizeof probe, "TG_PARALLEL_PROBE=%s", out);
    env[k++] = probe;
    env[k] = NULL;

    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, fe, STDERR_FILENO);
    posix_spawn_file_actions_addopen(&fa, STDOUT_FILENO, "/dev/null",
                                     O_WRONLY, 0);
    char *argv[] = {"test_parallel", "--filter=parallel/env_probe",
                    "--jobs=1", NULL};
    /* The program's path rather than /proc/self/exe itself: under valgrind
     * that link names valgrind's own tool, which cannot be started
     * directly, while readlink gives this test program (valgrind answers
     * it), which valgrind then follows into the child. */
    char self[4096];
    ssize_t len = readlink("/proc/self/exe", self, sizeof self - 1);
    cr_assert(len > 0 && (size_t)len < sizeof self - 1,
              "cannot read /proc/self/exe");
    self[len] = '\0';
    pid_t pid;
    int rc = posix_spawn(&pid, self, &fa, NULL, argv, env);
    posix_spawn_file_actions_destroy(&fa);
    free(env);
    close(fe);
    cr_assert_eq(rc, 0, "posix_spawn failed: %d", rc);
    int status;
    cr_assert_eq(waitpid(pid, &status, 0), pid);
    read_file(err, r->err, sizeof r->err);
    cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0,
              "the probe process failed (status %d): %s", status, r->err);

    char line[128];
    read_file(out, line, sizeof line);
    cr_assert_eq(sscanf(line, "%d %d %d", &r->kernels,
                        &r->kernels_other_thread, &r->threads),
                 3, "the probe wrote \"%s\"", line);
    remove(out);
    remove(err);
}

TG_TEST(parallel, env_kernels_read_at_first_use)
{
    const char *names[] = {"fast", "portable", "reference"};
    for (int k = 0; k < 3; k++) {
        probe_result r;
        run_probe(TG_KERNELS, names[k], &r);
        cr_assert_eq(r.kernels, k, "TG_KERNELS=%s gave %d", names[k],
                     r.kernels);
        cr_assert_eq(r.kernels_other_thread, k,
                     "a new thread did not start from TG_KERNELS=%s",
                     names[k]);
        cr_assert(!strstr(r.err, "tapegrad:"), "unexpected warning: %s",
                  r.err);
    }
}

/* Unset and empty mean the default, silently. */
TG_TEST(parallel, env_kernels_default)
{
    const char *values[] = {NULL, ""};
    for (int i = 0; i < 2; i++) {
        probe_result r;
        run_probe(TG_KERNELS, values[i], &r);
        cr_assert_eq(r.kernels, TG_KERNELS_FAST);
        cr_assert(!strstr(r.err, "tapegrad:"), "unexpected warning: %s",
                  r.err);
    }
}

/* A misspelt value warns on stderr, naming it and the choices, and runs
 * the default. */
TG_TEST(parallel, env_kernels_invalid_warns)
{
    const char *bad[] = {"Reference", "slow", "1"};
    for (int i = 0; i < 3; i++) {
        probe_result r;
        run_probe(TG_KERNELS, bad[i], &r);
        cr_assert_eq(r.kernels, TG_KERNELS_FAST);
        char want[64];
        snprintf(want, sizeof want, "TG_KERNELS=\"%s\" is not understood",
                 bad[i]);
        cr_assert(strstr(r.err, want), "stderr: %s", r.err);
        cr_assert(strstr(r.err, "rule: TG_KERNELS is fast, portable or "
                                "reference"),
                  "stderr: %s", r.err);
    }
}

TG_TEST(parallel, env_num_threads_read_at_first_use)
{
    probe_result one, two;
    run_probe(TG_NUM_THREADS, "1", &one);
    run_probe(TG_NUM_THREADS, "2", &two);
    cr_assert_eq(one.threads, 1);
    /* 2 with OpenMP; a build without it runs on 1 whatever is asked. */
    cr_assert(two.threads == 2 || two.threads == 1);
    cr_assert(!strstr(one.err, "tapegrad:"), "unexpected warning: %s",
              one.err);
    cr_assert(!strstr(two.err, "tapegrad:"), "unexpected warning: %s",
              two.err);
}

/* A value that is not a whole number >= 1 warns and gives the default:
 * the same count as with the variable unset. */
TG_TEST(parallel, env_num_threads_invalid_warns)
{
    probe_result unset;
    run_probe(TG_NUM_THREADS, NULL, &unset);
    cr_assert_geq(unset.threads, 1);
    const char *bad[] = {"0", "-2", "two", "3x"};
    for (int i = 0; i < 4; i++) {
        probe_result r;
        run_probe(TG_NUM_THREADS, bad[i], &r);
        cr_assert_eq(r.threads, unset.threads, "TG_NUM_THREADS=%s gave %d",
                     bad[i], r.threads);
        char want[64];
        snprintf(want, sizeof want,
                 "TG_NUM_THREADS=\"%s\" is not understood", bad[i]);
        cr_assert(strstr(r.err, want), "stderr: %s", r.err);
        cr_assert(strstr(r.err, "rule: TG_NUM_THREADS is a whole number "
                                ">= 1"),
                  "stderr: %s", r.err);
    }
}

/* ---------------------------------------------------------- fast paths */
/* Each shortcut computes what its general path computes, with the same
 * operations in the same order, so the comparisons are bit for bit. */

/* Whether a and b have the same dtype, shape and bits in C order. */
static bool same_bits(const tg_tensor *a, const tg_tensor *b)
{
    if (!a || !b || a->dtype != b->dtype || !tg_same_shape(a, b))
        return false;
    tg_tensor *ca = tg_contiguous(a), *cb = tg_contiguous(b);
    bool same = memcmp(tg_base_ptr(ca), tg_base_ptr(cb),
                       (size_t)a->numel * tg_dtype_size(a->dtype)) == 0;
    tg_release(ca);
    tg_release(cb);
    return same;
}

/* The checker sees a one-ulp difference, a sign of zero, a dtype. */
TG_TEST(parallel, same_bits_catches_a_wrong_answer)
{
    tg_tensor *a = tg_from_array((float[]){1.0f, 0.0f}, TG_SHAPE(2),
                                 TG_FLOAT32);
    tg_tensor *b = tg_from_array((float[]){nextafterf(1.0f, 2.0f), 0.0f},
                                 TG_SHAPE(2), TG_FLOAT32);
    tg_tensor *c = tg_from_array((float[]){1.0f, -0.0f}, TG_SHAPE(2),
                                 TG_FLOAT32);
    tg_tensor *d = tg_to_dtype(a, TG_FLOAT64);
    cr_assert(same_bits(a, a));
    cr_assert(!same_bits(a, b));
    cr_assert(!same_bits(a, c));
    cr_assert(!same_bits(a, d));
    tg_release(a);
    tg_release(b);
    tg_release(c);
    tg_release(d);
}

/* Values with negatives, zeros of both signs, NaN, and a large offset
 * (|mean| >> spread) so that the order of additions would show. */
static tg_tensor *test_values(const int64_t *shape, int ndim, tg_dtype dt,
                              double offset)
{
    tg_tensor *x = tg_randn(shape, ndim, TG_FLOAT64);
    tg_tensor *y = tg_add_scalar(x, offset);
    tg_tensor *z = tg_to_dtype(y, dt);
    tg_release(x);
    tg_release(y);
    if (z->numel > 3 && offset == 0.0) {
        tg_tensor *flat = tg_reshape(z, (int64_t[]){z->numel}, 1);
        tg_set(flat, (int64_t[]){0}, 1, 0.0);
        tg_set(flat, (int64_t[]){1}, 1, -0.0);
        tg_set(flat, (int64_t[]){2}, 1, NAN);
        tg_release(flat);
    }
    return z;
}

/* x laid out with gaps (every other element of a longer buffer) when it
 * has more than one element along its last dim; else a plain copy, as no
 * layout of it is non-contiguous. */
static tg_tensor *strided(const tg_tensor *x)
{
    if (x->ndim > 0 && x->shape[x->ndim - 1] > 1 && x->numel > 1)
        return tg_test_non_contiguous(x, true);
    return tg_clone(x);
}

/* The elementwise apply takes one run for contiguous operands of one
 * shape, and the iterator for others: same results. */
TG_TEST(parallel, elementwise_contiguous_matches_strided)
{
    const tg_dtype dts[] = {TG_FLOAT32, TG_FLOAT64};
    const int64_t shapes[][2] = {{7, 5}, {1, 9}, {33, 17}, {0, 4}};
    for (int t = 0; t < 2; t++)
        for (int k = 0; k < 4; k++) {
            tg_tensor *a = test_values(shapes[k], 2, dts[t], 0.0);
            tg_tensor *b = test_values(shapes[k], 2, dts[t], 3.0);
            tg_tensor *sa = strided(a);
            tg_tensor *sb = strided(b);
            tg_tensor *fast = tg_mul(a, b), *slow = tg_mul(sa, sb);
            cr_assert(same_bits(fast, slow), "mul, case %d", k);
            tg_tensor *fs = tg_sub_scalar(a, 0.25);
            tg_tensor *ss = tg_sub_scalar(sa, 0.25);
            cr_assert(same_bits(fs, ss), "sub_scalar, case %d", k);
            tg_tensor *fu = tg_exp(a), *su = tg_exp(sa);
            cr_assert(same_bits(fu, su), "exp, case %d", k);
            tg_release(a), tg_release(b), tg_release(sa), tg_release(sb);
            tg_release(fast), tg_release(slow), tg_release(fs);
            tg_release(ss), tg_release(fu), tg_release(su);
        }
}

/* d(sum(relu(x) * w))/dx on the fast and the reference kernels. */
static tg_tensor *relu_grad(const tg_tensor *x, const tg_tensor *w,
                            tg_kernels kernels)
{
    tg_set_kernels(kernels);
    tg_tensor *leaf = tg_clone(x);
    tg_set_requires_grad(leaf, true);
    tg_tensor *y = tg_relu(leaf), *yw = tg_mul(y, w);
    tg_tensor *l = tg_sum(yw, NULL, 0, false);
    cr_assert_eq(tg_backward(l), 0, "%s", tg_last_error());
    tg_tensor *g = tg_retain(leaf->grad);
    tg_release(y), tg_release(yw), tg_release(l), tg_release(leaf);
    tg_set_kernels(TG_KERNELS_FAST);
    return g;
}

TG_TEST(parallel, relu_backward_matches_reference)
{
    const tg_dtype dts[] = {TG_FLOAT32, TG_FLOAT64};
    for (int t = 0; t < 2; t++) {
        tg_tensor *x = test_values(TG_SHAPE(13, 7), dts[t], 0.0);
        tg_tensor *w = test_values(TG_SHAPE(7, 13), dts[t], 0.0);
        tg_tensor *wt = tg_transpose(w, 0, 1); // g arrives strided
        tg_tensor *fast = relu_grad(x, wt, TG_KERNELS_FAST);
        tg_tensor *ref = relu_grad(x, wt, TG_KERNELS_REFERENCE);
        cr_assert(same_bits(fast, ref), "dtype %d", t);
        tg_release(x), tg_release(w), tg_release(wt);
        tg_release(fast), tg_release(ref);
    }
}

/* One of the reductions with a fast path: sum, mean, var (unbiased) and
 * std (biased). */
static tg_tensor *reduction(int which, const tg_tensor *x, const int *dims,
                            int nd, bool keep)
{
    switch (which) {
    case 0:
        return tg_sum(x, dims, nd, keep);
    case 1:
        return tg_mean(x, dims, nd, keep);
    case 2:
        return tg_var(x, dims, nd, 1, keep);
    default:
        return tg_std(x, dims, nd, 0, keep);
    }
}

/* sum, mean, var and std over leading dims, trailing dims, all, none, and
 * a layout the fast path leaves to the general one, on contiguous and
 * strided inputs, against the reference kernels, bit for bit. */
TG_TEST(parallel, sum_mean_match_reference)
{
    const tg_dtype dts[] = {TG_FLOAT32, TG_FLOAT64};
    /* {5, 300, 1}: 300 outputs, accumulators on the heap for var */
    const int64_t shapes[][3] = {{4, 5, 6}, {1, 9, 1}, {33, 1, 17},
                                 {0, 3, 2}, {2, 0, 5}, {5, 300, 1}};
    const int dimsets[][3] = {{0}, {0, 1}, {1, 2}, {2}, {0, 2}, {1}};
    const int ndims[] = {1, 2, 2, 1, 2, 1};
    const double offsets[] = {0.0, 1.0e4};
    for (int t = 0; t < 2; t++)
        for (int k = 0; k < 6; k++)
            for (int o = 0; o < 2; o++) {
                tg_tensor *x = test_values(shapes[k], 3, dts[t], offsets[o]);
                tg_tensor *xs = strided(x);
                for (int d = 0; d <= 6; d++) {
                    const int *dims = d < 6 ? dimsets[d] : NULL;
                    int nd = d < 6 ? ndims[d] : 0;
                    for (int keep = 0; keep < 2; keep++)
                        for (int op = 0; op < 4; op++) {
                            tg_tensor *r[3];
                            tg_set_kernels(TG_KERNELS_REFERENCE);
                            r[0] = reduction(op, x, dims, nd, keep);
                            tg_set_kernels(TG_KERNELS_FAST);
                            r[1] = reduction(op, x, dims, nd, keep);
                            r[2] = reduction(op, xs, dims, nd, keep);
                            cr_assert(same_bits(r[0], r[1]) &&
                                          same_bits(r[0], r[2]),
                                      "dtype %d shape %d dims %d keep %d "
                                      "op %d",
                                      t, k, d, keep, op);
                            for (int i = 0; i < 3; i++)
                                tg_release(r[i]);
                        }
                }
                tg_release(x);
                tg_release(xs);
            }
}

/* x.grad after two backwards of sum((x^T) * w) (a strided gradient, added
 * into an existing .grad the second time) and of sum(x * w). */
static tg_tensor *accumulated(const tg_tensor *x0, const tg_tensor *w,
                              tg_kernels kernels)
{
    tg_set_kernels(kernels);
    tg_tensor *x = tg_clone(x0);
    tg_set_requires_grad(x, true);
    for (int rep = 0; rep < 3; rep++) {
        tg_tensor *xt = rep == 1 ? tg_retain(x) : tg_transpose(x, 0, 1);
        tg_tensor *ww = rep == 1 ? tg_transpose(w, 0, 1) : tg_clone(w);
        tg_tensor *p = tg_mul(xt, ww);
        tg_tensor *l = tg_sum(p, NULL, 0, false);
        cr_assert_eq(tg_backward(l), 0, "%s", tg_last_error());
        tg_release(xt), tg_release(ww), tg_release(p), tg_release(l);
    }
    tg_tensor *g = tg_retain(x->grad);
    tg_release(x);
    tg_set_kernels(TG_KERNELS_FAST);
    return g;
}

TG_TEST(parallel, grad_accumulation_matches_reference)
{
    const tg_dtype dts[] = {TG_FLOAT32, TG_FLOAT64};
    for (int t = 0; t < 2; t++) {
        tg_tensor *x = test_values(TG_SHAPE(5, 9), dts[t], 0.0);
        tg_tensor *w = test_values(TG_SHAPE(9, 5), dts[t], 100.0);
        tg_tensor *fast = accumulated(x, w, TG_KERNELS_FAST);
        tg_tensor *ref = accumulated(x, w, TG_KERNELS_REFERENCE);
        cr_assert(same_bits(fast, ref), "dtype %d", t);
        tg_release(x), tg_release(w), tg_release(fast), tg_release(ref);
    }
}

/* The SGD loops for the plain rule and for momentum without decay or
 * nesterov, against the rule written out per element in float. */
TG_TEST(parallel, sgd_loops_match_the_rule)
{
    const double lr = 0.1, mom = 0.9;
    for (int with_momentum = 0; with_momentum < 2; with_momentum++) {
        tg_tensor *p = test_values(TG_SHAPE(37), TG_FLOAT32, 0.5);
        tg_set_requires_grad(p, true);
        tg_sgd_config c = {.lr = lr};
        c.momentum = with_momentum ? mom : 0.0;
        tg_optimizer *opt = tg_sgd_new(NULL, &c);
        cr_assert_eq(tg_optimizer_add_parameter(opt, p), 0);
        float want[37], buf[37];
        const float *pv = tg_data_f32(p);
        memcpy(want, pv, sizeof want);
        for (int step = 0; step < 3; step++) {
            tg_tensor *g = test_values(TG_SHAPE(37), TG_FLOAT32, 0.5);
            tg_clear_grad(p);
            p->grad = tg_clone(g);
            cr_assert_eq(tg_optimizer_step(opt), 0, "%s", tg_last_error());
            const float *gv = tg_data_f32(g);
            for (int i = 0; i < 37; i++) {
                float d = gv[i];
                if (with_momentum) {
                    buf[i] = step == 0 ? d
                                       : buf[i] * (float)mom +
                                             (float)(1.0 - 0.0) * d;
                    d = buf[i];
                }
                want[i] = want[i] + (float)(-lr) * d;
            }
            cr_assert(memcmp(want, tg_data_f32(p), sizeof want) == 0,
                      "momentum %d, step %d", with_momentum, step);
            tg_release(g);
        }
        tg_optimizer_free(opt);
        tg_release(p);
    }
}
