/*
 * tests/tensor/test_debug.c - memory mistakes made visible: the debug mode
 * (tg_set_debug, TG_DEBUG) and the leak report (tg_print_live_tensors,
 * TG_LEAK_CHECK).
 *
 * Each mistake is made for real. Those that end the process (a double
 * release, a use after release) run in a child made with fork, and the
 * test reads what the child printed and how it ended; the environment
 * switches are read once per process, so their tests start debug_child
 * (TG_DEBUG_CHILD names it) with the variable set. Every test has its
 * negative control: the same steps without the mistake, or with the
 * switch off, must not abort or fail.
 */
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L // open_memstream, fdopen
#endif

#include "../common.h"

#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

/* What a child printed on stderr and how it ended. */
typedef struct child_result {
    char err[8192];
    int status;
} child_result;

/* Under valgrind (the CI's valgrind test setup) the children are traced
 * too, and the tensors they leave behind on purpose when they abort or
 * leak are reported as errors: these tests run only without it. */
static void skip_under_valgrind(void)
{
    if (tg_test_under_valgrind())
        cr_skip_test("the children leak on purpose; not under valgrind");
}

static void read_all(int fd, child_result *r)
{
    size_t got = 0;
    ssize_t n;
    while (got < sizeof r->err - 1 &&
           (n = read(fd, r->err + got, sizeof r->err - 1 - got)) > 0)
        got += (size_t)n;
    r->err[got] = '\0';
    close(fd);
}

/* Runs body in a forked child with the debug mode on and the default
 * (printing) error handler; the child ends with _exit(0) if body returns. */
static void run_child(void (*body)(void), child_result *r)
{
    skip_under_valgrind();
    int fds[2];
    cr_assert_eq(pipe(fds), 0);
    fflush(NULL);
    pid_t pid = fork();
    cr_assert(pid >= 0, "fork failed");
    if (pid == 0) {
        close(fds[0]);
        dup2(fds[1], STDERR_FILENO);
        tg_set_error_handler(NULL);
        tg_set_debug(true);
        body();
        _exit(0);
    }
    close(fds[1]);
    read_all(fds[0], r);
    cr_assert_eq(waitpid(pid, &r->status, 0), pid);
}

static bool aborted(const child_result *r)
{
    return WIFSIGNALED(r->status) && WTERMSIG(r->status) == SIGABRT;
}

/* ------------------------------------------------------- double release */

static void release_twice(void)
{
    tg_tensor *a = tg_ones(TG_SHAPE(32, 3), TG_FLOAT32);
    tg_tensor *b = tg_ones(TG_SHAPE(3, 27), TG_FLOAT32);
    tg_tensor *c = tg_matmul(a, b);
    tg_release(a);
    tg_release(b);
    tg_release(c);
    tg_release(c); // the mistake
}

static void release_once(void)
{
    tg_tensor *a = tg_ones(TG_SHAPE(32, 3), TG_FLOAT32);
    tg_tensor *b = tg_ones(TG_SHAPE(3, 27), TG_FLOAT32);
    tg_tensor *c = tg_matmul(a, b);
    tg_release(a);
    tg_release(b);
    tg_release(c);
}

TG_TEST(debug, double_release_is_reported_and_aborts)
{
    child_result r;
    run_child(release_twice, &r);
    cr_assert(aborted(&r), "status %d, stderr:\n%s", r.status, r.err);
    /* The creation number is the matmul's (its inner steps make tensors
     * too): the in-process tests compare it with ->serial. */
    cr_assert(strstr(r.err, "tg_release: the tensor (32, 27) float32 made "
                            "by tg_matmul (#") == r.err,
              "%s", r.err);
    cr_assert(strstr(r.err, ") was released again\n"
                            "  it was released in release_twice() at "),
              "%s", r.err);
    cr_assert(strstr(r.err, "test_debug.c:"), "%s", r.err);
    cr_assert(strstr(r.err, "\n  rule: ") && strstr(r.err, "\n  hint: "),
              "%s", r.err);
    cr_assert_null(strstr(r.err, "double free"), "%s", r.err);
}

TG_TEST(debug, single_release_does_not_abort)
{
    child_result r;
    run_child(release_once, &r);
    cr_assert(WIFEXITED(r.status) && WEXITSTATUS(r.status) == 0,
              "status %d, stderr:\n%s", r.status, r.err);
    cr_assert_str_empty(r.err);
}

