/*
 * tests/reliability/test_alloc_failure.c - every operation survives running
 * out of memory at each of its allocations.
 *
 * A sweep runs one operation again and again with
 * tg_fail_allocations_after(k) for k = 0, 1, 2, ...: the first k
 * allocations succeed and the one after fails, as do all later ones. At
 * each k where an allocation failed it checks what a program relies on
 * when memory runs out:
 *   - the call returned NULL or -1 (never a result computed without the
 *     memory it needed),
 *   - the error handler was called and tg_last_error() says "out of
 *     memory" (a later message must not hide the cause: "cannot read
 *     file" after a failed allocation would send the user looking for the
 *     wrong problem),
 *   - nothing leaked: live tensors, storages and tape nodes are back to
 *     their counts before the run (LeakSanitizer, in the sanitizer build,
 *     sees any other malloc that was not freed), and gradients are
 *     enabled again,
 *   - the arguments are as before, where the API promises it (a module
 *     after a failed load or optimiser step, a tensor after a failed
 *     in-place copy).
 * The first k at which nothing failed ran the operation to completion: the
 * sweep checks that run too and stops.
 *
 * Every operation is one row of the case table (oom_cases): adding one is
 * a row and, usually, a short run function. The checker itself is tested
 * on operations that are wrong on purpose (broken_cases).
 *
 * Not here: the messages of ordinary mistakes (tests/errors/), malformed
 * files (the fuzzers).
 */
#include "../common.h"
#include "tensor/internal.h" // tg_matmul_reference

#include <criterion/parameterized.h>
#include <dirent.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

/* In the sanitizer build LeakSanitizer can be asked, after each sweep,
 * whether memory was lost, so that a leak is blamed on its case. */
#if defined(__SANITIZE_ADDRESS__) // GCC
#define HAVE_LSAN 1
#elif defined(__has_feature) // Clang
#if __has_feature(address_sanitizer)
#define HAVE_LSAN 1
#endif
#endif
#ifndef HAVE_LSAN
#define HAVE_LSAN 0
#endif
#if HAVE_LSAN
#include <sanitizer/lsan_interface.h>
#endif

/* ------------------------------------------------------------ the fixture */

/* What one case's setup makes and its run and intact check use. Setup runs
 * once per sweep, with the hook off; the generic teardown releases
 * everything here. */
typedef struct fixture {
    tg_tensor *t[6];       // arguments
    tg_tensor *ref[6];     // snapshots and expected results
    tg_module *m;
    tg_tensor *params[16]; // m's parameters (borrowed), listed by setup
    int nparams;
    tg_optimizer *opt;
    tg_dataset data;
    FILE *sink;            // /dev/null, for writers
    char dir[64];          // a scratch folder ("" when none)
} fixture;

/* One operation to sweep. */
typedef struct oom_case {
    const char *name;
    /* Makes the arguments; 0, or -1 with a message in tg_last_error().
     * NULL: there are none. */
    int (*setup)(fixture *f);
    /* The operation: 0 when every public call succeeded, -1 as soon as
     * one returned NULL or -1. Releases whatever it made either way. */
    int (*run)(fixture *f);
    /* After a failed run: NULL when the arguments are as they were, else
     * what changed (a static string). NULL: the API promises nothing. */
    const char *(*intact)(fixture *f);
} oom_case;

static void fixture_free(fixture *f)
{
    for (int i = 0; i < 6; i++) {
        tg_release(f->t[i]);
        tg_release(f->ref[i]);
    }
    tg_optimizer_free(f->opt);
    tg_module_free(f->m);
    tg_dataset_free(&f->data);
    if (f->sink)
        fclose(f->sink);
    if (f->dir[0]) {
        DIR *d = opendir(f->dir);
        struct dirent *e;
        char path[512];
        while (d && (e = readdir(d))) {
            if (e->d_name[0] == '.')
                continue;
            snprintf(path, sizeof path, "%s/%s", f->dir, e->d_name);
            unlink(path);
        }
        if (d)
            closedir(d);
        rmdir(f->dir);
    }
    *f = (fixture){0};
}

static int make_dir(fixture *f)
{
    snprintf(f->dir, sizeof f->dir, "/tmp/tg-oom-XXXXXX");
    if (!mkdtemp(f->dir)) {
        f->dir[0] = '\0';
        return -1;
    }
    return 0;
}

/* ------------------------------------------------------------ the checker */

static _Thread_local int handler_calls;

static void counting_handler(const char *message)
{
    (void)message;
    handler_calls++;
}

/* What a sweep found. */
typedef struct sweep_report {
    int64_t runs;        // values of k tried, the completed run included
    int64_t failed_runs; // runs in which an allocation failed
    char problem[1024];  // the first problem, "" when there was none
} sweep_report;

/* The counts a run must leave as it found them. */
typedef struct counts {
    int64_t tensors, storages, nodes;
    bool grad_enabled;
} counts;

static counts counts_now(void)
{
    return (counts){tg_live_tensors(), tg_live_storages(), tg_tape_size(),
                    tg_is_grad_enabled()};
}

/* "3 tensors leaked", or "2 tensors that were alive before are gone". */
static void count_change(char *buf, size_t size, int64_t before,
                         int64_t after, const char *what)
{
    if (after > before)
        snprintf(buf, size, "%lld %s leaked", (long long)(after - before),
                 what);
    else
        snprintf(buf, size, "%lld %s that were alive before are gone",
                 (long long)(before - after), what);
}

/* Describes in buf what differs between before and after; false when
 * nothing does. */
static bool counts_differ(counts before, counts after, char *buf,
                          size_t size)
{
    if (after.tensors != before.tensors)
        count_change(buf, size, before.tensors, after.tensors, "tensors");
    else if (after.storages != before.storages)
        count_change(buf, size, before.storages, after.storages,
                     "storages");
    else if (after.nodes != before.nodes)
        count_change(buf, size, before.nodes, after.nodes, "tape nodes");
    else if (after.grad_enabled != before.grad_enabled)
        snprintf(buf, size, "gradients were left %s",
                 after.grad_enabled ? "enabled" : "disabled");
    else
        return false;
    return true;
}

/* Whether an error message starts as the library's do: the name of the
 * function (or, for a node of the tape, the op's grad_fn name) that
 * reports, then ": ". */
static bool starts_with_a_name(const char *message)
{
    size_t n = strspn(message, "abcdefghijklmnopqrstuvwxyz"
                               "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_");
    return n > 0 && message[n] == ':' && message[n + 1] == ' ';
}

/* The most allocations one operation of the table makes, with room: a
 * sweep that gets here has a run that never completes. */
#define SWEEP_MAX_RUNS 20000

/* Sweeps c (see the top of the file). Returns true when every run passed;
 * otherwise r->problem names the case, the run and what went wrong. The
 * caller's error handler is kept. */
static bool sweep(const oom_case *c, sweep_report *r)
{
    *r = (sweep_report){0};
    fixture f = {0};
    tg_error_handler previous = tg_set_error_handler(counting_handler);
    counts start = counts_now();
    if (c->setup && c->setup(&f) < 0) {
        snprintf(r->problem, sizeof r->problem, "%s: setup failed: %s",
                 c->name, tg_last_error());
        goto out;
    }
    for (int64_t k = 0; k < SWEEP_MAX_RUNS; k++) {
        counts before = counts_now();
        char what[512] = "";
        handler_calls = 0;
        tg_clear_error();
        tg_fail_allocations_after(k);
        int rc = c->run(&f);
        int64_t failed = tg_fail_allocations_after(-1);
        r->runs++;
        counts after = counts_now();
        if (failed == 0) { // the run completed: it must have succeeded
            if (rc != 0)
                snprintf(what, sizeof what,
                         "failed with no allocation failing: %s",
                         tg_last_error());
            else if (handler_calls)
                snprintf(what, sizeof what,
                         "succeeded but reported an error: %s",
                         tg_last_error());
            /* The counts may differ: a backward frees what the nodes
             * saved, a first step makes the optimiser's state. A leak
             * shows at teardown. */
        } else {
            r->failed_runs++;
            const char *broken;
            if (rc == 0)
                snprintf(what, sizeof what,
                         "reported success although an allocation failed");
            else if (handler_calls == 0 || !tg_last_error()[0])
                snprintf(what, sizeof what,
                         "failed without reporting an error");
            else if (!strstr(tg_last_error(), "out of memory"))
                snprintf(what, sizeof what,
                         "the error does not say \"out of memory\": %s",
                         tg_last_error());
            else if (!starts_with_a_name(tg_last_error()))
                snprintf(what, sizeof what,
                         "the error does not start with the name of who "
                         "reports it: %s",
                         tg_last_error());
            else if (counts_differ(before, after, what, sizeof what))
                ;
            else if (c->intact && (broken = c->intact(&f)))
                snprintf(what, sizeof what, "%s", broken);
        }
        if (what[0]) {
            snprintf(r->problem, sizeof r->problem,
                     "%s, with the allocations after the first %lld "
                     "failing: %s",
                     c->name, (long long)k, what);
            goto out;
        }
        if (failed == 0)
            goto out;
    }
    snprintf(r->problem, sizeof r->problem,
             "%s: still failing after %d runs", c->name, SWEEP_MAX_RUNS);
out:
    tg_fail_allocations_after(-1);
    fixture_free(&f);
    counts end = counts_now();
    char what[256];
    if (!r->problem[0] && counts_differ(start, end, what, sizeof what))
        snprintf(r->problem, sizeof r->problem, "%s: after teardown, %s",
                 c->name, what);
#if HAVE_LSAN
    /* Prints LeakSanitizer's report (with the stack that allocated) and
     * says whether there was one. */
    if (!r->problem[0] && __lsan_do_recoverable_leak_check())
        snprintf(r->problem, sizeof r->problem,
                 "%s: LeakSanitizer found memory that is no longer "
                 "reachable (its report, above, shows where it was "
                 "allocated)",
                 c->name);
#endif
    if (!r->problem[0] && r->failed_runs == 0)
        snprintf(r->problem, sizeof r->problem,
                 "%s: allocates nothing, so the sweep tested nothing",
                 c->name);
    tg_set_error_handler(previous);
    return !r->problem[0];
}

