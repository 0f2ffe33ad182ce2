/*
 * tests/reliability/test_threads.c - two threads using the library at
 * once, and what is per thread.
 *
 * What it asserts:
 *  - two threads that each train their own model on their own data, at the
 *    same time, get exactly (bit for bit: every step's loss, every
 *    parameter and buffer) what the same two trainings give run one after
 *    the other on one thread; the checker (same_training) is fed a run one
 *    step shorter and a result with one bit flipped, and must name them;
 *  - errors are per thread: an error on thread A leaves thread B's
 *    tg_last_error() empty and A's message intact when B fails in turn,
 *    and a handler installed on A is not called for B's errors (B starts
 *    with the default handler);
 *  - the tape and no_grad are per thread: a no_grad scope on A does not
 *    stop B recording, and B's nodes are not on A's tape;
 *  - tg_live_tensors() counts the tensors of every thread: it loses no
 *    update when both make and release 5,000 tensors at the same moment,
 *    and is back to its value before the threads once both have joined;
 *  - a graph stays on the thread that recorded it: handed to another
 *    thread, its tensors cannot be extended, differentiated or released
 *    there (each refused with a message, where the library used to
 *    corrupt both tapes), and its own thread then finishes with it.
 *
 * The models are made on the main thread before the threads start:
 * tg_linear_new (and so tg_mlp_new) draws its initial weights from the
 * default generator, which is one per process and not thread-safe, and has
 * no generator argument. Each thread then draws only from a generator of
 * its own (data, batch order) and uses no Dropout, which would draw from
 * the default generator too. Nothing is shared between the threads but
 * the library itself: tensor reference counts are not atomic, so two
 * threads must never hold the same tensor.
 *
 * ThreadSanitizer: Criterion 2.4 itself crashes at start-up in a binary
 * built with -fsanitize=thread, so in a -Db_sanitize=thread build
 * tests/tsan/ compiles this file against a stand-in for the handful of
 * Criterion macros it uses into a plain program (meson test --suite tsan,
 * which .ci/run runs): every test here runs without a report, and a
 * generator shared on purpose by two threads is reported.
 */
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L // pthread_barrier_t
#endif

#include "../common.h"

#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>

/* ----------------------------------------------------------- a training */

#define TRAIN_STEPS 600
#define MAX_VALUES 4096 // parameter and buffer elements of one model

/* One training, as one thread runs it: the model is given, everything
 * else is made from the seed on the thread that trains. */
typedef struct training {
    /* in */
    tg_module *model;    // borrowed, made on the main thread
    uint64_t data_seed;  // the thread's own generator: data, batch order
    bool moons;          // two moons instead of three spirals
    bool adam;           // Adam, else SGD with momentum
    int64_t steps;
    /* out */
    double losses[TRAIN_STEPS];  // (steps,)
    double values[MAX_VALUES];   // every parameter, then every buffer
    int64_t nvalues;
    int64_t tape_at_end;         // this thread's tg_tape_size() at the end
    char error[512];             // "" or what failed
} training;

static void fail(training *t, const char *what)
{
    snprintf(t->error, sizeof t->error, "%s: %s", what, tg_last_error());
}

/* Appends every element of the named tensors to t->values. */
static int collect(training *t, const tg_named_tensor *list, int n)
{
    if (n < 0 || n > 32) {
        fail(t, "listing the model's tensors");
        return -1;
    }
    for (int i = 0; i < n; i++) {
        const tg_tensor *x = list[i].tensor;
        if (t->nvalues + x->numel > MAX_VALUES ||
            tg_to_f64_array(x, t->values + t->nvalues) != 0) {
            fail(t, list[i].name);
            return -1;
        }
        t->nvalues += x->numel;
    }
    return 0;
}

/* Every parameter, then every buffer of t->model, into t->values. */
static void collect_model(training *t)
{
    tg_named_tensor list[32];
    if (collect(t, list, tg_module_named_parameters(t->model, list, 32)) == 0)
        collect(t, list, tg_module_named_buffers(t->model, list, 32));
}

