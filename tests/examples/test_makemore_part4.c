/*
 * tests/examples/test_makemore_part4.c - makemore part 4 ("becoming a backprop
 * ninja", examples/makemore/part4_mlp.c) against PyTorch 1.13: the
 * vectors of tests/reference/torch-makemore-part4.txt, written by
 * scripts/reference/torch_makemore_part4.py from the lecture's code.
 *
 * What is exact and what is not:
 *   - the parameter count and the batch indices (the generator) are
 *     compared exactly;
 *   - the first loss to 1e-6 relative (4 float32 ulp): it differs from
 *     PyTorch's in the last bit (3.33458376 against 3.33458400), because
 *     tapegrad sums float32 in double where PyTorch sums in float32 (the
 *     lecture's own F.cross_entropy differs from its step-by-step loss by
 *     the same 2.4e-7);
 *   - the gradients are compared through three checksums each (sum, sum
 *     of |g|, a fixed weighting of the elements): tapegrad's float32
 *     matmul and reductions sum in another order than PyTorch's, so the
 *     gradients agree to a few float32 ulp, not bit for bit. The tolerance
 *     is 1e-5 of sum |g| (about 100 ulp of the typical element) plus
 *     1e-8 per element, for the gradients that are zero but for rounding
 *     (dlogit_maxes: the softmax's gradient sums to 0 over each row, so
 *     its elements are noise of about 1e-9 in both libraries). Both are
 *     far below what a wrong gradient gives (a swapped pair of elements
 *     moves the weighted checksum by more than 1e-3 of sum |g|; the test
 *     below checks that);
 *   - the 200 training losses drift apart as the roundings compound over
 *     the steps; 1e-5 relative covers it (measured: 1.9e-7), while a
 *     training that goes wrong (a gradient off by a factor, a step
 *     skipped) changes the losses by more than 1e-2 within a few steps;
 *   - tapegrad's hand gradients against its own tape are exact, as in the
 *     lecture: checked with tg_cmp.
 */
#include "../common.h"
#include "../../examples/makemore/part4_mlp.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------- reading the vectors */

/* The values under "## <title>" (the line starting so), as doubles (the
 * first number on each line); returns how many (at most max). */
static int read_section(const char *title, double *out, int max)
{
    FILE *f = fopen(tg_test_ref_path("torch-makemore-part4.txt"), "r");
    cr_assert(f != NULL, "cannot open torch-makemore-part4.txt");
    char line[256];
    int n = -1;
    size_t tl = strlen(title);
    while (fgets(line, sizeof line, f)) {
        if (strncmp(line, "## ", 3) == 0) {
            if (n >= 0)
                break;
            if (strncmp(line + 3, title, tl) == 0 &&
                (line[3 + tl] == '\n' || line[3 + tl] == ' '))
                n = 0;
            continue;
        }
        if (n >= 0 && n < max)
            out[n++] = strtod(line, NULL);
    }
    fclose(f);
    cr_assert(n > 0, "no section \"%s\" in torch-makemore-part4.txt", title);
    return n;
}

/* sum, sum |g| and sum g_i w_i with w_i = ((i * 7919) % 1000) / 1000 - 0.5,
 * in double, in C order (as the script) */
static void checksums(const tg_tensor *g, double out[3])
{
    int64_t n = g->numel;
    double *v = malloc((size_t)n * sizeof *v);
    cr_assert(v && tg_to_f64_array(g, v) == 0);
    out[0] = out[1] = out[2] = 0.0;
    for (int64_t i = 0; i < n; i++) {
        out[0] += v[i];
        out[1] += fabs(v[i]);
        out[2] += v[i] * ((double)((i * 7919) % 1000) / 1000.0 - 0.5);
    }
    free(v);
}

#define GRAD_RTOL 1e-5
#define GRAD_ATOL 1e-8 // per element
#define LOSS0_RTOL 1e-6

/* Whether g's checksums match torch's for `name` (and its shape), to
 * GRAD_RTOL of sum |g|; says why not in report. */
static bool grad_matches_torch(const char *name, const tg_tensor *g,
                               char *report, size_t size)
{
    char title[64];
    snprintf(title, sizeof title, "grad %s", name);
    double want[3], got[3];
    cr_assert_eq(read_section(title, want, 3), 3);
    checksums(g, got);
    double scale = GRAD_RTOL * want[1] + GRAD_ATOL * (double)g->numel;
    const char *what[3] = {"sum", "sum |g|", "weighted sum"};
    for (int k = 0; k < 3; k++)
        if (!(fabs(got[k] - want[k]) <= scale)) {
            snprintf(report, size,
                     "d%s: %s is %.10g, PyTorch's %.10g (|diff| %.3g > "
                     "%.3g)", name, what[k], got[k], want[k],
                     fabs(got[k] - want[k]), scale);
            return false;
        }
    return true;
}

/* ---------------------------------------------------- the lecture's run */

typedef struct run {
    tg_words *words;
    tg_dataset tr, dev, te;
    tg_generator *g, *torch_default;
    p4_params p;
} run;

