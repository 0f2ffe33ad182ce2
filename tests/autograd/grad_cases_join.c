/*
 * tests/autograd/grad_cases_join.c - gradcheck cases for cat, stack,
 * split, split_sizes, chunk (join.c) and max / min along a dim
 * (max_dim.c).
 *
 * Joining and splitting are linear with a 0/1 Jacobian, so finite
 * differences are exact up to rounding; the cases vary the dims (0, -1,
 * a middle one), the layouts (transposed and strided inputs), mixed
 * sizes along the joined dim, an input that needs no gradient, and
 * pieces used twice. A split's pieces are weighted differently and
 * joined back, so that a gradient sent to the wrong piece shows.
 *
 * max_dim and min_dim are checked on random inputs, where ties do not
 * occur (a tie is a kink: finite differences see half the gradient on
 * each side, the op gives all of it to the first index).
 */
#include "grad_cases.h"

#define F(name, expr)                                                       \
    static tg_tensor *name(const tg_tensor *const *x, int n, void *user)         \
    {                                                                       \
        (void)n, (void)user;                                                \
        return expr;                                                        \
    }

F(f_cat2_d0, tg_cat((const tg_tensor *const *)x, 2, 0))
F(f_cat2_dm1, tg_cat((const tg_tensor *const *)x, 2, -1))
F(f_cat3_d1, tg_cat((const tg_tensor *const *)x, 3, 1))
F(f_stack2_d0, tg_stack((const tg_tensor *const *)x, 2, 0))
F(f_stack3_dm1, tg_stack((const tg_tensor *const *)x, 3, -1))
F(f_stack2_d1, tg_stack((const tg_tensor *const *)x, 2, 1))
F(f_stack1_0d, tg_stack((const tg_tensor *const *)x, 1, 0))

/* The same input three times: its gradient is the sum of three blocks. */
static tg_tensor *f_cat_self(const tg_tensor *const *x, int n, void *user)
{
    (void)n, (void)user;
    const tg_tensor *parts[] = {x[0], x[0], x[0]};
    return tg_cat(parts, 3, 1);
}

/* Ten inputs (more than TG_MAX_INPUTS), slices of one (10, 3) x. */
static tg_tensor *f_cat_ten(const tg_tensor *const *x, int n, void *user)
{
    (void)n, (void)user;
    tg_tensor *rows[10];
    for (int i = 0; i < 10; i++)
        rows[i] = tg_narrow(x[0], 0, 9 - i, 1); // in reverse order
    tg_tensor *out = tg_cat((const tg_tensor *const *)rows, 10, 1);
    for (int i = 0; i < 10; i++)
        tg_release(rows[i]);
    return out;
}

/* A (0,) tensor, left out, between two inputs. */
static tg_tensor *f_cat_skip(const tg_tensor *const *x, int n, void *user)
{
    (void)n, (void)user;
    tg_tensor *empty = tg_zeros(TG_SHAPE(0), TG_FLOAT64);
    const tg_tensor *parts[] = {x[0], empty, x[1]};
    tg_tensor *out = tg_cat(parts, 3, -1);
    tg_release(empty);
    return out;
}

/* The pieces, piece j times (j + 1), joined back along the same dim. */
static tg_tensor *weighted_join(tg_tensor **pieces, int count, int dim)
{
    tg_tensor *scaled[8] = {0};
    for (int j = 0; j < count; j++) {
        scaled[j] = tg_mul_scalar(pieces[j], (double)(j + 1));
        tg_release(pieces[j]);
    }
    tg_tensor *out = tg_cat((const tg_tensor *const *)scaled, count, dim);
    for (int j = 0; j < count; j++)
        tg_release(scaled[j]);
    return out;
}

static tg_tensor *f_split_d1(const tg_tensor *const *x, int n, void *user)
{
    (void)n, (void)user;
    tg_tensor *p[8];
    int count = tg_split(x[0], 2, 1, p, 8); // 5 -> 2, 2, 1
    return count < 0 ? NULL : weighted_join(p, count, 1);
}

static tg_tensor *f_split_dm1(const tg_tensor *const *x, int n, void *user)
{
    (void)n, (void)user;
    tg_tensor *p[8];
    int count = tg_split(x[0], 3, -1, p, 8); // 4 -> 3, 1
    return count < 0 ? NULL : weighted_join(p, count, -1);
}

static tg_tensor *f_split_sizes_d0(const tg_tensor *const *x, int n, void *user)
{
    (void)n, (void)user;
    tg_tensor *p[4];
    int count = tg_split_sizes(x[0], TG_SHAPE(1, 0, 3), 0, p); // 4 rows
    return count < 0 ? NULL : weighted_join(p, count, 0);
}

static tg_tensor *f_chunk_d1(const tg_tensor *const *x, int n, void *user)
{
    (void)n, (void)user;
    tg_tensor *p[4];
    int count = tg_chunk(x[0], 4, 1, p, 4); // 6 -> three of 2
    return count < 0 ? NULL : weighted_join(p, count, 1);
}