/* t->steps steps of opt on the batches; 0, or -1 with t->error set. */
static int train_steps(training *t, tg_optimizer *opt, tg_batches *batches)
{
    for (int64_t step = 0; step < t->steps;) {
        tg_tensor *x, *y;
        while (step < t->steps && tg_batches_next(batches, &x, &y)) {
            tg_tensor *logits = tg_module_forward(t->model, x);
            tg_tensor *loss =
                tg_cross_entropy(logits, y, TG_REDUCTION_MEAN);
            tg_optimizer_zero_grad(opt);
            int ok = loss && tg_backward(loss) == 0 &&
                     tg_optimizer_step(opt) == 0;
            t->losses[step++] = ok ? tg_item(loss) : NAN;
            tg_release(loss);
            tg_release(logits);
            tg_release(x);
            tg_release(y);
            if (!ok) {
                fail(t, "a training step");
                return -1;
            }
        }
    }
    return 0;
}

/* Runs the training described by t on the calling thread. No Criterion
 * assertion here (they must run on the test's own thread): a failure is
 * written in t->error. */
static void train(training *t)
{
    t->error[0] = '\0';
    t->nvalues = 0;
    tg_generator *g = tg_generator_new(t->data_seed);
    tg_dataset data = {0};
    int rc = t->moons ? tg_make_moons(128, 0.1, g, &data)
                      : tg_make_spirals(100, 3, 0.03, g, &data);
    tg_batches *batches =
        rc == 0 ? tg_batches_new(&data, 32, true, true, g) : NULL;
    tg_optimizer *opt = NULL;
    if (t->adam) {
        tg_adam_config c = {.lr = 1e-2};
        opt = tg_adam_new(t->model, &c);
    } else {
        tg_sgd_config c = {.lr = 0.1};
        c.momentum = 0.9;
        opt = tg_sgd_new(t->model, &c);
    }
    if (!batches || !opt)
        fail(t, "setting up");
    else if (train_steps(t, opt, batches) == 0)
        collect_model(t);
    tg_optimizer_free(opt);
    tg_batches_free(batches);
    tg_dataset_free(&data);
    tg_generator_free(g);
    t->tape_at_end = tg_tape_size();
}

static pthread_barrier_t barrier;
static void sync_threads(void)
{
    pthread_barrier_wait(&barrier);
}

static void *train_thread(void *arg)
{
    sync_threads(); // both start together
    train(arg);
    return NULL;
}

/* The two models, made on the calling thread from the default generator
 * (seeded here, so both calls give the same weights). */
static void make_models(tg_module **a, tg_module **b)
{
    tg_manual_seed(1);
    *a = tg_mlp_new(2, TG_SHAPE(32, 32), 3, TG_NORM_LAYER, TG_ACT_RELU);
    tg_manual_seed(2);
    *b = tg_mlp_new(2, TG_SHAPE(32, 32), 2, TG_NORM_BATCH, TG_ACT_TANH);
    cr_assert(*a && *b, "%s", tg_last_error());
}

static void setup_trainings(training *a, training *b, int64_t steps)
{
    make_models(&a->model, &b->model);
    a->data_seed = 10;
    a->moons = false;
    a->adam = true;
    a->steps = steps;
    b->data_seed = 20;
    b->moons = true;
    b->adam = false;
    b->steps = steps;
}

/* True when a and b are the same training result bit for bit: the same
 * number of steps with identical losses, identical parameters and
 * buffers. Otherwise report says what differs first. */
static bool same_training(const training *a, const training *b, char *report,
                          size_t size)
{
    if (a->error[0] || b->error[0]) {
        snprintf(report, size, "a training failed: \"%.200s\" / \"%.200s\"",
                 a->error, b->error);
        return false;
    }
    if (a->steps != b->steps) {
        snprintf(report, size, "%lld steps against %lld",
                 (long long)a->steps, (long long)b->steps);
        return false;
    }
    for (int64_t i = 0; i < a->steps; i++) {
        if (memcmp(&a->losses[i], &b->losses[i], sizeof(double)) != 0) {
            snprintf(report, size, "the loss of step %lld: %.17g against "
                                   "%.17g",
                     (long long)i, a->losses[i], b->losses[i]);
            return false;
        }
    }
    if (a->nvalues != b->nvalues) {
        snprintf(report, size, "%lld parameter and buffer elements against "
                               "%lld",
                 (long long)a->nvalues, (long long)b->nvalues);
        return false;
    }
    for (int64_t i = 0; i < a->nvalues; i++) {
        if (memcmp(&a->values[i], &b->values[i], sizeof(double)) != 0) {
            snprintf(report, size, "parameter or buffer element %lld: "
                                   "%.17g against %.17g",
                     (long long)i, a->values[i], b->values[i]);
            return false;
        }
    }
    snprintf(report, size, "%lld losses and %lld parameter and buffer "
                           "elements identical",
             (long long)a->steps, (long long)a->nvalues);
    return true;
}