/* ---------------------------------------------------------------- helpers */

/* A result of a run: released, and 0 when it was made. */
static int done(tg_tensor *y)
{
    tg_release(y);
    return y ? 0 : -1;
}

/* Backpropagates from y (released here) and clears the gradients of the
 * leaves given, so that a run leaves nothing behind. */
static int backward_and_clear(tg_tensor *y, tg_tensor *const *leaves, int n)
{
    int rc = y ? tg_backward(y) : -1;
    tg_release(y);
    for (int i = 0; i < n; i++)
        tg_clear_grad(leaves[i]);
    return rc;
}

/* sum(y), taking y. */
static tg_tensor *sum_all(tg_tensor *y)
{
    tg_tensor *s = tg_sum(y, NULL, 0, false);
    tg_release(y);
    return s;
}

/* sum(y * w): a loss whose gradient is w, not a constant (sum(y) alone has
 * a zero gradient through a normalisation). Takes y. */
static tg_tensor *weighted_sum(tg_tensor *y, const tg_tensor *w)
{
    tg_tensor *p = tg_mul(y, w);
    tg_release(y);
    tg_tensor *s = tg_sum(p, NULL, 0, false);
    tg_release(p);
    return s;
}

static tg_tensor *randn(const int64_t *shape, int ndim, tg_dtype dtype,
                        bool requires_grad)
{
    tg_tensor *t = tg_randn(shape, ndim, dtype);
    if (t && requires_grad)
        tg_set_requires_grad(t, true);
    return t;
}

/* Whether a and b hold the same values (both may be NULL). */
static bool same_values(const tg_tensor *a, const tg_tensor *b)
{
    char report[256];
    return tg_test_close(a, b, 0, 0, true, report, sizeof report);
}

/* Every parameter and buffer of m copied into one flat float64 tensor (a
 * new reference), to see after a failed call that m is unchanged. */
static tg_tensor *module_state(const tg_module *m)
{
    tg_named_tensor items[32];
    int np = tg_module_named_parameters(m, items, 32);
    int nb = tg_module_named_buffers(m, items + np, 32 - np);
    int64_t total = 0;
    for (int i = 0; i < np + nb; i++)
        total += items[i].tensor->numel;
    double *v = malloc(sizeof *v * (size_t)(total + 1));
    double *p = v;
    for (int i = 0; i < np + nb; i++) {
        tg_to_f64_array(items[i].tensor, p);
        p += items[i].tensor->numel;
    }
    tg_tensor *state = tg_from_array(v, &total, 1, TG_FLOAT64);
    free(v);
    return state;
}

static const char *module_unchanged(fixture *f)
{
    tg_tensor *now = module_state(f->m);
    bool same = same_values(now, f->ref[0]);
    tg_release(now);
    return same ? NULL : "the module's tensors changed";
}

/* Releases every .grad of the module's parameters, so that a run leaves
 * none. (Listing them allocates, so the list is made by setup.) */
static void module_clear_grads(fixture *f)
{
    for (int i = 0; i < f->nparams; i++)
        tg_clear_grad(f->params[i]);
}

/* The module's eval-mode output on x, under no_grad. New reference. */
static tg_tensor *eval_forward(tg_module *m, const tg_tensor *x)
{
    bool training = tg_module_is_training(m);
    tg_module_train(m, false);
    tg_no_grad_begin();
    tg_tensor *y = tg_module_forward(m, x);
    tg_no_grad_end();
    tg_module_train(m, training);
    return y;
}

/* ---------------------------------------------------------------- create */

static int run_zeros(fixture *f)
{
    (void)f;
    return done(tg_zeros(TG_SHAPE(2, 3), TG_FLOAT32));
}

static int run_from_array(fixture *f)
{
    (void)f;
    const double v[] = {1, 2, 3, 4, 5, 6};
    return done(tg_from_array(v, TG_SHAPE(3, 2), TG_FLOAT64));
}

static int run_arange(fixture *f)
{
    (void)f;
    return done(tg_arange(0, 10, 0.5, TG_FLOAT32));
}

static int run_randn(fixture *f)
{
    (void)f;
    return done(tg_randn(TG_SHAPE(4, 5), TG_FLOAT32));
}

static int run_generator(fixture *f)
{
    (void)f;
    tg_generator *g = tg_generator_new(7);
    tg_tensor *x = g ? tg_rand_gen(g, TG_SHAPE(3), TG_FLOAT64) : NULL;
    tg_generator_free(g);
    return done(x);
}

/* Both sampling paths: keys without replacement, the CDF with it. */
static int run_multinomial(fixture *f)
{
    (void)f;
    const float w[] = {1, 2, 3, 0, 4, 5};
    tg_tensor *p = tg_from_array(w, TG_SHAPE(2, 3), TG_FLOAT32);
    tg_tensor *a = p ? tg_multinomial(p, 2, false, NULL) : NULL;
    tg_tensor *b = a ? tg_multinomial(p, 4, true, NULL) : NULL;
    tg_release(a);
    tg_release(p);
    return done(b);
}

static int run_eye_linspace_like(fixture *f)
{
    (void)f;
    tg_tensor *e = tg_eye(3, 4, TG_FLOAT32);
    tg_tensor *l = e ? tg_linspace(0, 1, 5, TG_FLOAT64) : NULL;
    tg_tensor *o = l ? tg_ones_like(e) : NULL;
    int rc = o ? 0 : -1;
    tg_release(e);
    tg_release(l);
    tg_release(o);
    return rc;
}

/* ------------------------------------------------------------------ views */

static int setup_x234(fixture *f)
{
    tg_manual_seed(1);
    f->t[0] = randn(TG_SHAPE(2, 3, 4), TG_FLOAT32, false);
    f->ref[0] = tg_clone(f->t[0]);
    return f->ref[0] ? 0 : -1;
}

static int setup_x234_grad(fixture *f)
{
    tg_manual_seed(1);
    f->t[0] = randn(TG_SHAPE(2, 3, 4), TG_FLOAT64, true);
    f->t[1] = randn(TG_SHAPE(2, 3, 4), TG_FLOAT64, false);
    return f->t[1] ? 0 : -1;
}

/* A reshape that must copy: the transpose's strides cannot be merged. */
static int run_reshape_copy(fixture *f)
{
    tg_tensor *t = tg_transpose(f->t[0], 0, 2);
    tg_tensor *r = t ? tg_reshape(t, TG_SHAPE(4, -1)) : NULL;
    tg_release(t);
    return done(r);
}

static int run_permute(fixture *f)
{
    return done(tg_permute(f->t[0], TG_DIMS(2, 0, 1)));
}

static int run_expand(fixture *f)
{
    tg_tensor *s = tg_select(f->t[0], 2, 1); // (2, 3)
    tg_tensor *u = s ? tg_unsqueeze(s, 0) : NULL;
    tg_tensor *e = u ? tg_expand(u, TG_SHAPE(5, -1, -1)) : NULL;
    tg_release(s);
    tg_release(u);
    return done(e);
}

/* Views and copies on a tensor that requires grad, with their backward. */
static int run_views_backward(fixture *f)
{
    tg_tensor *t = tg_transpose(f->t[0], 0, 2);
    tg_tensor *r = t ? tg_reshape(t, TG_SHAPE(4, 6)) : NULL;
    tg_tensor *s = r ? tg_slice(r, 1, 1, 6, 2) : NULL;      // (4, 3)
    tg_tensor *e = s ? tg_unsqueeze(s, 0) : NULL;           // (1, 4, 3)
    tg_tensor *x = e ? tg_expand(e, TG_SHAPE(2, 4, 3)) : NULL;
    tg_tensor *p = x ? tg_permute(x, TG_DIMS(0, 2, 1)) : NULL; // (2, 3, 4)
    tg_tensor *c = p ? tg_contiguous(p) : NULL;
    tg_release(t);
    tg_release(r);
    tg_release(s);
    tg_release(e);
    tg_release(x);
    tg_release(p);
    return backward_and_clear(c ? weighted_sum(c, f->t[1]) : NULL, f->t, 1);
}

static int run_dtype_copies(fixture *f)
{
    tg_tensor *c = tg_clone(f->t[0]);
    tg_tensor *d = c ? tg_to_dtype(c, TG_FLOAT64) : NULL;
    tg_tensor *i = d ? tg_to_dtype(d, TG_INT64) : NULL;
    tg_release(c);
    tg_release(d);
    return done(i);
}

/* In place: on failure x must keep its values. */
static int run_copy_broadcast(fixture *f)
{
    tg_tensor *row = tg_arange(0, 4, 1, TG_INT64); // (4,), converted
    int rc = row ? tg_copy_(f->t[0], row) : -1;
    tg_release(row);
    return rc;
}

static const char *x_unchanged(fixture *f)
{
    return same_values(f->t[0], f->ref[0]) ? NULL
                                           : "the tensor's values changed";
}

/* ------------------------------------------------------------ elementwise */

static int setup_ab(fixture *f)
{
    tg_manual_seed(2);
    f->t[0] = randn(TG_SHAPE(2, 3), TG_FLOAT32, true);
    f->t[1] = randn(TG_SHAPE(3), TG_FLOAT64, true);
    f->t[2] = randn(TG_SHAPE(2, 3), TG_FLOAT64, false);
    return f->t[2] ? 0 : -1;
}

static int run_broadcast_forward(fixture *f)
{
    tg_no_grad_begin();
    tg_tensor *s = tg_add(f->t[0], f->t[1]); // float64 (2, 3)
    tg_tensor *m = s ? tg_mul_scalar(s, 2.5) : NULL;
    tg_tensor *c = m ? tg_gt_scalar(m, 0) : NULL;      // int64
    tg_tensor *w = c ? tg_where(c, m, f->t[1]) : NULL; // broadcast b
    tg_no_grad_end();
    tg_release(s);
    tg_release(m);
    tg_release(c);
    return done(w);
}

static int run_compare(fixture *f)
{
    tg_tensor *c = tg_lt(f->t[0], f->t[1]);
    tg_tensor *i = c ? tg_eq_scalar(c, 1) : NULL;
    tg_release(c);
    return done(i);
}

