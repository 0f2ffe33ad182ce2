/*
 * examples/tutorial/03_broadcasting.c - the program of tutorial chapter 3
 * (docs/tutorial/03-broadcasting.md): the broadcasting rule drawn with the
 * shapes aligned at the right, pairs of shapes that broadcast and pairs
 * that fail with the library's own message, the keepdim trap, and
 * tg_expand as a view with stride 0.
 *
 * Sections run in the chapter's order; ">>>" lines are the PyTorch code
 * that gives the same result. How the gradient of a broadcast input is
 * summed back to its shape is chapter 4's (and exercise 02's) business.
 */
#include "tapegrad.h"

#include <stdio.h>

/* One row of a picture: a label, then the sizes right-aligned in columns
 * of width 4 so that the last dims of every row line up. */
static void picture_row(const char *label, const int64_t *shape, int ndim,
                        int columns)
{
    printf("%-8s", label);
    for (int i = 0; i < columns - ndim; i++)
        printf("    ");
    for (int i = 0; i < ndim; i++)
        printf("%4lld", (long long)shape[i]);
    printf(ndim == 0 ? "  ()\n" : "\n");
}

/* Adds zero tensors of shapes a and b and draws what happened: the two
 * shapes aligned at the right, then the result's shape or the error that
 * tg_add reported. */
static void broadcast(const int64_t *a_shape, int a_ndim,
                      const int64_t *b_shape, int b_ndim)
{
    tg_tensor *a = tg_zeros(a_shape, a_ndim, TG_FLOAT32);
    tg_tensor *b = tg_zeros(b_shape, b_ndim, TG_FLOAT32);
    tg_tensor *c = tg_add(a, b);
    char sa[TG_SHAPE_STR_MAX], sb[TG_SHAPE_STR_MAX];
    printf(">>> torch.broadcast_shapes(%s, %s)\n", tg_shape_str(a, sa),
           tg_shape_str(b, sb));
    int columns = a_ndim > b_ndim ? a_ndim : b_ndim;
    picture_row("a", a_shape, a_ndim, columns);
    picture_row("b", b_shape, b_ndim, columns);
    if (c)
        picture_row("result", c->shape, c->ndim, columns);
    else
        printf("%s\n", tg_last_error());
    printf("\n");
    tg_release(c);
    tg_release(b);
    tg_release(a);
}

static void show(const char *code, const tg_tensor *t)
{
    printf(">>> %s\n", code);
    tg_print(t);
}

int main(void)
{
    tg_set_error_handler(tg_error_handler_quiet); // we print the messages

    printf("== 1. Shapes that broadcast ==\n");
    broadcast(TG_SHAPE(3, 1), TG_SHAPE(4));
    broadcast(TG_SHAPE(5, 1, 4), TG_SHAPE(3, 1));
    broadcast(TG_SHAPE(2, 3), NULL, 0); // a 0-d tensor: no dims at all
    broadcast(TG_SHAPE(8, 1, 6, 1), TG_SHAPE(7, 1, 5));

    printf("== 2. Shapes that do not ==\n");
    broadcast(TG_SHAPE(2, 3), TG_SHAPE(3, 2));
    broadcast(TG_SHAPE(5, 2, 4), TG_SHAPE(3, 1));

    printf("== 3. A table from a column and a row ==\n");
    tg_tensor *col = tg_from_array((int64_t[]){1, 2, 3}, TG_SHAPE(3, 1),
                                   TG_INT64);
    tg_tensor *row = tg_arange(1, 5, 1, TG_INT64);
    tg_tensor *table = tg_mul(col, row); // (3, 1) * (4,) -> (3, 4)
    show("col = torch.tensor([[1], [2], [3]]); col", col);
    show("row = torch.arange(1, 5); row", row);
    show("col * row", table);

    printf("\n== 4. keepdim: centring each row ==\n");
    tg_tensor *x = tg_from_array((float[]){1, 2, 3, 4, 5, 9},
                                 TG_SHAPE(2, 3), TG_FLOAT32);
    tg_tensor *mean = tg_mean(x, TG_DIMS(1), false);    // (2,)
    tg_tensor *wrong = tg_sub(x, mean);                 // (2, 3) - (2,)
    printf(">>> x = torch.tensor([[1., 2., 3.], [4., 5., 9.]])\n");
    printf(">>> x - x.mean(dim=1)\n%s\n", wrong ? "(no error?)"
                                                : tg_last_error());
    tg_tensor *mean_k = tg_mean(x, TG_DIMS(1), true);   // (2, 1)
    tg_tensor *centred = tg_sub(x, mean_k);             // (2, 3) - (2, 1)
    show("x - x.mean(dim=1, keepdim=True)", centred);

    tg_tensor *sq = tg_from_array((float[]){1, 2, 3, 4, 5, 6, 7, 8, 9},
                                  TG_SHAPE(3, 3), TG_FLOAT32);
    tg_tensor *sq_mean = tg_mean(sq, TG_DIMS(1), false); // (3,): a row!
    tg_tensor *silent = tg_sub(sq, sq_mean); // runs, and is not centring
    tg_tensor *sq_mean_k = tg_mean(sq, TG_DIMS(1), true);
    tg_tensor *right = tg_sub(sq, sq_mean_k);
    printf(">>> s = torch.arange(1., 10.).reshape(3, 3)\n");
    show("s - s.mean(dim=1)  # no error, wrong answer", silent);
    show("s - s.mean(dim=1, keepdim=True)", right);

    printf("\n== 5. expand: a view with stride 0 ==\n");
    tg_tensor *e = tg_expand(col, TG_SHAPE(3, 4));
    show("e = col.expand(3, 4); e", e);
    printf("e: strides (%lld, %lld); %lld elements read from a storage of "
           "%zu\n", (long long)e->strides[0], (long long)e->strides[1],
           (long long)e->numel, e->storage->nbytes / tg_dtype_size(e->dtype));
    tg_set(e, TG_SHAPE(0, 3), 100); // every e[0, j] is the same element
    show("e[0, 3] = 100; e", e);
    show("col", col);

    tg_release(e);
    tg_release(right);
    tg_release(sq_mean_k);
    tg_release(silent);
    tg_release(sq_mean);
    tg_release(sq);
    tg_release(centred);
    tg_release(mean_k);
    tg_release(wrong);
    tg_release(mean);
    tg_release(x);
    tg_release(table);
    tg_release(row);
    tg_release(col);
    tg_set_error_handler(NULL);
    return tg_live_tensors() == 0 ? 0 : 1;
}