/* ------------------------------------------------------ training at once */

TG_TEST(threads, two_trainings_at_once_equal_one_after_the_other)
{
    static training par_a, par_b, seq_a, seq_b; // large: not on the stack
    int64_t before = tg_live_tensors();

    setup_trainings(&par_a, &par_b, TRAIN_STEPS);
    int64_t with_models = tg_live_tensors();
    cr_assert_eq(pthread_barrier_init(&barrier, NULL, 2), 0);
    pthread_t ta, tb;
    cr_assert_eq(pthread_create(&ta, NULL, train_thread, &par_a), 0);
    cr_assert_eq(pthread_create(&tb, NULL, train_thread, &par_b), 0);
    pthread_join(ta, NULL);
    pthread_join(tb, NULL);
    pthread_barrier_destroy(&barrier);
    /* The optimisers' state and the data went with the threads' work;
     * the models have gained one .grad per parameter. */
    int64_t grads = tg_module_named_parameters(par_a.model, NULL, 0) +
                    tg_module_named_parameters(par_b.model, NULL, 0);
    cr_assert_eq(tg_live_tensors(), with_models + grads,
                 "after both joined: %lld live tensors, expected %lld (the "
                 "models and their gradients)",
                 (long long)tg_live_tensors(),
                 (long long)(with_models + grads));

    setup_trainings(&seq_a, &seq_b, TRAIN_STEPS);
    train(&seq_a); // on this thread, one after the other
    train(&seq_b);

    char report[512];
    bool same_a = same_training(&par_a, &seq_a, report, sizeof report);
    fprintf(stderr, "threads: training A (spirals, LayerNorm, Adam): %s\n",
            report);
    cr_assert(same_a, "training A differs: %s", report);
    bool same_b = same_training(&par_b, &seq_b, report, sizeof report);
    fprintf(stderr, "threads: training B (moons, BatchNorm, SGD): %s\n",
            report);
    cr_assert(same_b, "training B differs: %s", report);
    cr_assert_eq(par_a.tape_at_end, 0, "thread A left nodes on its tape");
    cr_assert_eq(par_b.tape_at_end, 0, "thread B left nodes on its tape");
    fprintf(stderr, "threads: final losses A %.6f, B %.6f\n",
            par_a.losses[TRAIN_STEPS - 1], par_b.losses[TRAIN_STEPS - 1]);

    tg_module_free(par_a.model);
    tg_module_free(par_b.model);
    tg_module_free(seq_a.model);
    tg_module_free(seq_b.model);
    cr_assert_eq(tg_live_tensors(), before);
}

/* The wrong answers for same_training: a run one step shorter, and one
 * parameter bit flipped, each named. */
TG_TEST(threads, same_training_reports_differences)
{
    static training full_a, full_b, short_a, short_b;
    setup_trainings(&full_a, &full_b, 40);
    setup_trainings(&short_a, &short_b, 40);
    short_a.steps = 39; // its model then differs from full_a's
    train(&full_a);
    train(&short_a);
    char report[512];
    cr_assert_not(same_training(&full_a, &short_a, report, sizeof report));
    cr_assert(strstr(report, "40 steps against 39"), "%s", report);
    short_a.steps = 40; // same loss list up to 39, then the parameters
    short_a.losses[39] = full_a.losses[39];
    cr_assert_not(same_training(&full_a, &short_a, report, sizeof report));
    cr_assert(strstr(report, "parameter or buffer element "), "%s", report);

    training *copy = malloc(sizeof *copy);
    cr_assert_not_null(copy);
    memcpy(copy, &full_a, sizeof *copy);
    cr_assert(same_training(&full_a, copy, report, sizeof report), "%s",
              report);
    float f = (float)copy->values[100];
    uint32_t bits;
    memcpy(&bits, &f, sizeof bits);
    bits ^= 1; // one ulp
    memcpy(&f, &bits, sizeof f);
    copy->values[100] = f;
    cr_assert_not(same_training(&full_a, copy, report, sizeof report));
    cr_assert(strstr(report, "element 100: "), "%s", report);
    copy->values[100] = full_a.values[100];
    copy->losses[7] = nextafter(copy->losses[7], 1e300);
    cr_assert_not(same_training(&full_a, copy, report, sizeof report));
    cr_assert(strstr(report, "the loss of step 7: "), "%s", report);
    free(copy);

    tg_module_free(full_a.model);
    tg_module_free(full_b.model);
    tg_module_free(short_a.model);
    tg_module_free(short_b.model);
}

