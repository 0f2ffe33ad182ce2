/*
 * examples/tutorial/02_views_and_strides.c - the program of tutorial
 * chapter 2 (docs/tutorial/02-views-and-strides.md): shape, strides and
 * offset; transpose, slice, select and permute as views of one storage;
 * writing through a view; contiguity, and when reshape has to copy.
 *
 * The data is arange(12), so every element's value is also its position
 * in the storage: the printed tensors show which memory each view reads.
 * Sections run in the chapter's order; ">>>" lines are the PyTorch code
 * that gives the same tensor.
 */
#include "tapegrad.h"

#include <stdio.h>

/* Formats n int64 values as Python prints a tuple: "(4, 1)", "(12,)". */
static const char *tuple_str(const int64_t *v, int n, char buf[64])
{
    int len = snprintf(buf, 64, "(");
    for (int i = 0; i < n; i++)
        len += snprintf(buf + len, 64 - len, i ? ", %lld" : "%lld",
                        (long long)v[i]);
    snprintf(buf + len, 64 - len, n == 1 ? ",)" : ")");
    return buf;
}

/* Prints a line of PyTorch code, then t's layout (shape, strides, offset,
 * contiguity, whether it shares base's storage) and t itself. Borrows
 * both tensors. */
static void layout(const char *code, const tg_tensor *t,
                   const tg_tensor *base)
{
    const char *memory = "has its own storage (a copy)";
    if (t == base)
        memory = "x itself";
    else if (t->storage == base->storage)
        memory = "shares x's storage"; // same memory: a view
    char shape[64], strides[64];
    printf(">>> %s\n", code);
    printf("shape %s, strides %s, offset %lld, %s, %s\n",
           tuple_str(t->shape, t->ndim, shape),
           tuple_str(t->strides, t->ndim, strides), (long long)t->offset,
           tg_is_contiguous(t) ? "contiguous" : "not contiguous", memory);
    tg_print(t);
}

int main(void)
{
    tg_set_error_handler(tg_error_handler_quiet); // section 4 prints one

    printf("== 1. Shape, strides, offset ==\n");
    tg_tensor *x = tg_arange(0, 12, 1, TG_FLOAT32);
    tg_tensor *m = tg_reshape(x, TG_SHAPE(3, 4));
    layout("x = torch.arange(12.); x", x, x);
    layout("m = x.reshape(3, 4); m", m, x);
    // m[2, 1] lives at offset + 2 * strides[0] + 1 * strides[1]
    int64_t at = m->offset + 2 * m->strides[0] + 1 * m->strides[1];
    double v;
    tg_get(m, TG_SHAPE(2, 1), &v);
    printf("m[2, 1] is storage element %lld, value %g\n", (long long)at, v);

    printf("\n== 2. Views: new shape and strides, same storage ==\n");
    tg_tensor *mt = tg_transpose(m, 0, 1);
    tg_tensor *odd = tg_slice(m, 1, 1, 4, 2);    // every other column from 1
    tg_tensor *row = tg_select(m, 0, 1);         // row 1: dim 0 disappears
    tg_tensor *col = tg_select(m, 1, 2);         // column 2
    layout("m.T  # m.transpose(0, 1)", mt, x);
    layout("m[:, 1::2]", odd, x);
    layout("m[1]", row, x);
    layout("m[:, 2]", col, x);
    tg_tensor *y = tg_reshape(x, TG_SHAPE(2, 3, 2));
    tg_tensor *p = tg_permute(y, TG_DIMS(2, 0, 1));
    layout("y = x.reshape(2, 3, 2); y.permute(2, 0, 1)", p, x);

    printf("\n== 3. Writing through a view ==\n");
    tg_set(mt, TG_SHAPE(1, 2), 100.0); // m.T[1, 2] is m[2, 1]: storage 9
    printf(">>> m.T[1, 2] = 100; m\n");
    tg_print(m);
    printf(">>> x\n");
    tg_print(x);
    tg_set(mt, TG_SHAPE(1, 2), 9.0); // put it back for section 4

    printf("\n== 4. Contiguity, and when reshape copies ==\n");
    tg_tensor *m26 = tg_reshape(m, TG_SHAPE(2, 6));   // a view
    tg_tensor *flat = tg_reshape(mt, TG_SHAPE(12));   // must copy
    tg_tensor *split = tg_reshape(mt, TG_SHAPE(2, 2, 3)); // a view again
    layout("m.reshape(2, 6)", m26, x);
    layout("m.T.reshape(12)", flat, x);
    layout("m.T.reshape(2, 2, 3)", split, x);

    tg_tensor *bad = tg_view(mt, TG_SHAPE(12)); // views only: refuses
    printf(">>> m.T.view(12)\n%s\n", bad ? "(no error?)" : tg_last_error());
    tg_tensor *c = tg_contiguous(mt); // copies into C order
    layout("m.T.contiguous()", c, x);
    tg_tensor *same = tg_contiguous(m); // already contiguous: no copy
    printf("m.contiguous() is m itself: %s\n", same == m ? "yes" : "no");

    tg_release(same);
    tg_release(c);
    tg_release(bad);
    tg_release(split);
    tg_release(flat);
    tg_release(m26);
    tg_release(p);
    tg_release(y);
    tg_release(col);
    tg_release(row);
    tg_release(odd);
    tg_release(mt);
    tg_release(m);
    tg_release(x);
    tg_set_error_handler(NULL);
    return tg_live_tensors() == 0 ? 0 : 1;
}