/* A view keeps the block of the tensor it was made from: releasing that
 * tensor twice once reached the storage's count a second time. */
static void release_base_twice_under_a_view(void)
{
    tg_set_debug(false); // the header in the block, as in a normal run
    tg_tensor *x = tg_zeros(TG_SHAPE(4, 5), TG_FLOAT64);
    tg_tensor *v = tg_transpose(x, 0, 1);
    tg_release(x);
    tg_release(x); // the mistake
    tg_release(v);
}

TG_TEST(debug, double_release_caught_without_debug_while_a_view_lives)
{
    child_result r;
    run_child(release_base_twice_under_a_view, &r);
    cr_assert(aborted(&r), "status %d, stderr:\n%s", r.status, r.err);
    cr_assert(strstr(r.err, "tg_release: the tensor (4, 5) float64 made by "
                            "tg_zeros (#1) was released again\n"
                            "  it was released earlier (TG_DEBUG=1 records "
                            "where)\n") == r.err,
              "%s", r.err);
}

/* ------------------------------------------------- use after release */

static void add_after_release(void)
{
    tg_tensor *x = tg_full(TG_SHAPE(2, 3), 1.5, TG_FLOAT64); // #1
    tg_tensor *y = tg_ones(TG_SHAPE(3), TG_FLOAT64);         // #2
    tg_release(x);
    tg_tensor *z = tg_add(y, x); // the mistake
    tg_release(z);
    tg_release(y);
}

TG_TEST(debug, use_after_release_in_an_op)
{
    child_result r;
    run_child(add_after_release, &r);
    cr_assert(aborted(&r), "status %d, stderr:\n%s", r.status, r.err);
    cr_assert(strstr(r.err, "tg_add: the tensor (2, 3) float64 made by "
                            "tg_full (#1) was used after its last release\n"
                            "  it was released in add_after_release() at ") ==
                  r.err,
              "%s", r.err);
}

static void matmul_after_release(void)
{
    tg_tensor *a = tg_ones(TG_SHAPE(2, 3), TG_FLOAT32);
    tg_tensor *b = tg_ones(TG_SHAPE(3, 4), TG_FLOAT32);
    tg_tensor *c = tg_matmul(a, b);
    tg_release(c);
    tg_tensor *d = tg_matmul(c, tg_transpose(b, 0, 1)); // the mistake
    tg_release(d);
}

TG_TEST(debug, use_after_release_in_matmul)
{
    child_result r;
    run_child(matmul_after_release, &r);
    cr_assert(aborted(&r), "status %d, stderr:\n%s", r.status, r.err);
    cr_assert(strstr(r.err, "tg_matmul: the tensor (2, 4) float32 made by "
                            "tg_matmul (#") == r.err &&
                  strstr(r.err, ") was used after its last release\n  it "
                                "was released in matmul_after_release() "
                                "at "),
              "%s", r.err);
}

/* One released tensor handed to functions of each kind: a view, a
 * reduction, a loss, an in-place write, printing, a join, softmax, the
 * image ops, Linear, gradcheck and tg_cmp. Each must stop
 * at its own name. */
static tg_tensor *released_tensor(void)
{
    tg_tensor *x = tg_full(TG_SHAPE(2, 3), 0.5, TG_FLOAT32);
    tg_release(x);
    return x;
}

static void slice_released(void) { tg_slice(released_tensor(), 1, 0, 2, 1); }
static void sum_released(void)
{
    tg_sum(released_tensor(), TG_DIMS(0), false);
}
static void mse_released(void)
{
    tg_tensor *t = tg_zeros(TG_SHAPE(2, 3), TG_FLOAT32);
    tg_mse_loss(t, released_tensor(), TG_REDUCTION_MEAN);
}
static void fill_released(void) { tg_fill_(released_tensor(), 1.0); }
static void format_released(void) { free(tg_format(released_tensor())); }
static void cat_released(void)
{
    tg_tensor *t = tg_zeros(TG_SHAPE(2, 3), TG_FLOAT32);
    const tg_tensor *parts[] = {t, released_tensor()};
    tg_cat(parts, 2, 0);
}
static void softmax_released(void) { tg_softmax(released_tensor(), -1); }
static void group_norm_released(void)
{
    tg_group_norm(released_tensor(), 1, NULL, NULL, 1e-5);
}
static void conv2d_released(void)
{
    tg_tensor *w = tg_zeros(TG_SHAPE(1, 1, 1, 1), TG_FLOAT32);
    tg_conv2d(released_tensor(), w, NULL, NULL);
}
static void max_pool2d_released(void)
{
    tg_max_pool2d(released_tensor(), (int64_t[]){1, 1}, NULL, NULL);
}
static void linear_released(void)
{
    tg_tensor *w = tg_zeros(TG_SHAPE(4, 3), TG_FLOAT32);
    tg_linear(released_tensor(), w, NULL);
}
static tg_tensor *identity_of(const tg_tensor *const *in, int n, void *user)
{
    (void)n;
    (void)user;
    return tg_retain((tg_tensor *)in[0]);
}
static void gradcheck_released(void)
{
    tg_tensor *x = released_tensor();
    tg_gradcheck(identity_of, NULL, &x, 1, NULL, NULL);
}
static void cmp_released(void)
{
    tg_tensor *t = tg_zeros(TG_SHAPE(2, 3), TG_FLOAT32);
    tg_cmp("x", released_tensor(), t);
}

