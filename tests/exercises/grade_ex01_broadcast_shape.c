/*
 * tests/exercises/grade_ex01_broadcast_shape.c - grades exercise 01,
 * ex_broadcast_shape (docs/exercises/01-broadcast-shape.md):
 *   - against np.broadcast_shapes on six groups of shape pairs, one test
 *     per group (scripts/reference/gen_ex01.py), so a failing test names
 *     the kind of case that goes wrong;
 *   - against what tg_add does with tensors of every one of those shapes:
 *     the shape of its result, or its refusal.
 * There is no gradient here, so no gradcheck.
 *
 * A case is one int64 row [na, a[0..7], nb, b[0..7], nout, out[0..7]],
 * shapes padded with -1, nout -1 when the shapes do not broadcast.
 */
#define EX_STATEMENT "01-broadcast-shape.md"
#include "grade.h"

#include <stdio.h>

enum { ROW = 3 * (TG_MAX_DIMS + 1) }; // 27 numbers per case

typedef struct bcase {
    int na, nb, nout;
    int64_t a[TG_MAX_DIMS], b[TG_MAX_DIMS], out[TG_MAX_DIMS];
} bcase;

static bcase case_from_row(const int64_t *row)
{
    bcase c;
    c.na = (int)row[0];
    c.nb = (int)row[TG_MAX_DIMS + 1];
    c.nout = (int)row[2 * (TG_MAX_DIMS + 1)];
    for (int d = 0; d < TG_MAX_DIMS; d++) {
        c.a[d] = row[1 + d];
        c.b[d] = row[TG_MAX_DIMS + 2 + d];
        c.out[d] = row[2 * (TG_MAX_DIMS + 1) + 1 + d];
    }
    return c;
}

/* What a result n (and out) means, in words. */
static const char *result_text(int n, const int64_t *out, char *buf,
                               size_t size)
{
    if (n == -1)
        snprintf(buf, size, "-1 (cannot broadcast)");
    else if (n < -1 || n > TG_MAX_DIMS)
        snprintf(buf, size, "%d, which is neither -1 nor a number of dims "
                 "0..%d", n, TG_MAX_DIMS);
    else
        ex_shape_text(out, n, buf, size);
    return buf;
}

/* Calls the student's function on the shapes of c. The copies of a and b
 * are followed by sizes 7, so reading past a shape's last dim gives a
 * wrong answer instead of a lucky one. */
static int student_shape(const bcase *c, int64_t out[TG_MAX_DIMS])
{
    int64_t a[TG_MAX_DIMS + 1], b[TG_MAX_DIMS + 1];
    for (int d = 0; d <= TG_MAX_DIMS; d++) {
        a[d] = d < c->na ? c->a[d] : 7;
        b[d] = d < c->nb ? c->b[d] : 7;
    }
    for (int d = 0; d < TG_MAX_DIMS; d++)
        out[d] = -99;
    int n;
    EX_CALL(n = ex_broadcast_shape(a, c->na, b, c->nb, out));
    return n;
}

static bool same_result(int n, const int64_t *out, int n_ref,
                        const int64_t *out_ref)
{
    if (n != n_ref)
        return false;
    for (int d = 0; d < n; d++)
        if (out[d] != out_ref[d])
            return false;
    return true;
}

/* Grades every case of the reference table `name`; the message shows the
 * first wrong case and counts the others. */
