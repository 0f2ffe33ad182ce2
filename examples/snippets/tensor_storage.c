/*
 * examples/snippets/tensor_storage.c - the code docs/tensor.md shows: the
 * fields that place a tensor's elements in its storage (shape, strides,
 * offset) for a fresh tensor and for views of it, a view that outlives the
 * tensor it was taken from, and a broadcasting error.
 *
 * It reads the fields of tg_tensor directly, which is fine for reading;
 * they are changed only through the API.
 */
#include "tapegrad.h"

#include <stdio.h>
#include <string.h>

/* Prints where x's elements live: element (i0, ..., ik) is at
 * offset + i0*strides[0] + ... + ik*strides[k] in the storage. */
static void show_layout(const char *name, const tg_tensor *x)
{
    char shape[TG_SHAPE_STR_MAX], strides[TG_SHAPE_STR_MAX] = "(";
    for (int d = 0; d < x->ndim; d++)
        snprintf(strides + strlen(strides), sizeof strides - strlen(strides),
                 d ? ", %lld" : "%lld", (long long)x->strides[d]);
    strcat(strides, x->ndim == 1 ? ",)" : ")");
    printf("%-8s shape %-7s strides %-7s offset %lld  contiguous %s\n", name,
           tg_shape_str(x, shape), strides, (long long)x->offset,
           tg_is_contiguous(x) ? "yes" : "no");
}

static void storage_and_strides(void)
{
    printf("== Storage and strides ==\n");
    tg_tensor *x = tg_arange(0, 6, 1, TG_FLOAT32);  // storage: 0 1 2 3 4 5
    tg_tensor *m = tg_reshape(x, TG_SHAPE(2, 3));   // a view of x's storage
    tg_tensor *mt = tg_transpose(m, 0, 1);          // shape and strides swapped
    tg_tensor *row = tg_select(m, 0, 1);            // m[1]: starts at 3
    tg_tensor *col = tg_reshape(row, TG_SHAPE(3, 1));
    tg_tensor *wide = tg_expand(col, TG_SHAPE(3, 4)); // stride 0: no copy
    show_layout("m", m);
    show_layout("m.T", mt);
    show_layout("m[1]", row);
    show_layout("col", col);
    show_layout("expanded", wide);
    printf("one storage for all six: %s\n",
           x->storage == m->storage && m->storage == mt->storage &&
           mt->storage == row->storage && row->storage == col->storage &&
           col->storage == wide->storage ? "yes" : "no");
    tg_release(wide);
    tg_release(col);
    tg_release(row);
    tg_release(mt);
    tg_release(m);
    tg_release(x);
}

static void a_view_keeps_the_storage(void)
{
    printf("\n== Reference counting ==\n");
    tg_tensor *x = tg_arange(0, 6, 1, TG_FLOAT32);
    tg_tensor *m = tg_reshape(x, TG_SHAPE(2, 3));
    tg_tensor *row = tg_select(m, 0, 1);   // m[1], a (3,) view
    tg_release(m);                         // row still holds the storage
    tg_release(x);
    tg_print(row);
    tg_release(row);
}

static void a_broadcasting_error(void)
{
    printf("\n== Errors ==\n");
    tg_set_error_handler(tg_error_handler_quiet); // printed below instead
    tg_tensor *a = tg_zeros(TG_SHAPE(2, 3), TG_FLOAT32);
    tg_tensor *b = tg_zeros(TG_SHAPE(3, 2), TG_FLOAT32);
    tg_tensor *c = tg_add(a, b);           // NULL
    printf("%s\n", c ? "(no error?)" : tg_last_error());
    tg_set_error_handler(NULL);
    tg_release(c);
    tg_release(b);
    tg_release(a);
}

int main(void)
{
    storage_and_strides();
    a_view_keeps_the_storage();
    a_broadcasting_error();
    return tg_live_tensors() == 0 ? 0 : 1;
}