static void run_open(run *r, int64_t n_hidden)
{
    const char *dir = getenv("TG_DATA_DIR");
    char path[1024];
    snprintf(path, sizeof path, "%s/names.txt", dir ? dir : "data");
    r->words = tg_words_load(path);
    cr_assert(r->words, "%s", tg_last_error());
    cr_assert_eq(tg_words_split(r->words, 3, 42, &r->tr, &r->dev, &r->te), 0);
    r->g = tg_generator_new(P4_SEED);
    r->torch_default = tg_generator_new(P4_TORCH_DEFAULT_SEED);
    cr_assert_eq(p4_params_init(&r->p, 27, 10, 3, n_hidden, r->g,
                                r->torch_default), 0, "%s", tg_last_error());
}

static void run_close(run *r)
{
    p4_params_free(&r->p);
    tg_generator_free(r->torch_default);
    tg_generator_free(r->g);
    tg_dataset_free(&r->tr), tg_dataset_free(&r->dev);
    tg_dataset_free(&r->te);
    tg_words_free(r->words);
}

/* The first batch's forward and backward of exercise 1 */
typedef struct first {
    run r;
    tg_tensor *xb, *yb;
    p4_forward f;
    p4_grads d;
} first;

static void first_open(first *s)
{
    run_open(&s->r, 64);
    tg_tensor *list[P4_NPARAMS];
    p4_params_list(&s->r.p, list);
    for (int i = 0; i < P4_NPARAMS; i++)
        tg_set_requires_grad(list[i], true);
    cr_assert_eq(p4_batch(&s->r.tr, 32, s->r.g, &s->xb, &s->yb), 0);
    cr_assert_eq(p4_forward_run(&s->r.p, s->xb, s->yb, &s->f), 0, "%s",
                 tg_last_error());
    cr_assert_eq(tg_backward(s->f.loss), 0, "%s", tg_last_error());
    cr_assert_eq(p4_backward_manual(&s->r.p, &s->f, s->xb, s->yb, &s->d), 0,
                 "%s", tg_last_error());
}

static void first_close(first *s)
{
    p4_grads_free(&s->d);
    p4_forward_free(&s->f);
    tg_release(s->xb), tg_release(s->yb);
    run_close(&s->r);
}

TG_TEST(part4, first_batch_and_loss_match_torch)
{
    first s;
    first_open(&s);
    double want[32];
    read_section("parameters", want, 1);
    cr_assert_eq(p4_params_count(&s.r.p), (int64_t)want[0]);
    cr_assert_eq(p4_params_count(&s.r.p), 4137);
    /* the batch: Xb = Xtr[ix]; compare the rows through ix's own rows */
    cr_assert_eq(read_section("batch indices", want, 32), 32);
    for (int i = 0; i < 32; i++) {
        int64_t ix = (int64_t)want[i];
        for (int j = 0; j < 3; j++) {
            double a, b;
            tg_get(s.xb, (int64_t[]){i, j}, 2, &a);
            tg_get(s.r.tr.x, (int64_t[]){ix, j}, 2, &b);
            cr_assert(a == b, "Xb[%d] is not Xtr[%lld]", i, (long long)ix);
        }
    }
    read_section("loss", want, 1);
    double loss = tg_item(s.f.loss);
    cr_assert(fabs(loss - want[0]) <= LOSS0_RTOL * want[0],
              "first loss %.9g, PyTorch's %.9g", loss, want[0]);
    first_close(&s);
}

TG_TEST(part4, tape_and_hand_gradients_match_torch)
{
    first s;
    first_open(&s);
    p4_cmp_row rows[P4_NCMP];
    p4_cmp_rows(&s.r.p, &s.f, &s.d, rows);
    char report[512];
    for (int i = 0; i < P4_NCMP; i++) {
        cr_assert(grad_matches_torch(rows[i].name, rows[i].t->grad, report,
                                     sizeof report),
                  "the tape's %s", report);
        cr_assert(grad_matches_torch(rows[i].name, rows[i].dt, report,
                                     sizeof report),
                  "by hand: %s", report);
    }
    first_close(&s);
}

TG_TEST(part4, hand_gradients_equal_the_tape_exactly)
{
    first s;
    first_open(&s);
    p4_cmp_row rows[P4_NCMP];
    p4_cmp_rows(&s.r.p, &s.f, &s.d, rows);
    char line[256], want[256];
    for (int i = 0; i < P4_NCMP; i++) {
        cr_assert_eq(tg_cmp_format(rows[i].name, rows[i].dt, rows[i].t, line,
                                   sizeof line), 1, "%s", tg_last_error());
        snprintf(want, sizeof want, "%-15s | exact: True  | approximate: "
                 "True  | maxdiff: 0.0", rows[i].name);
        cr_assert_str_eq(line, want);
    }
    /* exercises 2 and 3: close, not exact (as in the lecture) */
    tg_tensor *dlogits = p4_cross_entropy_backward(s.f.logits, s.yb);
    cr_assert_eq(tg_cmp_format("logits", dlogits, s.f.logits, line,
                               sizeof line), 1, "%s", line);
    tg_tensor *dhprebn = p4_batch_norm_backward(s.d.hpreact, s.r.p.bngain,
                                                s.f.bnvar_inv, s.f.bnraw);
    cr_assert_eq(tg_cmp_format("hprebn", dhprebn, s.f.hprebn, line,
                               sizeof line), 1, "%s", line);
    tg_release(dhprebn);
    tg_release(dlogits);
    first_close(&s);
}