/* ------------------------------------------------------ what is per thread */

static atomic_int calls_a, calls_b; // how often each thread's handler ran
static void handler_a(const char *message)
{
    (void)message;
    atomic_fetch_add(&calls_a, 1);
}
static void handler_b(const char *message)
{
    (void)message;
    atomic_fetch_add(&calls_b, 1);
}

/* What the threads saw, asserted on the test's thread afterwards. */
typedef struct observed {
    tg_error_handler b_found;  // B's handler before B installed its own
    char b_error_after_a[64];  // B's tg_last_error() after A failed
    int calls_b_after_a;
    char a_error_after_b[128]; // A's tg_last_error() after B failed
    int calls_a_after_b;
    bool a_failed, b_failed;   // each error returned NULL
    /* the tape test */
    bool b_grad_enabled, a_grad_enabled;
    bool b_recorded, a_recorded;
    int64_t b_tape, a_tape;
    bool b_backward_ok;
    /* the counter test */
    int64_t live_before;
    int64_t live_full[2], live_empty[2]; // read by each thread
} observed;
static observed seen;

static void *errors_a(void *arg)
{
    (void)arg;
    tg_set_error_handler(handler_a);
    sync_threads(); // 1: A's handler is in place
    sync_threads(); // 2: B has looked at its handler
    tg_tensor *x = tg_ones(TG_SHAPE(2, 3), TG_FLOAT32);
    tg_tensor *bad = tg_matmul(x, x);
    seen.a_failed = bad == NULL;
    tg_release(x);
    sync_threads(); // 3: A has failed
    sync_threads(); // 4: B has looked, and failed in turn
    snprintf(seen.a_error_after_b, sizeof seen.a_error_after_b, "%s",
             tg_last_error());
    seen.calls_a_after_b = atomic_load(&calls_a);
    return NULL;
}

static void *errors_b(void *arg)
{
    (void)arg;
    sync_threads(); // 1
    seen.b_found = tg_set_error_handler(handler_b);
    sync_threads(); // 2
    sync_threads(); // 3
    snprintf(seen.b_error_after_a, sizeof seen.b_error_after_a, "%s",
             tg_last_error());
    seen.calls_b_after_a = atomic_load(&calls_b);
    tg_tensor *x = tg_ones(TG_SHAPE(6), TG_FLOAT32);
    tg_tensor *bad = tg_reshape(x, TG_SHAPE(4));
    seen.b_failed = bad == NULL;
    tg_release(x);
    sync_threads(); // 4
    return NULL;
}

static void run_pair(void *(*a)(void *), void *(*b)(void *))
{
    memset(&seen, 0, sizeof seen);
    seen.live_before = tg_live_tensors();
    cr_assert_eq(pthread_barrier_init(&barrier, NULL, 2), 0);
    pthread_t ta, tb;
    cr_assert_eq(pthread_create(&ta, NULL, a, NULL), 0);
    cr_assert_eq(pthread_create(&tb, NULL, b, NULL), 0);
    pthread_join(ta, NULL);
    pthread_join(tb, NULL);
    pthread_barrier_destroy(&barrier);
}

TG_TEST(threads, errors_and_handlers_are_per_thread)
{
    atomic_store(&calls_a, 0);
    atomic_store(&calls_b, 0);
    run_pair(errors_a, errors_b);
    cr_assert(seen.a_failed && seen.b_failed, "both calls must fail");
    cr_assert(seen.b_found == tg_error_handler_print,
              "a new thread must start with the default handler, not "
              "the one another thread installed");
    cr_assert_str_empty(seen.b_error_after_a,
                        "thread B sees thread A's error: %s",
                        seen.b_error_after_a);
    cr_assert_eq(seen.calls_b_after_a, 0, "B's handler ran for A's error");
    cr_assert(strstr(seen.a_error_after_b, "tg_matmul: cannot multiply"),
              "A's last error was changed by B's: %s",
              seen.a_error_after_b);
    cr_assert_eq(seen.calls_a_after_b, 1,
                 "A's handler ran %d times (once for A's error expected)",
                 seen.calls_a_after_b);
    cr_assert_eq(atomic_load(&calls_b), 1, "B's handler ran %d times",
                 atomic_load(&calls_b));
    /* and this thread's state was never touched */
    cr_assert_str_empty(tg_last_error());
    cr_assert_eq(tg_set_error_handler(tg_error_handler_quiet),
                 tg_error_handler_quiet);
}