/* Only the last piece is used: the other pieces' nodes get no gradient. */
static tg_tensor *f_split_last(const tg_tensor *const *x, int n, void *user)
{
    (void)n, (void)user;
    tg_tensor *p[8];
    int count = tg_split(x[0], 2, 0, p, 8); // 5 -> 2, 2, 1
    if (count < 0)
        return NULL;
    tg_tensor *last = p[count - 1];
    for (int j = 0; j < count - 1; j++)
        tg_release(p[j]);
    return last;
}

/* Two pieces multiplied: each piece's gradient holds the other's values. */
static tg_tensor *f_chunk_mul(const tg_tensor *const *x, int n, void *user)
{
    (void)n, (void)user;
    tg_tensor *p[2];
    if (tg_chunk(x[0], 2, -1, p, 2) != 2)
        return NULL;
    tg_tensor *out = tg_mul(p[0], p[1]);
    tg_release(p[0]);
    tg_release(p[1]);
    return out;
}

F(f_max_d0, tg_max_dim(x[0], 0, false, NULL))
F(f_max_dm1_keep, tg_max_dim(x[0], -1, true, NULL))
F(f_max_d1, tg_max_dim(x[0], 1, false, NULL))
F(f_max_0d, tg_max_dim(x[0], 0, false, NULL))
F(f_min_d1_keep, tg_min_dim(x[0], 1, true, NULL))
F(f_min_dm1, tg_min_dim(x[0], -1, false, NULL))

const tg_grad_case tg_grad_cases_join[] = {
    {"join: cat (2,3) and (4,3) on dim 0", f_cat2_d0, 2,
     {{2, {2, 3}}, {2, {4, 3}, TG_TRANSPOSED}}},
    {"join: cat (3,2) strided and (3,4) on dim -1", f_cat2_dm1, 2,
     {{2, {3, 2}, TG_STRIDED}, {2, {3, 4}}}},
    {"join: cat (2,1,4), (2,3,4)T, (2,2,4) on dim 1", f_cat3_d1, 3,
     {{3, {2, 1, 4}}, {3, {2, 3, 4}, TG_TRANSPOSED}, {3, {2, 2, 4}}}},
    {"join: cat on dim 1, one input needs no gradient", f_cat3_d1, 3,
     {{3, {2, 1, 4}}, {3, {2, 3, 4}, .no_grad = true},
      {3, {2, 2, 4}, TG_STRIDED}}},
    {"join: cat (2,3)T with itself three times", f_cat_self, 1,
     {{2, {2, 3}, TG_TRANSPOSED}}},
    {"join: cat of ten rows of (10,3)", f_cat_ten, 1, {{2, {10, 3}}}},
    {"join: cat (2,2), (0,), (2,3) on dim -1", f_cat_skip, 2,
     {{2, {2, 2}}, {2, {2, 3}, TG_STRIDED}}},
    {"join: stack two (3,4)T on dim 0", f_stack2_d0, 2,
     {{2, {3, 4}, TG_TRANSPOSED}, {2, {3, 4}}}},
    {"join: stack three (2,3) on dim -1", f_stack3_dm1, 3,
     {{2, {2, 3}}, {2, {2, 3}, TG_STRIDED}, {2, {2, 3}, TG_TRANSPOSED}}},
    {"join: stack two (2,3,4) on dim 1", f_stack2_d1, 2,
     {{3, {2, 3, 4}}, {3, {2, 3, 4}, .no_grad = true}}},
    {"join: stack one 0-d", f_stack1_0d, 1, {{0, {0}}}},
    {"join: split (3,5)T by 2 on dim 1", f_split_d1, 1,
     {{2, {3, 5}, TG_TRANSPOSED}}},
    {"join: split (2,3,4) strided by 3 on dim -1", f_split_dm1, 1,
     {{3, {2, 3, 4}, TG_STRIDED}}},
    {"join: split_sizes (4,3) into 1, 0, 3 on dim 0", f_split_sizes_d0, 1,
     {{2, {4, 3}, TG_TRANSPOSED}}},
    {"join: chunk (2,6,3) into 4 on dim 1", f_chunk_d1, 1,
     {{3, {2, 6, 3}}}},
    {"join: the last piece of split (5,2) by 2", f_split_last, 1,
     {{2, {5, 2}, TG_STRIDED}}},
    {"join: chunk (3,4)T in two, multiplied", f_chunk_mul, 1,
     {{2, {3, 4}, TG_TRANSPOSED}}},
    {"join: max_dim (4,3)T on dim 0", f_max_d0, 1,
     {{2, {4, 3}, TG_TRANSPOSED}}},
    {"join: max_dim (2,3,5) strided on dim -1, keepdim", f_max_dm1_keep, 1,
     {{3, {2, 3, 5}, TG_STRIDED}}},
    {"join: max_dim (2,4,3) on dim 1", f_max_d1, 1, {{3, {2, 4, 3}}}},
    {"join: max_dim 0-d", f_max_0d, 1, {{0, {0}}}},
    {"join: min_dim (2,4,3)T on dim 1, keepdim", f_min_d1_keep, 1,
     {{3, {2, 4, 3}, TG_TRANSPOSED}}},
    {"join: min_dim (3,4) on dim -1", f_min_dm1, 1, {{2, {3, 4}}}},
};
const size_t tg_grad_cases_join_count =
    sizeof tg_grad_cases_join / sizeof *tg_grad_cases_join;