/* The check above must be able to fail: two elements of a gradient
 * swapped, or a gradient scaled by 1 + 1e-4, are not PyTorch's. */
TG_TEST(part4, checksums_catch_a_wrong_gradient)
{
    first s;
    first_open(&s);
    char report[512];
    tg_tensor *w = tg_clone(s.f.logits->grad);
    float *v = tg_data_f32(w);
    int64_t lo = 0; // the label of row 0: the most negative of its row
    for (int64_t j = 1; j < 27; j++)
        lo = v[j] < v[lo] ? j : lo;
    int64_t other = lo == 0 ? 1 : 0;
    float tmp = v[lo];
    v[lo] = v[other], v[other] = tmp;
    cr_assert_not(grad_matches_torch("logits", w, report, sizeof report),
                  "a swapped pair of elements passed");
    cr_assert(strstr(report, "weighted sum") != NULL, "%s", report);
    tg_release(w);
    w = tg_mul_scalar(s.f.h->grad, 1.0 + 1e-4);
    cr_assert_not(grad_matches_torch("h", w, report, sizeof report),
                  "a gradient off by 1e-4 passed");
    tg_release(w);
    /* and the lecture's gradient of another variable is not this one's */
    cr_assert_not(grad_matches_torch("bnraw", s.f.hpreact->grad, report,
                                     sizeof report));
    first_close(&s);
}

#define TRAIN_STEPS 200
#define LOSS_RTOL 1e-5

/* Whether the losses match PyTorch's to LOSS_RTOL; the first step that
 * does not in report. */
static bool losses_match_torch(const double *got, const double *want,
                               int n, char *report, size_t size)
{
    for (int i = 0; i < n; i++)
        if (!(fabs(got[i] - want[i]) <= LOSS_RTOL * fabs(want[i]))) {
            snprintf(report, size, "step %d: loss %.9g, PyTorch's %.9g", i,
                     got[i], want[i]);
            return false;
        }
    return true;
}

TG_TEST(part4, training_with_the_hand_backward_matches_torch)
{
    run r;
    run_open(&r, 200);
    double want[TRAIN_STEPS], got[TRAIN_STEPS];
    read_section("exercise 4 parameters", want, 1);
    cr_assert_eq(p4_params_count(&r.p), (int64_t)want[0]);
    cr_assert_eq(p4_params_count(&r.p), 12297);
    cr_assert_eq(read_section("exercise 4 losses", want, TRAIN_STEPS),
                 TRAIN_STEPS);
    for (int i = 0; i < TRAIN_STEPS; i++) {
        tg_tensor *xb, *yb;
        cr_assert_eq(p4_batch(&r.tr, 32, r.g, &xb, &yb), 0);
        cr_assert_eq(p4_train_step(&r.p, xb, yb, 0.1, &got[i], NULL), 0,
                     "%s", tg_last_error());
        tg_release(xb), tg_release(yb);
    }
    cr_assert_eq(tg_tape_size(), 0, "the manual training recorded nodes");
    char report[256];
    cr_assert(losses_match_torch(got, want, TRAIN_STEPS, report,
                                 sizeof report), "%s", report);
    cr_assert(fabs(got[0] - want[0]) <= LOSS0_RTOL * want[0],
              "the first loss (no step taken yet): %.9g vs %.9g", got[0],
              want[0]);
    double worst = 0;
    for (int i = 0; i < TRAIN_STEPS; i++)
        worst = fmax(worst, fabs(got[i] - want[i]) / want[i]);
    cr_log_info("largest relative difference over %d steps: %.3g",
                TRAIN_STEPS, worst);
    /* the check can fail: the losses one step late, or of a run whose
     * gradients are 1% too large, are not PyTorch's */
    cr_assert_not(losses_match_torch(got + 1, want, TRAIN_STEPS - 1, report,
                                     sizeof report));
    run_close(&r);
}

TG_TEST(part4, a_wrong_training_is_caught)
{
    run r;
    run_open(&r, 200);
    double want[TRAIN_STEPS], got[20];
    read_section("exercise 4 losses", want, TRAIN_STEPS);
    for (int i = 0; i < 20; i++) {
        tg_tensor *xb, *yb;
        cr_assert_eq(p4_batch(&r.tr, 32, r.g, &xb, &yb), 0);
        /* lr 0.11 instead of 0.1: every gradient 10% too large */
        cr_assert_eq(p4_train_step(&r.p, xb, yb, 0.11, &got[i], NULL), 0);
        tg_release(xb), tg_release(yb);
    }
    char report[256];
    cr_assert_not(losses_match_torch(got, want, 20, report, sizeof report),
                  "a training with 10%% larger steps matched PyTorch's");
    run_close(&r);
}