static int run_elementwise_backward(fixture *f)
{
    tg_tensor *s = tg_sub(f->t[0], f->t[1]);
    tg_tensor *d = s ? tg_div(s, f->t[1]) : NULL;
    tg_tensor *t = d ? tg_tanh(d) : NULL;
    tg_tensor *e = t ? tg_exp(t) : NULL;
    tg_tensor *p = e ? tg_pow_scalar(e, 2) : NULL;
    tg_tensor *c = p ? tg_clamp(p, 0.1, 5) : NULL;
    tg_tensor *m = c ? tg_maximum(c, f->t[1]) : NULL;
    tg_tensor *g = m ? tg_gelu(m, TG_GELU_TANH) : NULL;
    tg_release(s);
    tg_release(d);
    tg_release(t);
    tg_release(e);
    tg_release(p);
    tg_release(c);
    tg_release(m);
    return backward_and_clear(g ? weighted_sum(g, f->t[2]) : NULL, f->t, 2);
}

/* Every unary op with its backward, on positive inputs (log, sqrt). */
static int run_unary_backward(fixture *f)
{
    tg_tensor *(*const ops[])(const tg_tensor *) = {
        tg_abs, tg_exp, tg_log, tg_sqrt, tg_rsqrt, tg_neg, tg_sigmoid,
        tg_relu, tg_silu, tg_tanh};
    tg_tensor *x = tg_abs(f->t[0]);
    tg_tensor *y = x ? tg_add_scalar(x, 0.5) : NULL;
    tg_release(x);
    for (size_t i = 0; y && i < sizeof ops / sizeof *ops; i++) {
        tg_tensor *z = ops[i](y);
        tg_tensor *s = z ? tg_add(z, y) : NULL; // keeps the chain positive
        tg_tensor *p = s ? tg_abs(s) : NULL;
        tg_release(z);
        tg_release(s);
        tg_release(y);
        y = p ? tg_add_scalar(p, 0.5) : NULL;
        tg_release(p);
    }
    tg_tensor *g = y ? tg_gelu(y, TG_GELU_EXACT) : NULL;
    tg_release(y);
    return backward_and_clear(g ? weighted_sum(g, f->t[2]) : NULL, f->t, 1);
}

/* ------------------------------------------------------------- reductions */

static int run_reductions(fixture *f)
{
    tg_tensor *s = tg_sum(f->t[0], TG_DIMS(1), true);
    tg_tensor *m = s ? tg_mean(f->t[0], TG_DIMS(0, 2), false) : NULL;
    tg_tensor *v = m ? tg_var(f->t[0], TG_DIMS(-1), 1, false) : NULL;
    tg_tensor *d = v ? tg_std(f->t[0], NULL, 0, 0, false) : NULL;
    tg_tensor *x = d ? tg_max(f->t[0], TG_DIMS(1), false) : NULL;
    tg_tensor *a = x ? tg_argmax(f->t[0], 2, true) : NULL;
    int rc = a ? 0 : -1;
    tg_release(s);
    tg_release(m);
    tg_release(v);
    tg_release(d);
    tg_release(x);
    tg_release(a);
    return rc;
}

static int run_reductions_backward(fixture *f)
{
    tg_tensor *v = tg_var(f->t[0], TG_DIMS(-1), 1, true);
    tg_tensor *x = v ? tg_max(f->t[0], TG_DIMS(0), false) : NULL;
    tg_tensor *m = x ? tg_mean(x, NULL, 0, false) : NULL;
    tg_tensor *s = m ? tg_sum(v, NULL, 0, false) : NULL;
    tg_tensor *y = s ? tg_add(s, m) : NULL;
    tg_release(v);
    tg_release(x);
    tg_release(m);
    tg_release(s);
    return backward_and_clear(y, f->t, 1);
}

static int run_min_narrow_squeeze(fixture *f)
{
    tg_tensor *n = tg_narrow(f->t[0], 2, 1, 1);          // (2, 3, 1)
    tg_tensor *q = n ? tg_squeeze(n, -1) : NULL;         // (2, 3)
    tg_tensor *m = q ? tg_min(q, TG_DIMS(0), true) : NULL; // (1, 3)
    tg_tensor *a = m ? tg_argmin(f->t[0], 1, false) : NULL;
    tg_tensor *z = a ? tg_squeeze_all(m) : NULL;
    tg_tensor *y = z ? tg_mean(z, NULL, 0, false) : NULL;
    tg_release(n);
    tg_release(q);
    tg_release(m);
    tg_release(a);
    tg_release(z);
    return backward_and_clear(y, f->t, 1);
}

static int run_histogram(fixture *f)
{
    tg_tensor *edges = NULL;
    tg_tensor *h = tg_histogram(f->t[0], 5, true, &edges);
    tg_release(edges);
    return done(h);
}

/* ------------------------------------------------------------------ matmul */

static int setup_matmul(fixture *f)
{
    tg_manual_seed(3);
    f->t[0] = randn(TG_SHAPE(2, 3, 4), TG_FLOAT32, true);
    f->t[1] = randn(TG_SHAPE(4, 5), TG_FLOAT64, true); // broadcast, promoted
    f->t[2] = randn(TG_SHAPE(2, 3, 5), TG_FLOAT64, false);
    return f->t[2] ? 0 : -1;
}

static int run_matmul(fixture *f)
{
    tg_tensor *y = tg_matmul(f->t[0], f->t[1]);
    return backward_and_clear(y ? weighted_sum(y, f->t[2]) : NULL, f->t, 2);
}

/* The plain strided kernel, on a non-contiguous operand. */
static int run_matmul_reference(fixture *f)
{
    tg_no_grad_begin();
    tg_tensor *bt = tg_transpose(f->t[1], 0, 1);
    tg_tensor *b = bt ? tg_transpose(bt, 0, 1) : NULL;
    tg_tensor *y = b ? tg_matmul_reference(f->t[0], b) : NULL;
    tg_no_grad_end();
    tg_release(bt);
    tg_release(b);
    return done(y);
}

static int run_matmul_vectors(fixture *f)
{
    tg_tensor *v = tg_select(f->t[1], 1, 0);       // (4,)
    tg_tensor *y = v ? tg_matmul(f->t[0], v) : NULL; // (2, 3)
    tg_tensor *d = y ? tg_matmul(v, v) : NULL;     // 0-d
    tg_tensor *s = d ? tg_mul(y, d) : NULL;
    tg_release(v);
    tg_release(y);
    tg_release(d);
    return backward_and_clear(s ? sum_all(s) : NULL, f->t, 2);
}

/* ----------------------------------------------------------------- softmax */

static int run_softmax(fixture *f)
{
    tg_tensor *s = tg_softmax(f->t[0], 1);
    tg_tensor *l = s ? tg_log_softmax(f->t[0], -1) : NULL;
    tg_tensor *y = l ? tg_add(s, l) : NULL;
    tg_release(s);
    tg_release(l);
    return backward_and_clear(y ? weighted_sum(y, f->t[1]) : NULL, f->t, 1);
}

/* ---------------------------------------------------------- normalisation */

static int setup_norm(fixture *f)
{
    tg_manual_seed(4);
    f->t[0] = randn(TG_SHAPE(4, 3), TG_FLOAT64, true);  // x
    f->t[1] = randn(TG_SHAPE(3), TG_FLOAT64, true);     // weight
    f->t[2] = randn(TG_SHAPE(3), TG_FLOAT64, true);     // bias
    f->t[3] = randn(TG_SHAPE(4, 3), TG_FLOAT64, false); // loss weights
    f->t[4] = tg_zeros(TG_SHAPE(3), TG_FLOAT64);        // running mean
    f->t[5] = tg_ones(TG_SHAPE(3), TG_FLOAT64);         // running var
    f->ref[0] = tg_clone(f->t[4]);
    f->ref[1] = tg_clone(f->t[5]);
    return f->ref[1] ? 0 : -1;
}

static int run_layer_norm(fixture *f)
{
    tg_tensor *mean = NULL, *rstd = NULL;
    tg_tensor *y = tg_layer_norm_ex(f->t[0], TG_SHAPE(3), f->t[1], f->t[2],
                                    1e-5, &mean, &rstd);
    tg_release(mean);
    tg_release(rstd);
    return backward_and_clear(y ? weighted_sum(y, f->t[3]) : NULL, f->t, 3);
}

static int run_layer_norm_composed(fixture *f)
{
    tg_tensor *y = tg_layer_norm_composed(f->t[0], TG_SHAPE(3), f->t[1],
                                          f->t[2], 1e-5);
    return backward_and_clear(y ? weighted_sum(y, f->t[3]) : NULL, f->t, 3);
}

/* No affine part, over two trailing dims. */
static int run_layer_norm_plain(fixture *f)
{
    tg_tensor *x = tg_reshape(f->t[0], TG_SHAPE(2, 2, 3));
    tg_tensor *y = x ? tg_layer_norm(x, TG_SHAPE(2, 3), NULL, NULL, 1e-5)
                     : NULL;
    tg_tensor *r = y ? tg_reshape(y, TG_SHAPE(4, 3)) : NULL;
    tg_release(x);
    tg_release(y);
    return backward_and_clear(r ? weighted_sum(r, f->t[3]) : NULL, f->t, 1);
}

/* Eval mode on (N, C, H, W), and training without affine or running
 * statistics. */
static int run_batch_norm_eval_2d(fixture *f)
{
    tg_tensor *x = tg_reshape(f->t[0], TG_SHAPE(2, 3, 2, 1));
    tg_tensor *p = x ? tg_permute(x, TG_DIMS(0, 1, 3, 2)) : NULL;
    tg_tensor *e = p ? tg_batch_norm(p, f->t[4], f->t[5], f->t[1], f->t[2],
                                     false, 0.1, 1e-5)
                     : NULL;
    tg_tensor *t = e ? tg_batch_norm(p, NULL, NULL, NULL, NULL, true, 0.1,
                                     1e-5)
                     : NULL;
    tg_tensor *y = t ? tg_mul(e, t) : NULL;
    tg_release(x);
    tg_release(p);
    tg_release(e);
    tg_release(t);
    return backward_and_clear(y ? sum_all(y) : NULL, f->t, 3);
}