TG_TEST(debug, use_after_release_in_each_kind_of_function)
{
    static const struct {
        void (*body)(void);
        const char *fn;
    } cases[] = {
        {slice_released, "tg_slice"},     {sum_released, "tg_sum"},
        {mse_released, "tg_mse_loss"},    {fill_released, "tg_fill_"},
        {format_released, "tg_format"},   {cat_released, "tg_cat"},
        {softmax_released, "tg_softmax"},
        {group_norm_released, "tg_group_norm"},
        {conv2d_released, "tg_conv2d"},
        {max_pool2d_released, "tg_max_pool2d"},
        {linear_released, "tg_linear"},
        {gradcheck_released, "tg_gradcheck"},
        {cmp_released, "tg_cmp"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        child_result r;
        run_child(cases[i].body, &r);
        char want[128];
        snprintf(want, sizeof want,
                 "%s: the tensor (2, 3) float32 made by tg_full (#",
                 cases[i].fn);
        cr_assert(aborted(&r), "%s: status %d, stderr:\n%s", cases[i].fn,
                  r.status, r.err);
        cr_assert(strstr(r.err, want) == r.err &&
                      strstr(r.err, ") was used after its last release\n"
                                    "  it was released in "
                                    "released_tensor() at "),
                  "%s", r.err);
    }
}

/* The loss released before backward: the usual slip of a training loop
 * that frees its step's tensors one line too early. */
static void backward_after_release(void)
{
    tg_tensor *w = tg_ones(TG_SHAPE(3), TG_FLOAT64);
    tg_set_requires_grad(w, true);
    tg_tensor *y = tg_mul(w, w);
    tg_tensor *loss = tg_sum(y, NULL, 0, false);
    tg_release(y);
    tg_release(loss);
    tg_backward(loss); // the mistake
    tg_release(w);
}

static void backward_before_release(void)
{
    tg_tensor *w = tg_ones(TG_SHAPE(3), TG_FLOAT64);
    tg_set_requires_grad(w, true);
    tg_tensor *y = tg_mul(w, w);
    tg_tensor *loss = tg_sum(y, NULL, 0, false);
    tg_release(y);
    if (tg_backward(loss) != 0)
        _exit(3);
    tg_release(loss);
    tg_release(w);
    if (tg_live_tensors() != 0)
        _exit(4);
}

TG_TEST(debug, use_after_release_in_backward)
{
    child_result r;
    run_child(backward_after_release, &r);
    cr_assert(aborted(&r), "status %d, stderr:\n%s", r.status, r.err);
    cr_assert(strstr(r.err, "tg_backward: the tensor () float64 made by "
                            "tg_sum (#") == r.err,
              "%s", r.err);
    cr_assert(strstr(r.err, "was used after its last release\n  it was "
                            "released in backward_after_release() at "),
              "%s", r.err);
    run_child(backward_before_release, &r);
    cr_assert(WIFEXITED(r.status) && WEXITSTATUS(r.status) == 0,
              "status %d, stderr:\n%s", r.status, r.err);
}

/* -------------------------------------------------- the leak report */

static char *live_report(void)
{
    char *text = NULL;
    size_t size = 0;
    FILE *f = open_memstream(&text, &size);
    cr_assert_not_null(f);
    cr_assert_eq(tg_print_live_tensors(f), 0);
    fclose(f);
    return text;
}

TG_TEST(debug, report_lists_a_leaked_tensor)
{
    tg_set_debug(true);
    char *text = live_report();
    cr_assert_str_eq(text, "no tensor is alive\n");
    free(text);
    tg_tensor *a = tg_ones(TG_SHAPE(32, 4), TG_FLOAT32);
    tg_tensor *b = tg_ones(TG_SHAPE(4, 27), TG_FLOAT32);
    tg_tensor *c = tg_matmul(a, b);
    tg_release(a);
    tg_release(b);
    char want[128];
    snprintf(want, sizeof want,
             "1 tensor is still alive: (32, 27) float32 made by tg_matmul "
             "(#%llu)\n",
             (unsigned long long)c->serial);
    text = live_report();
    cr_assert_str_eq(text, want);
    free(text);
    tg_release(c);
    tg_set_debug(false);
}

TG_TEST(debug, report_caps_a_long_list)
{
    tg_set_debug(true);
    tg_tensor *t[25];
    for (int i = 0; i < 25; i++)
        t[i] = tg_zeros(TG_SHAPE(i + 1), TG_INT64);
    char *text = live_report();
    cr_assert(strstr(text, "25 tensors are still alive:\n"
                           "  (1,) int64 made by tg_zeros (#1)\n"
                           "  (2,) int64 made by tg_zeros (#2)\n") == text,
              "%s", text);
    cr_assert(strstr(text, "  (20,) int64 made by tg_zeros (#20)\n"
                           "  ... and 5 more\n"),
              "%s", text);
    cr_assert_null(strstr(text, "(21,)"), "%s", text);
    free(text);
    for (int i = 0; i < 25; i++)
        tg_release(t[i]);
    tg_set_debug(false);
}

/* A view names no function: the node it recorded names it instead. */
TG_TEST(debug, report_names_the_grad_fn_of_an_unnamed_result)
{
    tg_set_debug(true);
    tg_tensor *w = tg_ones(TG_SHAPE(2, 3), TG_FLOAT32);
    tg_set_requires_grad(w, true);
    tg_tensor *t = tg_transpose(w, 0, 1);
    tg_release(w);
    cr_assert_str_eq(t->made_by, tg_grad_fn_name(t)); // set by tg_record
    char *text = live_report();
    /* w lives on too: the node holds it for its gradient. */
    char want[160];
    snprintf(want, sizeof want,
             "2 tensors are still alive:\n"
             "  (2, 3) float32 made by tg_ones (#1)\n"
             "  (3, 2) float32 made by %s (#%llu)\n",
             tg_grad_fn_name(t), (unsigned long long)t->serial);
    cr_assert_str_eq(text, want);
    cr_assert(strstr(text, "Backward"), "%s", text);
    free(text);
    tg_release(t);
    tg_set_debug(false);
}

TG_TEST(debug, report_refuses_a_null_stream)
{
    cr_assert_eq(tg_print_live_tensors(NULL), -1);
    tg_assert_error("tg_print_live_tensors: f is NULL");
}

TG_TEST(debug, switch_reads_back)
{
    tg_set_debug(true);
    cr_assert(tg_debug_enabled());
    tg_set_debug(false);
    cr_assert_not(tg_debug_enabled());
}

/* Creation numbers count per thread from 1 (each test is a process). */
TG_TEST(debug, creation_numbers_count_up)
{
    tg_tensor *a = tg_zeros(TG_SHAPE(1), TG_FLOAT32);
    tg_tensor *b = tg_neg(a);
    cr_assert_eq(a->serial, 1);
    cr_assert_eq(b->serial, 2);
    cr_assert_str_eq(a->made_by, "tg_zeros");
    cr_assert_str_eq(b->made_by, "tg_neg");
    tg_release(b);
    tg_release(a);
}

/* ------------------------------------------------------ TG_LEAK_CHECK */

/* Starts debug_child `what` with env_var=value and the rest of this
 * environment. */
static void run_program(const char *what, const char *setting,
                        child_result *r)
{
    skip_under_valgrind();
    const char *prog = getenv("TG_DEBUG_CHILD");
    cr_assert_not_null(prog, "TG_DEBUG_CHILD is not set (meson test sets "
                             "it)");
    size_t n = 0;
    while (environ[n])
        n++;
    char **env = calloc(n + 3, sizeof *env);
    cr_assert_not_null(env);
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        if (strncmp(environ[i], "TG_LEAK_CHECK=", 14) &&
            strncmp(environ[i], "TG_DEBUG=", 9) &&
            strncmp(environ[i], "ASAN_OPTIONS=", 13))
            env[k++] = environ[i];
    env[k++] = (char *)setting;
    /* The child leaks on purpose: in a sanitizer build, LeakSanitizer
     * would fail it whatever TG_LEAK_CHECK says. */
    env[k++] = "ASAN_OPTIONS=detect_leaks=0:abort_on_error=1";
    env[k] = NULL;
    int fds[2];
    cr_assert_eq(pipe(fds), 0);
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, fds[1], STDERR_FILENO);
    posix_spawn_file_actions_addclose(&fa, fds[0]);
    char *argv[] = {"debug_child", (char *)what, NULL};
    pid_t pid;
    int rc = posix_spawn(&pid, prog, &fa, NULL, argv, env);
    posix_spawn_file_actions_destroy(&fa);
    free(env);
    close(fds[1]);
    cr_assert_eq(rc, 0, "cannot start %s: %d", prog, rc);
    read_all(fds[0], r);
    cr_assert_eq(waitpid(pid, &r->status, 0), pid);
}

