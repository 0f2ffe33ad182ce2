/*
 * examples/tensor_tour.c - a first look at tapegrad's tensors: creation,
 * PyTorch-compatible random numbers, views that share memory, broadcasting,
 * reductions, softmax, matmul, and what an error looks like.
 *
 * Every tensor printed here prints exactly as PyTorch prints the same
 * tensor, so the output can be checked against a notebook line by line.
 */
#include "tapegrad.h"

#include <stdio.h>

static void show(const char *code, tg_tensor *t)
{
    printf(">>> %s\n", code);
    tg_print(t);
    tg_release(t); // show() takes ownership, to keep the tour short
}

int main(void)
{
    printf("== Creation ==\n");
    tg_tensor *x = tg_arange(0, 6, 1, TG_FLOAT32);
    show("x = torch.arange(6.); x", tg_retain(x));
    show("torch.zeros(2, 3, dtype=torch.float64)",
         tg_zeros(TG_SHAPE(2, 3), TG_FLOAT64));

    printf("\n== Random numbers: the same as PyTorch's for the same seed ==\n");
    tg_manual_seed(0);
    show("torch.manual_seed(0); torch.rand(6)", tg_rand(TG_SHAPE(6), TG_FLOAT32));
    tg_manual_seed(42);
    show("torch.manual_seed(42); torch.randn(2, 3)", tg_randn(TG_SHAPE(2, 3), TG_FLOAT32));

    printf("\n== Views share memory ==\n");
    tg_tensor *m = tg_reshape(x, TG_SHAPE(2, 3));
    tg_tensor *mt = tg_transpose(m, 0, 1);
    tg_set(mt, TG_SHAPE(2, 1), 50.0); // writes m[1, 2] through the view
    printf(">>> m = x.reshape(2, 3); m.T[2, 1] = 50; m\n");
    tg_print(m);
    printf("m.T is contiguous: %s\n", tg_is_contiguous(mt) ? "yes" : "no");

    printf("\n== Broadcasting: (3, 1) op (4,) -> (3, 4) ==\n");
    tg_tensor *col = tg_reshape(x, TG_SHAPE(6, 1));
    tg_tensor *col3 = tg_narrow(col, 0, 0, 3);
    tg_tensor *row = tg_arange(0, 4, 1, TG_FLOAT32);
    tg_tensor *col10 = tg_mul_scalar(col3, 10);
    show("col[:3] * 10 + row", tg_add(col10, row));

    printf("\n== Reductions ==\n");
    tg_tensor *data = tg_from_array((float[]){1, 2, 3, 4, 5, 6},
                                    TG_SHAPE(2, 3), TG_FLOAT32);
    show("data.sum(dim=0)", tg_sum(data, TG_DIMS(0), false));
    show("data.mean(dim=1, keepdim=True)", tg_mean(data, TG_DIMS(1), true));
    show("data.var(dim=1)  # unbiased, like PyTorch",
         tg_var(data, TG_DIMS(1), 1, false));
    show("data.softmax(dim=-1)", tg_softmax(data, -1));

    printf("\n== Matmul ==\n");
    tg_tensor *w = tg_eye(3, 2, TG_FLOAT32);
    show("data @ torch.eye(3, 2)", tg_matmul(data, w));

    printf("\n== Errors explain themselves ==\n");
    tg_set_error_handler(tg_error_handler_quiet);
    tg_tensor *bad = tg_matmul(data, data);
    printf(">>> data @ data\n%s\n", bad ? "(no error?)" : tg_last_error());

    tg_release(bad);
    tg_release(w);
    tg_release(data);
    tg_release(row);
    tg_release(col10);
    tg_release(col3);
    tg_release(col);
    tg_release(mt);
    tg_release(m);
    tg_release(x);
    return tg_live_tensors() == 0 ? 0 : 1; // every tensor was released
}