static int run_batch_norm(fixture *f)
{
    tg_tensor *mean = NULL, *invstd = NULL;
    tg_batch_norm_options o = tg_batch_norm_defaults();
    tg_tensor *y = tg_batch_norm_ex(f->t[0], f->t[4], f->t[5], f->t[1],
                                    f->t[2], &o, &mean, &invstd);
    tg_release(mean);
    tg_release(invstd);
    return backward_and_clear(y ? weighted_sum(y, f->t[3]) : NULL, f->t, 3);
}

static int run_batch_norm_composed(fixture *f)
{
    tg_batch_norm_options o = tg_batch_norm_defaults();
    tg_tensor *y = tg_batch_norm_composed(f->t[0], f->t[4], f->t[5], f->t[1],
                                          f->t[2], &o);
    return backward_and_clear(y ? weighted_sum(y, f->t[3]) : NULL, f->t, 3);
}

/* The forward alone: a call that fails must not have updated the running
 * statistics (the next, successful one would count the batch twice). */
static int run_batch_norm_forward(fixture *f)
{
    return done(tg_batch_norm(f->t[0], f->t[4], f->t[5], f->t[1], f->t[2],
                              true, 0.1, 1e-5));
}

static int run_batch_norm_composed_forward(fixture *f)
{
    tg_batch_norm_options o = tg_batch_norm_defaults();
    return done(tg_batch_norm_composed(f->t[0], f->t[4], f->t[5], f->t[1],
                                       f->t[2], &o));
}

static const char *running_stats_unchanged(fixture *f)
{
    if (!same_values(f->t[4], f->ref[0]))
        return "the running mean changed";
    if (!same_values(f->t[5], f->ref[1]))
        return "the running variance changed";
    return NULL;
}

/* ------------------------------------------------------------------ losses */

static int setup_loss(fixture *f)
{
    tg_manual_seed(5);
    f->t[0] = randn(TG_SHAPE(4, 3), TG_FLOAT32, true); // logits
    const int64_t labels[] = {0, 2, 1, 2};
    f->t[1] = tg_from_array(labels, TG_SHAPE(4), TG_INT64);
    f->t[2] = tg_rand(TG_SHAPE(4, 3), TG_FLOAT32); // targets in [0, 1)
    return f->t[2] ? 0 : -1;
}

static int run_mse(fixture *f)
{
    return backward_and_clear(
        tg_mse_loss(f->t[0], f->t[2], TG_REDUCTION_MEAN), f->t, 1);
}

static int run_nll(fixture *f)
{
    tg_tensor *l = tg_log_softmax(f->t[0], 1);
    tg_tensor *y = l ? tg_nll_loss(l, f->t[1], TG_REDUCTION_SUM) : NULL;
    tg_release(l);
    return backward_and_clear(y, f->t, 1);
}

static int run_cross_entropy(fixture *f)
{
    return backward_and_clear(
        tg_cross_entropy(f->t[0], f->t[1], TG_REDUCTION_MEAN), f->t, 1);
}

static int run_bce(fixture *f)
{
    tg_tensor *y = tg_binary_cross_entropy_with_logits(f->t[0], f->t[2],
                                                       TG_REDUCTION_NONE);
    return backward_and_clear(y ? weighted_sum(y, f->t[2]) : NULL, f->t, 1);
}

/* --------------------------------------------------------------- indexing */

/* x (4, 3) float64 needing grad, a non-contiguous view of it, and int64
 * indices: (2, 3) with repeats and a negative one for x[idx], (5,) for
 * index_select, (4, 2) for gather. */
static int setup_index(fixture *f)
{
    tg_manual_seed(6);
    f->t[0] = randn(TG_SHAPE(4, 3), TG_FLOAT64, true);
    const int64_t rows[] = {3, 0, 3, -1, 1, 3};
    f->t[1] = tg_from_array(rows, TG_SHAPE(2, 3), TG_INT64);
    const int64_t sel[] = {2, 2, 0, 1, 2};
    f->t[2] = tg_from_array(sel, TG_SHAPE(5), TG_INT64);
    const int64_t cols[] = {0, 2, 1, 1, 2, 2, 0, 1};
    f->t[3] = tg_from_array(cols, TG_SHAPE(4, 2), TG_INT64);
    return f->t[3] ? 0 : -1;
}

/* Forward and backward of x[idx], index_select along dim 1 of the
 * transposed x, and gather. */
static int run_index_ops(fixture *f)
{
    tg_tensor *a = tg_index(f->t[0], f->t[1]);
    tg_tensor *t = tg_transpose(f->t[0], 0, 1); // (3, 4), non-contiguous
    tg_tensor *b = t ? tg_index_select(t, 1, f->t[2]) : NULL;
    tg_tensor *c = tg_gather(f->t[0], 1, f->t[3]);
    tg_tensor *sa = a ? sum_all(a) : NULL;
    tg_tensor *sb = b ? sum_all(b) : NULL;
    tg_tensor *sc = c ? sum_all(c) : NULL;
    tg_tensor *ab = sa && sb ? tg_add(sa, sb) : NULL;
    tg_tensor *abc = ab && sc ? tg_add(ab, sc) : NULL;
    tg_release(ab);
    tg_release(sc);
    tg_release(sb);
    tg_release(sa);
    tg_release(t);
    return backward_and_clear(abc, f->t, 1);
}

static int run_one_hot(fixture *f)
{
    tg_tensor *a = tg_one_hot(f->t[3], -1);
    tg_tensor *b = a ? tg_one_hot(f->t[2], 5) : NULL;
    tg_release(a);
    return done(b);
}

/* ---------------------------------------------------------------- backward */

/* A small graph built once, with the hook off: every failure then happens
 * inside tg_backward, and the graph must survive it for the next try. The
 * gradients a complete backward gives are in ref[]. */
static tg_tensor *small_graph(fixture *f)
{
    tg_tensor *h = tg_matmul(f->t[0], f->t[1]);        // (3, 4)
    tg_tensor *a = h ? tg_tanh(h) : NULL;
    tg_tensor *b = a ? tg_add(a, f->t[2]) : NULL;      // bias (4,)
    tg_tensor *c = b ? tg_mul(b, a) : NULL;            // a used twice
    tg_tensor *s = c ? tg_softmax(c, 1) : NULL;
    tg_tensor *l = s ? weighted_sum(s, f->t[3]) : NULL;
    tg_release(h);
    tg_release(a);
    tg_release(b);
    tg_release(c);
    return l;
}

static int setup_graph(fixture *f)
{
    tg_manual_seed(6);
    f->t[0] = randn(TG_SHAPE(3, 2), TG_FLOAT64, true);
    f->t[1] = randn(TG_SHAPE(2, 4), TG_FLOAT64, true);
    f->t[2] = randn(TG_SHAPE(4), TG_FLOAT64, true);
    f->t[3] = randn(TG_SHAPE(3, 4), TG_FLOAT64, false);
    tg_tensor *l = small_graph(f);
    if (!l || tg_backward(l) < 0)
        return tg_release(l), -1;
    tg_release(l);
    for (int i = 0; i < 3; i++) {
        f->ref[i] = tg_clone(f->t[i]->grad);
        tg_clear_grad(f->t[i]);
    }
    f->t[4] = small_graph(f); // the loss the runs backpropagate from
    return f->t[4] ? 0 : -1;
}

static int run_backward(fixture *f)
{
    int rc = tg_backward(f->t[4]);
    for (int i = 0; rc == 0 && i < 3; i++)
        cr_assert(same_values(f->t[i]->grad, f->ref[i]),
                  "a backward after failed ones gives another gradient");
    for (int i = 0; i < 3; i++)
        tg_clear_grad(f->t[i]);
    return rc;
}

/* From a non-scalar root with its gradient given (converted to the
 * root's dtype), for two of the three leaves only. */
static int run_backward_options(fixture *f)
{
    tg_tensor *h = tg_matmul(f->t[0], f->t[1]);
    tg_tensor *y = h ? tg_add(h, f->t[2]) : NULL;
    tg_tensor *g = y ? tg_ones(TG_SHAPE(3, 4), TG_FLOAT32) : NULL;
    tg_backward_options o = {.grad = g, .inputs = f->t, .ninputs = 2};
    int rc = g ? tg_backward_ex(y, &o) : -1;
    tg_release(h);
    tg_release(y);
    tg_release(g);
    for (int i = 0; i < 3; i++)
        tg_clear_grad(f->t[i]);
    return rc;
}

/* Forward and backward both under the hook, with a retained gradient and
 * keep_tape. */
static int run_graph(fixture *f)
{
    tg_tensor *l = small_graph(f);
    tg_backward_options o = {.keep_tape = true};
    int rc = l ? tg_backward_ex(l, &o) : -1;
    tg_release(l);
    for (int i = 0; i < 3; i++)
        tg_clear_grad(f->t[i]);
    return rc;
}

static tg_tensor *gc_fn(const tg_tensor *const *in, int n, void *user)
{
    (void)n;
    (void)user;
    tg_tensor *p = tg_mul(in[0], in[1]);
    tg_tensor *y = p ? tg_tanh(p) : NULL;
    tg_release(p);
    return y;
}

static int setup_gradcheck(fixture *f)
{
    tg_manual_seed(7);
    f->t[0] = randn(TG_SHAPE(2), TG_FLOAT64, true);
    f->t[1] = randn(TG_SHAPE(2), TG_FLOAT64, true);
    tg_no_grad_begin();
    f->ref[0] = tg_clone(f->t[0]);
    f->ref[1] = tg_clone(f->t[1]);
    tg_no_grad_end();
    return f->ref[1] ? 0 : -1;
}

/* gradcheck moves each input element by +-eps and puts it back: also
 * when f fails half way. */
static const char *inputs_unchanged(fixture *f)
{
    for (int i = 0; i < 2; i++)
        if (!same_values(f->t[i], f->ref[i]))
            return "an input was left perturbed";
    return NULL;
}

static int run_gradcheck(fixture *f)
{
    tg_gradcheck_options o = tg_gradcheck_defaults();
    o.quiet = true;
    tg_gradcheck_result r;
    int rc = tg_gradcheck(gc_fn, NULL, f->t, 2, &o, &r);
    cr_assert(rc != 0, "gradcheck failed a correct function: %s", r.message);
    return rc == 1 ? 0 : -1;
}