static void check_group(const char *name)
{
    tg_tensor *t = tg_test_load_ref(name);
    cr_assert(t->dtype == TG_INT64 && t->ndim == 2 && t->shape[1] == ROW,
              "%s.npy is not a table of cases", name);
    const int64_t *rows = tg_data_i64(t);
    int64_t ncases = t->shape[0], wrong = 0;
    char message[768] = "";
    for (int64_t i = 0; i < ncases; i++) {
        bcase c = case_from_row(rows + i * ROW);
        int64_t out[TG_MAX_DIMS];
        int n = student_shape(&c, out);
        if (same_result(n, out, c.nout, c.out))
            continue;
        if (wrong++ > 0)
            continue;
        char sa[96], sb[96], got[96], want[96];
        ex_shape_text(c.a, c.na, sa, sizeof sa);
        ex_shape_text(c.b, c.nb, sb, sizeof sb);
        result_text(n, out, got, sizeof got);
        result_text(c.nout, c.out, want, sizeof want);
        snprintf(message, sizeof message,
                 "ex_broadcast_shape(%s, %s) gave %s,\n"
                 "    but np.broadcast_shapes gives %s.",
                 sa, sb, got, want);
    }
    tg_release(t);
    cr_assert(wrong == 0, "%s\n    Wrong cases in %s.npy: %lld of %lld "
              "(the first is shown).", message, name, (long long)wrong,
              (long long)ncases);
}

TG_TEST(ex01, same_rank)
{
    check_group("ex01_same_rank");
}

TG_TEST(ex01, different_ranks)
{
    check_group("ex01_different_ranks");
}

TG_TEST(ex01, scalars)
{
    check_group("ex01_scalars");
}

TG_TEST(ex01, size_zero)
{
    check_group("ex01_size_zero");
}

TG_TEST(ex01, incompatible)
{
    check_group("ex01_incompatible");
}

TG_TEST(ex01, random_pairs)
{
    check_group("ex01_random");
}

/* The shape of tg_add(zeros(a), zeros(b)), or -1 when tg_add refuses. */
static int library_shape(const bcase *c, int64_t out[TG_MAX_DIMS])
{
    tg_tensor *x = tg_zeros(c->a, c->na, TG_FLOAT32);
    tg_tensor *y = tg_zeros(c->b, c->nb, TG_FLOAT32);
    cr_assert(x && y, "could not make tensors: %s", tg_last_error());
    tg_tensor *sum = tg_add(x, y);
    int n = -1;
    if (sum) {
        n = sum->ndim;
        for (int d = 0; d < n; d++)
            out[d] = sum->shape[d];
    }
    tg_release(sum);
    tg_release(y);
    tg_release(x);
    return n;
}

/* Every case of every table again, now against tapegrad's own
 * broadcasting: the rule the student wrote is the one tg_add applies. */
TG_TEST(ex01, same_as_tg_add)
{
    static const char *const groups[] = {
        "ex01_same_rank", "ex01_different_ranks", "ex01_scalars",
        "ex01_size_zero", "ex01_incompatible", "ex01_random"};
    int64_t checked = 0;
    for (size_t k = 0; k < sizeof groups / sizeof *groups; k++) {
        tg_tensor *t = tg_test_load_ref(groups[k]);
        const int64_t *rows = tg_data_i64(t);
        for (int64_t i = 0; i < t->shape[0]; i++, checked++) {
            bcase c = case_from_row(rows + i * ROW);
            int64_t out[TG_MAX_DIMS], lib[TG_MAX_DIMS];
            int n = student_shape(&c, out);
            int n_lib = library_shape(&c, lib);
            if (same_result(n, out, n_lib, lib))
                continue;
            char sa[96], sb[96], got[96], want[96];
            ex_shape_text(c.a, c.na, sa, sizeof sa);
            ex_shape_text(c.b, c.nb, sb, sizeof sb);
            result_text(n, out, got, sizeof got);
            if (n_lib < 0)
                snprintf(want, sizeof want, "an error");
            else
                ex_shape_text(lib, n_lib, want, sizeof want);
            tg_release(t);
            cr_assert_fail("ex_broadcast_shape(%s, %s) gave %s,\n"
                           "    but tg_add of tensors of these shapes "
                           "gives %s.", sa, sb, got, want);
        }
        tg_release(t);
    }
    cr_assert(checked > 0, "no cases were loaded");
}
