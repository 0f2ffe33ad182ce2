/*
 * tests/exercises/grade_ex14_backprop_ninja.c - grades exercise 14,
 * ex_backprop_ninja (docs/exercises/14-backprop-ninja.md): makemore part
 * 4's exercise 1, every gradient of the MLP by hand.
 *   - the lecture's sizes (a batch of 32, n_hidden 64, the lecture's
 *     initialisation): each of the 26 gradients, checked in the lecture's
 *     order with tg_cmp against the tape's (loss.backward() with
 *     retain_grad on every intermediate): same shape, same dtype, and
 *     approximately equal (torch.allclose's tolerance);
 *   - another batch size and width (8 rows, n_hidden 16, another seed),
 *     so that no size is written into the code;
 *   - a batch whose rows repeat characters, so that dC must add the
 *     contributions of a character seen several times.
 * Contexts and labels are random (the gradients do not care whether the
 * characters spell names), so the grader needs no data file.
 */
#define EX_STATEMENT "14-backprop-ninja.md"
#include "grade.h"

#include <stdio.h>

typedef struct net {
    tg_generator *g, *g2;
    p4_params p;
    tg_tensor *xb, *yb;
    p4_forward f;
} net;

/* The lecture's network with n_hidden units and a batch of n random
 * contexts over the 27 characters (characters below `chars` only), the
 * forward recorded and loss.backward() done. */
static void net_open(net *s, uint64_t seed, int64_t n, int64_t n_hidden,
                     int64_t chars)
{
    s->g = tg_generator_new(seed);
    s->g2 = tg_generator_new(seed + 1);
    cr_assert_eq(p4_params_init(&s->p, 27, 10, 3, n_hidden, s->g, s->g2), 0,
                 "%s", tg_last_error());
    tg_tensor *list[P4_NPARAMS];
    p4_params_list(&s->p, list);
    for (int i = 0; i < P4_NPARAMS; i++)
        tg_set_requires_grad(list[i], true);
    s->xb = tg_randint_gen(s->g, 0, chars, TG_SHAPE(n, 3));
    s->yb = tg_randint_gen(s->g, 0, 27, TG_SHAPE(n));
    cr_assert_eq(p4_forward_run(&s->p, s->xb, s->yb, &s->f), 0, "%s",
                 tg_last_error());
    cr_assert_eq(tg_backward(s->f.loss), 0, "%s", tg_last_error());
}

static void net_close(net *s)
{
    p4_forward_free(&s->f);
    tg_release(s->xb), tg_release(s->yb);
    p4_params_free(&s->p);
    tg_generator_free(s->g2);
    tg_generator_free(s->g);
}

/* Calls the student's code and checks the 26 gradients against the
 * tape's, in the lecture's order (from the loss back to C): the first one
 * that is wrong is named, with the lecture's cmp line or tg_cmp's error
 * (those after it are computed from it). */
static void check_all(net *s, const char *where)
{
    p4_grads d = {0};
    int rc = -1;
    EX_CALL(rc = ex_backprop_ninja(&s->p, &s->f, s->xb, s->yb, &d));
    cr_assert_eq(rc, 0, "%s: ex_backprop_ninja returned %d; the last error "
                 "was:\n%s", where, rc,
                 tg_last_error()[0] ? tg_last_error() : "(none reported)");
    p4_cmp_row rows[P4_NCMP];
    p4_cmp_rows(&s->p, &s->f, &d, rows);
    for (int i = 0; i < P4_NCMP; i++) {
        char line[256];
        cr_assert(rows[i].dt != NULL, "%s: d->%s is NULL: every field must "
                  "be filled", where, rows[i].name);
        tg_clear_error();
        int ok = tg_cmp_format(rows[i].name, rows[i].dt, rows[i].t, line,
                               sizeof line);
        cr_assert(ok == 1,
                  "%s: d%s is wrong%s:\n%s\n(the gradients are checked "
                  "from the loss back, as the lecture's cmp lines; the ones "
                  "before d%s are right)", where, rows[i].name,
                  ok < 0 ? " (tg_cmp refused it)" : "",
                  ok < 0 ? tg_last_error() : line, rows[i].name);
    }
    p4_grads_free(&d);
}

TG_TEST(ex14, the_lecture_network)
{
    net s;
    net_open(&s, P4_SEED, 32, 64, 27);
    check_all(&s, "batch 32, n_hidden 64");
    net_close(&s);
}

TG_TEST(ex14, another_batch_and_width)
{
    net s;
    net_open(&s, 7, 8, 16, 27);
    check_all(&s, "batch 8, n_hidden 16");
    net_close(&s);
}

/* 40 contexts over 3 characters only: each row of dC sums many
 * contributions, and 24 rows of dC must stay zero. */
TG_TEST(ex14, repeated_characters_add_up)
{
    net s;
    net_open(&s, 11, 40, 16, 3);
    check_all(&s, "batch 40 over 3 characters");
    net_close(&s);
}