static int run_gradcheck_fast(fixture *f)
{
    tg_gradcheck_options o = tg_gradcheck_defaults();
    o.quiet = true;
    o.fast_mode = true;
    int rc = tg_gradcheck(gc_fn, NULL, f->t, 2, &o, NULL);
    cr_assert(rc != 0, "gradcheck failed a correct function");
    return rc == 1 ? 0 : -1;
}

/* x * y with a backward of its own, keeping both inputs and a value. */
static tg_tensor *custom_forward(tg_ctx *ctx, const tg_tensor *const *in,
                                 int n, const void *args)
{
    (void)n;
    (void)args;
    if (tg_ctx_save(ctx, in[0]) < 0 || tg_ctx_save(ctx, in[1]) < 0)
        return NULL;
    *(double *)tg_ctx_data(ctx) = 1.0;
    return tg_mul(in[0], in[1]);
}

static int custom_backward(tg_ctx *ctx, const tg_tensor *g,
                           tg_tensor **grads)
{
    if (tg_ctx_needs_grad(ctx, 0) &&
        !(grads[0] = tg_mul(g, tg_ctx_saved(ctx, 1))))
        return -1;
    if (tg_ctx_needs_grad(ctx, 1) &&
        !(grads[1] = tg_mul(g, tg_ctx_saved(ctx, 0))))
        return -1;
    return 0;
}

static const tg_function custom_mul = {"CustomMulBackward", custom_forward,
                                       custom_backward, sizeof(double)};

static int run_function(fixture *f)
{
    const tg_tensor *in[] = {f->t[0], f->t[1]};
    tg_tensor *y = tg_function_apply(&custom_mul, in, 2, NULL);
    tg_tensor *t = y ? tg_tanh(y) : NULL;
    tg_release(y);
    return backward_and_clear(t ? sum_all(t) : NULL, f->t, 2);
}

/* A forward that returns its input: the library gives the output a
 * tensor of its own (an alias) to carry the node. */
static tg_tensor *identity_forward(tg_ctx *ctx, const tg_tensor *const *in,
                                   int n, const void *args)
{
    (void)ctx;
    (void)n;
    (void)args;
    return tg_retain((tg_tensor *)in[0]);
}

static int identity_backward(tg_ctx *ctx, const tg_tensor *g,
                             tg_tensor **grads)
{
    (void)ctx;
    grads[0] = tg_retain((tg_tensor *)g);
    return 0;
}

static const tg_function identity = {"IdentityBackward", identity_forward,
                                     identity_backward, 0};

/* The alias, and a gradient kept on a non-leaf (retain_grad). */
static int run_function_alias(fixture *f)
{
    const tg_tensor *in[] = {f->t[0]};
    tg_tensor *y = tg_function_apply(&identity, in, 1, NULL);
    tg_tensor *z = y ? tg_mul(y, f->t[1]) : NULL;
    int rc = z ? tg_retain_grad(z) : -1;
    tg_tensor *l = rc == 0 ? tg_sum(z, NULL, 0, false) : NULL;
    tg_release(y);
    rc = backward_and_clear(l, f->t, 2); // z lives on: its grad is written
    cr_assert(rc != 0 || z->grad, "the retained gradient is missing");
    tg_release(z);
    return rc;
}

static int setup_dot(fixture *f)
{
    if (setup_graph(f) < 0)
        return -1;
    f->sink = fopen("/dev/null", "w");
    return f->sink ? 0 : -1;
}

static int run_write_dot(fixture *f)
{
    tg_tensor *roots[] = {f->t[4], f->t[0]};
    return tg_tape_write_dot(f->sink, roots, 2, "a small graph");
}

/* ---------------------------------------------------------------- printing */

static int setup_print(fixture *f)
{
    tg_manual_seed(8);
    f->t[0] = randn(TG_SHAPE(4, 5), TG_FLOAT32, true);
    f->t[1] = tg_arange(0, 2000, 1, TG_INT64); // summarised with "..."
    f->sink = fopen("/dev/null", "w");
    return f->t[1] && f->sink ? 0 : -1;
}

static int run_format(fixture *f)
{
    char *s = tg_format(f->t[0]);
    char *u = s ? tg_format(f->t[1]) : NULL;
    int rc = u ? 0 : -1;
    free(s);
    free(u);
    return rc;
}

static int run_fprint(fixture *f)
{
    return tg_fprint(f->sink, f->t[0]);
}

/* ---------------------------------------------------------------- modules */

static int run_linear_new(fixture *f)
{
    (void)f;
    tg_module *m = tg_linear_new(3, 2, true);
    tg_module_free(m);
    return m ? 0 : -1;
}

static int run_embedding_flatten_new(fixture *f)
{
    (void)f;
    tg_module *e = tg_embedding_new(27, 10);
    tg_module *fl = e ? tg_flatten_new(1, -1) : NULL;
    tg_module_free(fl);
    tg_module_free(e);
    return fl ? 0 : -1;
}

static int run_sequential_new(fixture *f)
{
    (void)f;
    tg_module *m = TG_SEQUENTIAL(tg_linear_new(3, 4, true), tg_relu_new(),
                                 tg_dropout_new(0.1),
                                 tg_linear_new(4, 2, false));
    tg_module_free(m);
    return m ? 0 : -1;
}

static int mlp_new(tg_norm_kind norm, tg_activation act)
{
    tg_module *m = tg_mlp_new(3, TG_SHAPE(4, 5), 2, norm, act);
    tg_module_free(m);
    return m ? 0 : -1;
}

static int run_mlp_new_plain(fixture *f)
{
    (void)f;
    return mlp_new(TG_NORM_NONE, TG_ACT_GELU);
}

static int run_mlp_new_batch(fixture *f)
{
    (void)f;
    return mlp_new(TG_NORM_BATCH, TG_ACT_RELU);
}

static int run_mlp_new_layer(fixture *f)
{
    (void)f;
    return mlp_new(TG_NORM_LAYER, TG_ACT_TANH);
}

static int run_norm_layers_new(fixture *f)
{
    (void)f;
    tg_batch_norm_config c = tg_batch_norm_config_defaults();
    c.cumulative = true;
    tg_module *m = TG_SEQUENTIAL(tg_layer_norm_new(TG_SHAPE(4, 5), 1e-5,
                                                   true),
                                 tg_batch_norm2d_new(4, &c));
    int rc = m ? tg_sequential_append(m, tg_batch_norm1d_new(4, NULL)) : -1;
    tg_module_free(m);
    return rc;
}

/* The list of m's parameters, made with the hook off (it allocates). */
static void list_params(fixture *f)
{
    tg_named_tensor items[16];
    f->nparams = f->m ? tg_module_named_parameters(f->m, items, 16) : 0;
    if (f->nparams > 16)
        f->nparams = 16; // (the models here have at most 8)
    for (int i = 0; i < f->nparams; i++)
        f->params[i] = items[i].tensor;
}

/* A BatchNorm1d layer alone, in training mode: a forward that fails must
 * leave its running statistics and its batch count as they were. */
static int setup_batch_norm_module(fixture *f)
{
    tg_manual_seed(10);
    tg_batch_norm_config c = tg_batch_norm_config_defaults();
    c.cumulative = true;
    f->m = tg_batch_norm1d_new(3, &c);
    f->t[0] = randn(TG_SHAPE(4, 3, 2), TG_FLOAT32, true);
    list_params(f);
    f->ref[0] = f->m ? module_state(f->m) : NULL;
    return f->ref[0] ? 0 : -1;
}

static int run_module_forward(fixture *f)
{
    return done(tg_module_forward(f->m, f->t[0]));
}

static int setup_mlp(fixture *f, tg_norm_kind norm)
{
    tg_manual_seed(9);
    f->m = tg_mlp_new(3, TG_SHAPE(4), 2, norm, TG_ACT_RELU);
    f->t[0] = randn(TG_SHAPE(5, 3), TG_FLOAT32, false);
    const int64_t labels[] = {0, 1, 1, 0, 1};
    f->t[1] = tg_from_array(labels, TG_SHAPE(5), TG_INT64);
    list_params(f);
    f->ref[0] = f->m ? module_state(f->m) : NULL;
    f->ref[1] = f->m ? eval_forward(f->m, f->t[0]) : NULL;
    return f->ref[1] ? 0 : -1;
}

static int setup_mlp_plain(fixture *f)
{
    return setup_mlp(f, TG_NORM_NONE);
}

static int setup_mlp_batch(fixture *f)
{
    return setup_mlp(f, TG_NORM_BATCH);
}

static int setup_mlp_layer(fixture *f)
{
    return setup_mlp(f, TG_NORM_LAYER);
}

/* makemore's first layers: Embedding(27, 10), Flatten, Linear(30, 4), with
 * (5, 3) contexts; sum_all of the output as the loss. */
static int setup_embedding(fixture *f)
{
    tg_manual_seed(10);
    f->m = tg_sequential_new(NULL, 0);
    if (!f->m || tg_sequential_append(f->m, tg_embedding_new(27, 10)) < 0 ||
        tg_sequential_append(f->m, tg_flatten_new(1, -1)) < 0 ||
        tg_sequential_append(f->m, tg_linear_new(30, 4, true)) < 0)
        return -1;
    f->t[0] = tg_randint(0, 27, TG_SHAPE(5, 3));
    list_params(f);
    return f->t[0] ? 0 : -1;
}

static int run_embedding_backward(fixture *f)
{
    tg_tensor *y = tg_module_forward(f->m, f->t[0]);
    tg_tensor *l = y ? sum_all(y) : NULL;
    int rc = l ? tg_backward(l) : -1;
    tg_release(l);
    module_clear_grads(f);
    return rc;
}

/* A training-mode forward and backward through the module. */
static int run_module_backward(fixture *f)
{
    tg_tensor *y = tg_module_forward(f->m, f->t[0]);
    tg_tensor *l = y ? tg_cross_entropy(y, f->t[1], TG_REDUCTION_MEAN)
                     : NULL;
    tg_release(y);
    int rc = l ? tg_backward(l) : -1;
    tg_release(l);
    module_clear_grads(f);
    return rc;
}