static void *tape_a(void *arg)
{
    (void)arg;
    tg_no_grad_begin();
    sync_threads(); // 1: A is in a no_grad scope
    sync_threads(); // 2: B has recorded
    seen.a_grad_enabled = tg_is_grad_enabled();
    seen.a_tape = tg_tape_size(); // B's node is not on A's tape
    tg_tensor *w = tg_ones(TG_SHAPE(3), TG_FLOAT32);
    tg_set_requires_grad(w, true);
    tg_tensor *y = tg_mul(w, w);
    seen.a_recorded = y && y->grad_fn != NULL;
    seen.a_tape += tg_tape_size();
    sync_threads(); // 3
    tg_release(y);
    tg_release(w);
    tg_no_grad_end();
    return NULL;
}

static void *tape_b(void *arg)
{
    (void)arg;
    sync_threads(); // 1
    seen.b_grad_enabled = tg_is_grad_enabled();
    tg_tensor *w = tg_ones(TG_SHAPE(3), TG_FLOAT32);
    tg_set_requires_grad(w, true);
    tg_tensor *y = tg_mul(w, w);
    seen.b_recorded = y && y->grad_fn != NULL;
    seen.b_tape = tg_tape_size();
    sync_threads(); // 2
    sync_threads(); // 3: A has looked; B differentiates
    tg_tensor *s = tg_sum(y, NULL, 0, false);
    seen.b_backward_ok = s && tg_backward(s) == 0 && w->grad;
    tg_tensor *gs = seen.b_backward_ok ? tg_sum(w->grad, NULL, 0, false)
                                       : NULL;
    seen.b_backward_ok = gs && tg_item(gs) == 6.0; // d(sum w^2)/dw = 2w
    tg_release(gs);
    tg_release(s);
    tg_release(y);
    tg_release(w);
    return NULL;
}

TG_TEST(threads, tape_and_no_grad_are_per_thread)
{
    run_pair(tape_a, tape_b);
    cr_assert(seen.b_grad_enabled,
              "a no_grad scope on thread A turned gradients off on B");
    cr_assert(seen.b_recorded && seen.b_tape == 1,
              "B recorded %s, its tape has %lld nodes",
              seen.b_recorded ? "its op" : "nothing", (long long)seen.b_tape);
    cr_assert_not(seen.a_grad_enabled, "A's no_grad scope is not on");
    cr_assert_not(seen.a_recorded, "A recorded inside its no_grad scope");
    cr_assert_eq(seen.a_tape, 0, "A's tape shows %lld nodes",
                 (long long)seen.a_tape);
    cr_assert(seen.b_backward_ok, "B's backward failed");
    cr_assert_eq(tg_live_tensors(), seen.live_before);
}

/* Both threads make and release MANY tensors at the same moment: the
 * process-wide counters must lose no update. */
#define MANY 5000

static void make_and_release_many(int who)
{
    tg_tensor **t = malloc(MANY * sizeof *t);
    sync_threads(); // 1: go
    for (int i = 0; i < MANY; i++)
        t[i] = t ? tg_zeros(TG_SHAPE(2), TG_FLOAT32) : NULL;
    sync_threads(); // 2: both made theirs
    seen.live_full[who] = tg_live_tensors();
    sync_threads(); // 3: both have read
    for (int i = 0; t && i < MANY; i++)
        tg_release(t[i]);
    sync_threads(); // 4: both released theirs
    seen.live_empty[who] = tg_live_tensors();
    free(t);
}

static void *many_a(void *arg)
{
    (void)arg;
    make_and_release_many(0);
    return NULL;
}

static void *many_b(void *arg)
{
    (void)arg;
    make_and_release_many(1);
    return NULL;
}

TG_TEST(threads, live_counts_are_process_wide)
{
    run_pair(many_a, many_b);
    for (int who = 0; who < 2; who++) {
        cr_assert_eq(seen.live_full[who], seen.live_before + 2 * MANY,
                     "thread %c counts %lld live tensors with both "
                     "threads' %d, expected %lld",
                     "AB"[who], (long long)seen.live_full[who], MANY,
                     (long long)(seen.live_before + 2 * MANY));
        cr_assert_eq(seen.live_empty[who], seen.live_before,
                     "thread %c counts %lld live tensors once both "
                     "released theirs, expected %lld",
                     "AB"[who], (long long)seen.live_empty[who],
                     (long long)seen.live_before);
    }
    cr_assert_eq(tg_live_storages(), 0);
}