static int exit_status(const child_result *r)
{
    return WIFEXITED(r->status) ? WEXITSTATUS(r->status) : -1;
}

TG_TEST(debug, leak_check_fails_the_exit_status)
{
    child_result r;
    run_program("leak", "TG_LEAK_CHECK=1", &r);
    cr_assert_eq(exit_status(&r), 1, "status %d, stderr:\n%s", r.status,
                 r.err);
    cr_assert(strstr(r.err, "tapegrad: TG_LEAK_CHECK=1: 1 tensor is still "
                            "alive: (3, 2) float32 made by tg_matmul (#") ==
                  r.err,
              "%s", r.err);
    cr_assert(strchr(r.err, '\n') == r.err + strlen(r.err) - 1, "%s", r.err);
}

TG_TEST(debug, leak_check_lists_many)
{
    child_result r;
    run_program("many", "TG_LEAK_CHECK=1", &r);
    cr_assert_eq(exit_status(&r), 1, "%s", r.err);
    cr_assert(strstr(r.err, "tapegrad: TG_LEAK_CHECK=1: 25 tensors are "
                            "still alive:\n  (3, 2) float32 made by "
                            "tg_matmul (#") == r.err,
              "%s", r.err);
    cr_assert(strstr(r.err, "  (1,) float64 made by tg_zeros (#"), "%s",
              r.err);
    cr_assert(strstr(r.err, "  ... and 5 more\n"), "%s", r.err);
}