/* In eval mode a forward changes nothing, failed or not. */
static int run_module_eval(fixture *f)
{
    tg_module_train(f->m, false);
    tg_tensor *y = tg_module_forward(f->m, f->t[0]);
    tg_module_train(f->m, true);
    return done(y);
}

static const char *module_and_forward_unchanged(fixture *f)
{
    const char *changed = module_unchanged(f);
    if (changed)
        return changed;
    tg_tensor *y = eval_forward(f->m, f->t[0]);
    bool same = same_values(y, f->ref[1]);
    tg_release(y);
    return same ? NULL : "the module's forward changed";
}

static int run_module_format(fixture *f)
{
    char *s = tg_module_format(f->m);
    free(s);
    return s ? 0 : -1;
}

static int run_module_to_dtype(fixture *f)
{
    return tg_module_to_dtype(f->m, TG_FLOAT64);
}

/* ------------------------------------------------------------- optimisers */

/* The MLP with gradients from one backward, and an optimiser. */
static int setup_optim(fixture *f, tg_norm_kind norm, bool adam, int steps)
{
    if (setup_mlp(f, norm) < 0)
        return -1;
    tg_sgd_config sgd = {.lr = 0.1};
    sgd.momentum = 0.9;
    f->opt = adam ? tg_adam_new(f->m, NULL) : tg_sgd_new(f->m, &sgd);
    if (!f->opt)
        return -1;
    tg_tensor *y = tg_module_forward(f->m, f->t[0]);
    tg_tensor *l = y ? tg_cross_entropy(y, f->t[1], TG_REDUCTION_MEAN)
                     : NULL;
    tg_release(y);
    int rc = l ? tg_backward(l) : -1;
    tg_release(l);
    for (int i = 0; rc == 0 && i < steps; i++)
        rc = tg_optimizer_step(f->opt);
    tg_release(f->ref[0]);
    tg_release(f->ref[1]);
    f->ref[0] = module_state(f->m);
    f->ref[1] = eval_forward(f->m, f->t[0]);
    return rc;
}

static int setup_sgd_first(fixture *f)
{
    return setup_optim(f, TG_NORM_NONE, false, 0);
}

/* After a first step, a new parameter that is not contiguous: the next
 * step makes its state and a contiguous copy, and must change nothing,
 * neither it nor the parameters that have their state, when that fails. */
static int setup_step_new_param(fixture *f, tg_norm_kind norm, bool adam)
{
    if (setup_optim(f, norm, adam, 1) < 0)
        return -1;
    tg_tensor *base = tg_randn(TG_SHAPE(3, 2), TG_FLOAT32);
    f->t[2] = base ? tg_transpose(base, 0, 1) : NULL; // a leaf view
    tg_release(base);
    if (!f->t[2] || tg_set_requires_grad(f->t[2], true) < 0 ||
        tg_optimizer_add_parameter(f->opt, f->t[2]) < 0)
        return -1;
    tg_tensor *l = sum_all(tg_mul_scalar(f->t[2], 3.0));
    int rc = l ? tg_backward(l) : -1;
    tg_release(l);
    tg_no_grad_begin();
    f->ref[2] = tg_clone(f->t[2]);
    tg_no_grad_end();
    return rc == 0 && f->ref[2] ? 0 : -1;
}

static int setup_sgd_new_param(fixture *f)
{
    return setup_step_new_param(f, TG_NORM_NONE, false);
}

static int setup_adam_new_param(fixture *f)
{
    return setup_step_new_param(f, TG_NORM_LAYER, true);
}

static const char *step_changed_nothing(fixture *f)
{
    const char *changed = module_and_forward_unchanged(f);
    if (changed)
        return changed;
    return same_values(f->t[2], f->ref[2]) ? NULL
                                           : "the new parameter changed";
}

static int setup_adam_first(fixture *f)
{
    return setup_optim(f, TG_NORM_BATCH, true, 0);
}


static int run_step(fixture *f)
{
    int64_t steps = tg_optimizer_steps(f->opt);
    int rc = tg_optimizer_step(f->opt);
    cr_assert_eq(tg_optimizer_steps(f->opt), steps + (rc == 0),
                 "a failed step was counted");
    return rc;
}

static int run_optimizer_new(fixture *f)
{
    tg_optimizer *o = tg_adamw_new(f->m, NULL);
    int rc = o ? tg_optimizer_add_parameter(o, f->t[2]) : -1;
    tg_optimizer_free(o);
    return rc;
}

static int setup_optimizer_new(fixture *f)
{
    if (setup_mlp(f, TG_NORM_BATCH) < 0)
        return -1;
    f->t[2] = randn(TG_SHAPE(2), TG_FLOAT32, true);
    return f->t[2] ? 0 : -1;
}

/* ------------------------------------------------------------ checkpoints */

static int setup_save(fixture *f)
{
    if (setup_mlp(f, TG_NORM_BATCH) < 0 || make_dir(f) < 0)
        return -1;
    return 0;
}

static int run_module_save(fixture *f)
{
    return tg_module_save(f->m, f->dir);
}

/* A checkpoint on disk, then different values in the module: a load that
 * fails must leave those. */
static int setup_load(fixture *f)
{
    if (setup_save(f) < 0 || tg_module_save(f->m, f->dir) < 0)
        return -1;
    tg_module *other = tg_mlp_new(3, TG_SHAPE(4), 2, TG_NORM_BATCH,
                                  TG_ACT_RELU);
    if (!other)
        return -1;
    tg_module_free(f->m);
    f->m = other;
    tg_release(f->ref[0]);
    tg_release(f->ref[1]);
    f->ref[0] = module_state(f->m);
    f->ref[1] = eval_forward(f->m, f->t[0]);
    return f->ref[1] ? 0 : -1;
}

static int run_module_load(fixture *f)
{
    return tg_module_load(f->m, f->dir);
}

static int setup_npy(fixture *f)
{
    if (setup_x234(f) < 0 || make_dir(f) < 0)
        return -1;
    char path[128];
    snprintf(path, sizeof path, "%s/x.npy", f->dir);
    return tg_save_npy(path, f->t[0]);
}

static int run_save_npy(fixture *f)
{
    char path[128];
    snprintf(path, sizeof path, "%s/y.npy", f->dir);
    tg_tensor *t = tg_transpose(f->t[0], 0, 1); // written in C order
    int rc = t ? tg_save_npy(path, t) : -1;
    tg_release(t);
    return rc;
}

static int run_load_npy(fixture *f)
{
    char path[128];
    snprintf(path, sizeof path, "%s/x.npy", f->dir);
    tg_tensor *t = tg_load_npy(path);
    if (t)
        cr_assert(same_values(t, f->t[0]), "the loaded array differs");
    return done(t);
}

static int run_npy_parse(fixture *f)
{
    char path[128];
    snprintf(path, sizeof path, "%s/x.npy", f->dir);
    FILE *in = fopen(path, "rb");
    unsigned char bytes[512];
    size_t n = in ? fread(bytes, 1, sizeof bytes, in) : 0;
    if (in)
        fclose(in);
    cr_assert(n > 0 && n < sizeof bytes, "cannot read back %s", path);
    return done(tg_npy_parse(bytes, n, "x.npy"));
}

/* -------------------------------------------------------------------- data */

static int run_spirals(fixture *f)
{
    (void)f;
    tg_dataset d = {0};
    int rc = tg_make_spirals(5, 3, 0.1, NULL, &d);
    cr_assert(rc == 0 || (!d.x && !d.y), "a failed call left tensors");
    tg_dataset_free(&d);
    return rc;
}

static int run_blobs(fixture *f)
{
    (void)f;
    tg_dataset d = {0};
    int rc = tg_make_blobs(4, 3, 0.5, NULL, &d);
    tg_dataset_free(&d);
    return rc;
}

static int setup_data(fixture *f)
{
    return tg_make_moons(6, 0.1, NULL, &f->data);
}

static int run_split(fixture *f)
{
    tg_dataset train = {0}, val = {0};
    int rc = tg_dataset_split(&f->data, 0.25, NULL, &train, &val);
    cr_assert(rc == 0 || (!train.x && !train.y && !val.x && !val.y),
              "a failed split left tensors");
    tg_dataset_free(&train);
    tg_dataset_free(&val);
    return rc;
}

static int run_batches(fixture *f)
{
    tg_batches *it = tg_batches_new(&f->data, 5, true, false, NULL);
    if (!it)
        return -1;
    tg_tensor *x, *y;
    int64_t rows = 0;
    while (tg_batches_next(it, &x, &y)) {
        rows += x->shape[0];
        tg_release(x);
        tg_release(y);
    }
    tg_batches_free(it);
    /* The iterator returns false at the end of the epoch and when a batch
     * cannot be made; only the error tells them apart. */
    return rows == 12 ? 0 : -1;
}

static int run_accuracy(fixture *f)
{
    tg_tensor *logits = tg_ones(TG_SHAPE(12, 2), TG_FLOAT32);
    double a = logits ? tg_accuracy(logits, f->data.y) : NAN;
    tg_release(logits);
    return isnan(a) ? -1 : 0;
}

/* ---------------------------------------------------------- training step */

static int setup_training(fixture *f)
{
    if (setup_mlp(f, TG_NORM_BATCH) < 0)
        return -1;
    f->opt = tg_adam_new(f->m, NULL);
    return f->opt ? 0 : -1;
}

/* Forward, loss, backward, step: a whole iteration of a training loop. */
static int run_training_step(fixture *f)
{
    tg_optimizer_zero_grad(f->opt);
    tg_tensor *y = tg_module_forward(f->m, f->t[0]);
    tg_tensor *l = y ? tg_cross_entropy(y, f->t[1], TG_REDUCTION_MEAN)
                     : NULL;
    tg_release(y);
    int rc = l ? tg_backward(l) : -1;
    tg_release(l);
    rc = rc == 0 ? tg_optimizer_step(f->opt) : -1;
    module_clear_grads(f);
    return rc;
}

/* ------------------------------------------------------------- the table */

/* ------------------------------------------------ joining and splitting */