/* -------------------------------------------- a graph stays on its thread */

/* Handed to another thread, a tensor with history cannot be extended,
 * differentiated or released there: each is refused with a message (the
 * graph's nodes are linked into its own thread's tape, which another
 * thread must not touch). Its own thread then uses and releases it as
 * usual. */
static struct {
    tg_tensor *w, *y, *s; // recorded by the owner thread
    int64_t owner_tape_after_refusals, owner_tape_at_end;
    bool owner_backward_ok;
} handed;

static void *graph_owner(void *arg)
{
    (void)arg;
    tg_set_error_handler(tg_error_handler_quiet);
    handed.w = tg_ones(TG_SHAPE(3), TG_FLOAT32);
    tg_set_requires_grad(handed.w, true);
    handed.y = tg_mul(handed.w, handed.w);
    handed.s = tg_sum(handed.y, NULL, 0, false);
    sync_threads(); // 1: handed over
    sync_threads(); // 2: the other thread has tried
    handed.owner_tape_after_refusals = tg_tape_size();
    tg_tensor *gs = NULL;
    if (tg_backward(handed.s) == 0 && handed.w->grad)
        gs = tg_sum(handed.w->grad, NULL, 0, false);
    handed.owner_backward_ok = gs && tg_item(gs) == 6.0; // 2w summed
    tg_release(gs);
    tg_release(handed.s);
    tg_release(handed.y);
    tg_release(handed.w);
    handed.owner_tape_at_end = tg_tape_size();
    return NULL;
}

TG_TEST(threads, a_graph_stays_on_its_thread)
{
    memset(&handed, 0, sizeof handed);
    cr_assert_eq(pthread_barrier_init(&barrier, NULL, 2), 0);
    pthread_t owner;
    cr_assert_eq(pthread_create(&owner, NULL, graph_owner, NULL), 0);
    sync_threads(); // 1
    int64_t live = tg_live_tensors();

    tg_tensor *z = tg_mul(handed.y, handed.y);
    bool extend_refused = z == NULL;
    char extend_error[256];
    snprintf(extend_error, sizeof extend_error, "%s", tg_last_error());
    tg_release(z);

    tg_clear_error();
    int rc = tg_backward(handed.s);
    char backward_error[256];
    snprintf(backward_error, sizeof backward_error, "%s", tg_last_error());

    tg_clear_error();
    tg_release(handed.y); // refused: the reference stays the caller's
    char release_error[256];
    snprintf(release_error, sizeof release_error, "%s", tg_last_error());
    int64_t refcount_after = handed.y->refcount;
    int64_t live_after = tg_live_tensors();
    int64_t tape_here = tg_tape_size();

    sync_threads(); // 2: the owner goes on
    pthread_join(owner, NULL);
    pthread_barrier_destroy(&barrier);

    cr_assert(extend_refused, "an op extended another thread's graph");
    cr_assert(strstr(extend_error, "MulBackward0: input 0 was made by "
                                   "MulBackward0 on another thread"),
              "%s", extend_error);
    cr_assert_eq(rc, -1, "a backward ran through another thread's graph");
    cr_assert(strstr(backward_error, "tg_backward: the root was made by "
                                     "SumBackward0 on another thread"),
              "%s", backward_error);
    cr_assert(strstr(release_error, "tg_release: the tensor released was "
                                    "made by MulBackward0 on another "
                                    "thread"),
              "%s", release_error);
    cr_assert(strstr(release_error, "hint: "), "%s", release_error);
    cr_assert_eq(refcount_after, 1, "the refused release changed the count");
    cr_assert_eq(live_after, live, "the refused release freed a tensor");
    cr_assert_eq(tape_here, 0, "this thread's tape shows %lld nodes",
                 (long long)tape_here);
    cr_assert_eq(handed.owner_tape_after_refusals, 2,
                 "the owner's tape has %lld nodes (mul and sum expected)",
                 (long long)handed.owner_tape_after_refusals);
    cr_assert(handed.owner_backward_ok, "the owner's backward failed");
    cr_assert_eq(handed.owner_tape_at_end, 0);
}