TG_TEST(debug, leak_check_passes_a_clean_program)
{
    child_result r;
    run_program("clean", "TG_LEAK_CHECK=1", &r);
    cr_assert_eq(exit_status(&r), 0, "%s", r.err);
    cr_assert_str_empty(r.err);
    /* Off, a leak changes nothing: the check is what fails it. */
    run_program("leak", "TG_LEAK_CHECK=0", &r);
    cr_assert_eq(exit_status(&r), 0, "%s", r.err);
    cr_assert_str_empty(r.err);
}

TG_TEST(debug, debug_variable_turns_the_mode_on)
{
    child_result r;
    run_program("mode", "TG_DEBUG=1", &r);
    cr_assert_eq(exit_status(&r), 0, "%s", r.err);
    cr_assert_str_eq(r.err, "debug on\n");
    run_program("mode", "TG_DEBUG=0", &r);
    cr_assert_str_eq(r.err, "debug off\n");
    run_program("mode", "TG_DEBUG=yes", &r);
    cr_assert(strstr(r.err, "tapegrad: TG_DEBUG=\"yes\" is not understood") &&
                  strstr(r.err, "debug off\n"),
              "%s", r.err);
    /* On, a double release names main() in debug_child.c and aborts. */
    run_program("double", "TG_DEBUG=1", &r);
    cr_assert(aborted(&r), "status %d, stderr:\n%s", r.status, r.err);
    cr_assert(strstr(r.err, "tg_release: the tensor (3, 2) float32 made by "
                            "tg_matmul (#") == r.err &&
                  strstr(r.err, ") was released again\n"
                                "  it was released in main() at ") &&
                  strstr(r.err, "debug_child.c:"),
              "%s", r.err);
}