/* cat, stack, split, split_sizes, chunk and max_dim forward on x (2, 3, 4). */
static int run_join(fixture *f)
{
    const tg_tensor *xx[] = {f->t[0], f->t[0]};
    tg_tensor *c = tg_cat(xx, 2, 1);                         // (2, 6, 4)
    tg_tensor *s = c ? tg_stack(xx, 2, -1) : NULL;           // (2, 3, 4, 2)
    tg_tensor *p[3] = {0}, *q[2] = {0}, *r[2] = {0}, *idx = NULL;
    int np = s ? tg_split(c, 4, 1, p, 3) : -1;               // 4, 2
    int nq = np == 2 ? tg_split_sizes(f->t[0], TG_SHAPE(1, 2), 1, q) : -1;
    int nr = nq == 2 ? tg_chunk(f->t[0], 2, -1, r, 2) : -1;
    tg_tensor *m = nr == 2 ? tg_max_dim(f->t[0], 1, false, &idx) : NULL;
    int rc = m ? 0 : -1;
    for (int j = 0; j < 3; j++)
        tg_release(p[j]);
    for (int j = 0; j < 2; j++) {
        tg_release(q[j]);
        tg_release(r[j]);
    }
    tg_release(idx);
    tg_release(m);
    tg_release(s);
    tg_release(c);
    return rc;
}

/* The same ops on a leaf that requires grad, with their backward; the cat
 * has nine inputs (more than TG_MAX_INPUTS). */
static int run_join_backward(fixture *f)
{
    tg_tensor *rows[9] = {0};
    tg_tensor *p[3] = {0};
    int made = 0;
    for (; made < 9; made++)
        if (!(rows[made] = tg_select(f->t[0], 1, made % 3)))
            break;
    tg_tensor *c = made == 9
                       ? tg_cat((const tg_tensor *const *)rows, 9, -1)
                       : NULL;                                 // (2, 36)
    int np = c ? tg_chunk(c, 3, 1, p, 3) : -1;                 // 3 x (2, 12)
    tg_tensor *s = np == 3 ? tg_stack((const tg_tensor *const *)p, 3, 0)
                           : NULL;                             // (3, 2, 12)
    tg_tensor *m = s ? tg_min_dim(s, 0, false, NULL) : NULL;   // (2, 12)
    tg_tensor *y = m ? tg_sum(m, NULL, 0, false) : NULL;
    for (int j = 0; j < made; j++)
        tg_release(rows[j]);
    for (int j = 0; j < 3; j++)
        tg_release(p[j]);
    tg_release(c);
    tg_release(s);
    tg_release(m);
    return backward_and_clear(y, f->t, 1);
}

static const oom_case oom_cases[] = {
    {"tg_zeros", NULL, run_zeros, NULL},
    {"tg_from_array", NULL, run_from_array, NULL},
    {"tg_arange", NULL, run_arange, NULL},
    {"tg_randn", NULL, run_randn, NULL},
    {"tg_generator_new, tg_rand_gen", NULL, run_generator, NULL},
    {"tg_multinomial", NULL, run_multinomial, NULL},
    {"tg_eye, tg_linspace, tg_ones_like", NULL, run_eye_linspace_like, NULL},
    {"tg_reshape (a copy)", setup_x234, run_reshape_copy, x_unchanged},
    {"tg_permute", setup_x234, run_permute, x_unchanged},
    {"tg_expand", setup_x234, run_expand, x_unchanged},
    {"views with backward", setup_x234_grad, run_views_backward, NULL},
    {"tg_clone, tg_to_dtype", setup_x234, run_dtype_copies, x_unchanged},
    {"tg_copy_ (broadcast, converted)", setup_x234, run_copy_broadcast,
     x_unchanged},
    {"broadcast elementwise", setup_ab, run_broadcast_forward, NULL},
    {"comparisons", setup_ab, run_compare, NULL},
    {"elementwise with backward", setup_ab, run_elementwise_backward, NULL},
    {"unary ops with backward", setup_ab, run_unary_backward, NULL},
    {"reductions", setup_x234, run_reductions, x_unchanged},
    {"tg_narrow, tg_squeeze, tg_min, tg_argmin", setup_x234_grad,
     run_min_narrow_squeeze, NULL},
    {"reductions with backward", setup_x234_grad, run_reductions_backward,
     NULL},
    {"tg_histogram", setup_x234, run_histogram, NULL},
    {"tg_matmul", setup_matmul, run_matmul, NULL},
    {"tg_matmul_reference", setup_matmul, run_matmul_reference, NULL},
    {"tg_matmul of vectors", setup_matmul, run_matmul_vectors, NULL},
    {"tg_softmax, tg_log_softmax", setup_x234_grad, run_softmax, NULL},
    {"tg_layer_norm_ex", setup_norm, run_layer_norm, NULL},
    {"tg_layer_norm_composed", setup_norm, run_layer_norm_composed, NULL},
    {"tg_layer_norm without affine", setup_norm, run_layer_norm_plain,
     NULL},
    {"tg_batch_norm_ex", setup_norm, run_batch_norm, NULL},
    {"tg_batch_norm eval (N, C, H, W), and without affine", setup_norm,
     run_batch_norm_eval_2d, NULL},
    {"tg_batch_norm_composed", setup_norm, run_batch_norm_composed, NULL},
    {"tg_batch_norm forward", setup_norm, run_batch_norm_forward,
     running_stats_unchanged},
    {"tg_batch_norm_composed forward", setup_norm,
     run_batch_norm_composed_forward, running_stats_unchanged},
    {"tg_mse_loss", setup_loss, run_mse, NULL},
    {"tg_nll_loss", setup_loss, run_nll, NULL},
    {"tg_cross_entropy", setup_loss, run_cross_entropy, NULL},
    {"tg_binary_cross_entropy_with_logits", setup_loss, run_bce, NULL},
    {"tg_index, tg_index_select, tg_gather with backward", setup_index,
     run_index_ops, NULL},
    {"tg_one_hot", setup_index, run_one_hot, NULL},
    {"tg_backward of a built graph", setup_graph, run_backward, NULL},
    {"forward and tg_backward_ex", setup_graph, run_graph, NULL},
    {"tg_backward_ex with a gradient and inputs", setup_graph,
     run_backward_options, NULL},
    {"tg_gradcheck", setup_gradcheck, run_gradcheck, inputs_unchanged},
    {"tg_gradcheck fast mode", setup_gradcheck, run_gradcheck_fast,
     inputs_unchanged},
    {"tg_function_apply", setup_gradcheck, run_function, NULL},
    {"tg_function_apply returning its input, tg_retain_grad",
     setup_gradcheck, run_function_alias, NULL},
    {"tg_tape_write_dot", setup_dot, run_write_dot, NULL},
    {"tg_format", setup_print, run_format, NULL},
    {"tg_fprint", setup_print, run_fprint, NULL},
    {"tg_linear_new", NULL, run_linear_new, NULL},
    {"tg_sequential_new", NULL, run_sequential_new, NULL},
    {"tg_embedding_new, tg_flatten_new", NULL, run_embedding_flatten_new,
     NULL},
    {"Embedding, Flatten, Linear: forward and backward", setup_embedding,
     run_embedding_backward, NULL},
    {"tg_mlp_new", NULL, run_mlp_new_plain, NULL},
    {"tg_mlp_new with BatchNorm", NULL, run_mlp_new_batch, NULL},
    {"tg_mlp_new with LayerNorm", NULL, run_mlp_new_layer, NULL},
    {"tg_layer_norm_new, tg_batch_norm2d_new, tg_sequential_append", NULL,
     run_norm_layers_new, NULL},
    {"BatchNorm1d training forward", setup_batch_norm_module,
     run_module_forward, module_unchanged},
    {"MLP forward and backward", setup_mlp_plain, run_module_backward, NULL},
    {"MLP with BatchNorm, forward and backward", setup_mlp_batch,
     run_module_backward, NULL},
    {"MLP with LayerNorm, forward and backward", setup_mlp_layer,
     run_module_backward, NULL},
    {"MLP with BatchNorm, eval forward", setup_mlp_batch, run_module_eval,
     module_and_forward_unchanged},
    {"tg_module_format", setup_mlp_batch, run_module_format, NULL},
    {"tg_module_to_dtype", setup_mlp_batch, run_module_to_dtype,
     module_and_forward_unchanged},
    {"tg_adamw_new, tg_optimizer_add_parameter", setup_optimizer_new,
     run_optimizer_new, NULL},
    {"SGD first step", setup_sgd_first, run_step,
     module_and_forward_unchanged},
    {"SGD step with a new parameter", setup_sgd_new_param, run_step,
     step_changed_nothing},
    {"Adam first step", setup_adam_first, run_step,
     module_and_forward_unchanged},
    {"Adam step with a new parameter", setup_adam_new_param, run_step,
     step_changed_nothing},
    {"tg_module_save", setup_save, run_module_save, NULL},
    {"tg_module_load", setup_load, run_module_load,
     module_and_forward_unchanged},
    {"tg_save_npy", setup_npy, run_save_npy, NULL},
    {"tg_load_npy", setup_npy, run_load_npy, NULL},
    {"tg_npy_parse", setup_npy, run_npy_parse, NULL},
    {"tg_make_spirals", NULL, run_spirals, NULL},
    {"tg_make_blobs", NULL, run_blobs, NULL},
    {"tg_dataset_split", setup_data, run_split, NULL},
    {"tg_batches_new, tg_batches_next", setup_data, run_batches, NULL},
    {"tg_accuracy", setup_data, run_accuracy, NULL},
    {"training step", setup_training, run_training_step, NULL},
    {"tg_cat, tg_stack, tg_split, tg_split_sizes, tg_chunk, tg_max_dim",
     setup_x234, run_join, x_unchanged},
    {"joining and splitting with backward, tg_min_dim", setup_x234_grad,
     run_join_backward, NULL},
};

#define NCASES ((int)(sizeof oom_cases / sizeof *oom_cases))

ParameterizedTestParameters(alloc_failure, sweep)
{
    static int index[NCASES];
    for (int i = 0; i < NCASES; i++)
        index[i] = i;
    return cr_make_param_array(int, index, NCASES);
}

ParameterizedTest(int *i, alloc_failure, sweep, .init = tg_test_setup)
{
    sweep_report r;
    bool ok = sweep(&oom_cases[*i], &r);
    cr_assert(ok, "%s", r.problem);
    cr_assert_gt(r.failed_runs, 0);
    tg_test_teardown();
}

/* ------------------------------------------- the checker can fail a case */

/* Operations that are wrong on purpose; each must fail the sweep with the
 * fragment given. What they leak is kept here and released after. */
static tg_tensor *kept;

/* Forgets a tensor when the second allocation fails. */
static int run_leaks_tensor(fixture *f)
{
    (void)f;
    tg_tensor *x = tg_zeros(TG_SHAPE(2), TG_FLOAT32);
    tg_tensor *y = x ? tg_ones(TG_SHAPE(2), TG_FLOAT32) : NULL;
    if (!y) {
        kept = x; // should have been released
        return -1;
    }
    tg_release(x);
    tg_release(y);
    return 0;
}

/* Falls back to a made-up answer instead of failing. */
static int run_swallows(fixture *f)
{
    (void)f;
    tg_tensor *x = tg_zeros(TG_SHAPE(2), TG_FLOAT32);
    tg_release(x);
    tg_clear_error();
    return 0;
}

/* Reports something else than the cause. */
static int run_wrong_message(fixture *f)
{
    (void)f;
    tg_tensor *x = tg_zeros(TG_SHAPE(2), TG_FLOAT32);
    if (!x) {
        tg_error("tg_load_npy", "cannot open x.npy");
        return -1;
    }
    tg_release(x);
    return 0;
}

/* Reports without naming itself. */
static int run_unnamed(fixture *f)
{
    (void)f;
    tg_tensor *x = tg_zeros(TG_SHAPE(2), TG_FLOAT32);
    if (!x)
        tg_error("while making x", "out of memory");
    return done(x);
}

/* Fails silently. */
static int run_silent(fixture *f)
{
    (void)f;
    tg_tensor *x = tg_zeros(TG_SHAPE(2), TG_FLOAT32);
    tg_clear_error();
    handler_calls = 0;
    return done(x);
}

/* Leaves gradients disabled on its failure path. */
static int run_leaves_no_grad(fixture *f)
{
    (void)f;
    tg_no_grad_begin();
    tg_tensor *x = tg_zeros(TG_SHAPE(2), TG_FLOAT32);
    if (!x)
        return -1;
    tg_no_grad_end();
    return done(x);
}

/* Writes into its argument before the allocation that fails. */
static int run_half_update(fixture *f)
{
    tg_fill_(f->t[0], 5.0);
    return done(tg_zeros(TG_SHAPE(2), TG_FLOAT32));
}

/* Leaves a tape node alive: a graph whose output it keeps. */
static int run_leaks_node(fixture *f)
{
    tg_tensor *y = tg_mul_scalar(f->t[0], 2);
    tg_tensor *z = y ? tg_exp(y) : NULL;
    if (!z) {
        kept = y;
        return -1;
    }
    tg_release(y);
    tg_release(z);
    return 0;
}

static int setup_leaf(fixture *f)
{
    f->t[0] = tg_ones(TG_SHAPE(2, 3), TG_FLOAT32);
    f->ref[0] = tg_clone(f->t[0]);
    return f->ref[0] && tg_set_requires_grad(f->t[0], true) == 0 ? 0 : -1;
}

/* A block it forgets on the failure path, kept with its address hidden
 * (LeakSanitizer does not see a masked pointer, so the block counts as
 * lost) and freed after the check. */
#if HAVE_LSAN
#define HIDE ((uintptr_t)0x5a5a5a5a5a5a5a5aULL)
static uintptr_t hidden_blocks[8]; // one per failed run
static int nhidden;

static int run_leaks_malloc(fixture *f)
{
    (void)f;
    void *scratch = malloc(64);
    tg_tensor *x = tg_zeros(TG_SHAPE(2), TG_FLOAT32);
    if (!x) {
        if (nhidden == 8) // (the sweep fails this case at its first run)
            free(scratch);
        else // should have been freed
            hidden_blocks[nhidden++] = (uintptr_t)scratch ^ HIDE;
        scratch = NULL;
        return -1;
    }
    free(scratch);
    return done(x);
}
#endif

typedef struct broken_case {
    oom_case c;
    const char *expected; // in the sweep's report
} broken_case;

static const broken_case broken_cases[] = {
    {{"leaks a tensor", NULL, run_leaks_tensor, NULL}, "1 tensors leaked"},
    {{"swallows the failure", NULL, run_swallows, NULL},
     "reported success although an allocation failed"},
    {{"wrong message", NULL, run_wrong_message, NULL},
     "the error does not say \"out of memory\": tg_load_npy: cannot open"},
    {{"unnamed", NULL, run_unnamed, NULL},
     "does not start with the name of who reports it"},
    {{"silent", NULL, run_silent, NULL}, "failed without reporting an error"},
    {{"no_grad", NULL, run_leaves_no_grad, NULL},
     "gradients were left disabled"},
    {{"half update", setup_x234, run_half_update, x_unchanged},
     "the tensor's values changed"},
    {{"leaks a node", setup_leaf, run_leaks_node, NULL},
     "1 tensors leaked"},
#if HAVE_LSAN
    {{"leaks a malloc", NULL, run_leaks_malloc, NULL},
     "LeakSanitizer found memory"},
#endif
};

#define NBROKEN ((int)(sizeof broken_cases / sizeof *broken_cases))

ParameterizedTestParameters(alloc_failure, checker_catches)
{
    static int index[NBROKEN];
    for (int i = 0; i < NBROKEN; i++)
        index[i] = i;
    return cr_make_param_array(int, index, NBROKEN);
}

ParameterizedTest(int *i, alloc_failure, checker_catches,
                  .init = tg_test_setup)
{
    const broken_case *b = &broken_cases[*i];
    sweep_report r;
    kept = NULL;
    bool ok = sweep(&b->c, &r);
    tg_release(kept);
#if HAVE_LSAN
    while (nhidden > 0)
        free((void *)(hidden_blocks[--nhidden] ^ HIDE));
#endif
    while (!tg_is_grad_enabled()) // what run_leaves_no_grad left
        tg_no_grad_end();
    cr_assert(!ok, "the checker passed %s", b->c.name);
    cr_assert(strstr(r.problem, b->expected),
              "expected \"%s\" in the report, got: %s", b->expected,
              r.problem);
    tg_test_teardown();
}

/* A correct operation passes, and the report counts its runs: tg_zeros
 * makes its tensor, storage header and data in one allocation, so the
 * sweep fails it once and completes at the second run. */
TG_TEST(alloc_failure, checker_counts_runs)
{
    sweep_report r;
    cr_assert(sweep(&oom_cases[0], &r), "%s", r.problem);
    cr_assert_eq(r.runs, 2);
    cr_assert_eq(r.failed_runs, 1);
}

/* Filling needs no memory: tg_zero_grad, which cannot report a failure,
 * zeroes a gradient even when no allocation succeeds (otherwise the next
 * backward would add to the old gradient without a word). */
TG_TEST(alloc_failure, zero_grad_needs_no_memory)
{
    tg_tensor *w = tg_ones(TG_SHAPE(2, 3), TG_FLOAT32);
    tg_set_requires_grad(w, true);
    tg_tensor *l = sum_all(tg_mul_scalar(w, 3.0));
    cr_assert_eq(tg_backward(l), 0, "%s", tg_last_error());
    tg_release(l);
    tg_fail_allocations_after(0);
    tg_zero_grad(w);
    cr_assert_eq(tg_fail_allocations_after(-1), 0,
                 "tg_zero_grad tried to allocate");
    double g[6];
    tg_to_f64_array(w->grad, g);
    for (int k = 0; k < 6; k++)
        cr_assert_eq(g[k], 0.0, "grad[%d] is %g after tg_zero_grad", k,
                     g[k]);
    tg_release(w);
}

/* Memory that runs out only for a moment: an op whose output was made
 * but which could not keep what its backward needs returns the output
 * (the forward itself worked) and the backward, run when memory is back,
 * fails, saying that memory ran out. For every allocation of the forward
 * in turn. */
TG_TEST(alloc_failure, save_failure_shows_at_backward)
{
    tg_tensor *a = tg_full(TG_SHAPE(2, 3), 0.5, TG_FLOAT64);
    tg_tensor *b = tg_full(TG_SHAPE(3), 2.0, TG_FLOAT64);
    tg_set_requires_grad(a, true);
    int deferred = 0;
    for (int64_t k = 0;; k++) {
        tg_fail_allocations_after(k);
        tg_tensor *y = tg_mul(a, b);
        tg_tensor *t = y ? tg_tanh(y) : NULL;
        int64_t failed = tg_fail_allocations_after(-1);
        tg_release(y);
        if (failed == 0) {
            cr_assert_eq(backward_and_clear(sum_all(t), &a, 1), 0, "%s",
                         tg_last_error());
            break;
        }
        if (!t)
            continue; // failed at once, and said so
        deferred++;
        tg_clear_error();
        cr_assert_eq(backward_and_clear(sum_all(t), &a, 1), -1);
        tg_assert_error("tg_backward: ", "could not keep a tensor",
                        "out of memory");
        cr_assert_eq(tg_tape_size(), 0);
    }
    cr_assert_gt(deferred, 0, "no save failed: the test tests nothing");
    tg_release(a);
    tg_release(b);
}

/* The hook itself: n successes, then failures, counted; -1 turns it off. */
TG_TEST(alloc_failure, hook_counts_failures)
{
    tg_fail_allocations_after(1);
    tg_tensor *a = tg_empty(TG_SHAPE(2), TG_FLOAT32); // its one allocation
    tg_tensor *b = tg_empty(TG_SHAPE(2), TG_FLOAT32); // fails
    tg_tensor *c = tg_empty(TG_SHAPE(2), TG_FLOAT32); // fails too
    cr_assert_eq(tg_fail_allocations_after(-1), 2);
    cr_assert_not_null(a);
    cr_assert_null(b);
    cr_assert_null(c);
    tg_assert_error("out of memory", "(2,)");
    tg_tensor *d = tg_empty(TG_SHAPE(2), TG_FLOAT32);
    cr_assert_not_null(d);
    cr_assert_eq(tg_fail_allocations_after(-1), 0);
    tg_release(a);
    tg_release(d);
}
