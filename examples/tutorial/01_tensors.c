/*
 * examples/tutorial/01_tensors.c - the program of tutorial chapter 1
 * (docs/tutorial/01-tensors.md): making tensors, dtypes, printing, who owns
 * a tensor and when to release it, and what a failing call does.
 *
 * Sections run in the chapter's order and print what the chapter shows.
 * Each ">>>" line is the PyTorch code that prints the same thing. This is
 * not a list of every creation function (docs/api.md has them all).
 */
#include "tapegrad.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Prints a line of PyTorch code and the tensor it gives. t is borrowed:
 * show() neither keeps nor releases it. */
static void show(const char *code, const tg_tensor *t)
{
    printf(">>> %s\n", code);
    tg_print(t);
}

static void creating(void)
{
    printf("== 1. Creating tensors ==\n");
    tg_tensor *z = tg_zeros(TG_SHAPE(2, 3), TG_FLOAT32);
    tg_tensor *r = tg_arange(0, 5, 1, TG_FLOAT32);
    tg_tensor *m = tg_from_array((float[]){1, 2, 3, 4, 5, 6},
                                 TG_SHAPE(2, 3), TG_FLOAT32);
    tg_tensor *s = tg_scalar(3.5, TG_FLOAT32); // 0-d: no dims at all
    tg_manual_seed(0);                         // torch.manual_seed(0)
    tg_tensor *u = tg_rand(TG_SHAPE(2, 3), TG_FLOAT32);
    show("torch.zeros(2, 3)", z);
    show("torch.arange(0., 5.)", r);
    show("m = torch.tensor([[1., 2., 3.], [4., 5., 6.]]); m", m);
    show("torch.tensor(3.5)", s);
    show("torch.manual_seed(0); torch.rand(2, 3)", u);

    char buf[TG_SHAPE_STR_MAX];
    printf("m: ndim %d, shape %s, numel %lld, dtype %s\n", m->ndim,
           tg_shape_str(m, buf), (long long)m->numel,
           tg_dtype_name(m->dtype));
    double v;
    tg_get(m, TG_SHAPE(1, 2), &v); // m[1, 2]
    printf("m[1, 2] = %g, s.item() = %g\n", v, tg_item(s));

    tg_release(u);
    tg_release(s);
    tg_release(m);
    tg_release(r);
    tg_release(z);
}

static void dtypes(void)
{
    printf("\n== 2. dtypes ==\n");
    tg_tensor *i = tg_arange(0, 3, 1, TG_INT64);          // int64
    tg_tensor *f = tg_ones(TG_SHAPE(3), TG_FLOAT32);      // float32
    tg_tensor *d = tg_full(TG_SHAPE(3), 0.5, TG_FLOAT64); // float64
    tg_tensor *fi = tg_add(f, i);          // float32 + int64   -> float32
    tg_tensor *fd = tg_add(f, d);          // float32 + float64 -> float64
    tg_tensor *half = tg_div_scalar(i, 2); // true division: int64 -> float32
    tg_tensor *back = tg_to_dtype(fd, TG_FLOAT32);
    show("i = torch.arange(3); i", i);
    show("d = torch.full((3,), 0.5, dtype=torch.float64); d", d);
    show("f = torch.ones(3); f + i", fi);
    show("f + d", fd);
    show("i / 2", half);
    show("(f + d).to(torch.float32)", back);
    tg_release(back);
    tg_release(half);
    tg_release(fd);
    tg_release(fi);
    tg_release(d);
    tg_release(f);
    tg_release(i);
}

static void printing(void)
{
    printf("\n== 3. Printing ==\n");
    tg_manual_seed(0);
    tg_tensor *x = tg_randn(TG_SHAPE(2, 3), TG_FLOAT32);
    show("torch.manual_seed(0); x = torch.randn(2, 3); x", x);

    char *text = tg_format(x); // a malloc'd string: ours to free()
    printf("tg_format gave %zu characters\n", strlen(text));
    free(text);

    tg_print_options saved = tg_get_print_options();
    tg_print_options two = saved;
    two.precision = 2;
    tg_set_print_options(two);
    show("torch.set_printoptions(precision=2); x", x);
    tg_set_print_options(saved); // back to precision 4

    tg_tensor *big = tg_arange(0, 2000, 1, TG_INT64);
    show("torch.arange(2000)  # over 1000 elements: summarised", big);
    tg_release(big);
    tg_release(x);
}

/* Returns x * x + 1 as a NEW reference; x is BORROWED: the caller still
 * owns it and must still release it. */
static tg_tensor *square_plus_one(const tg_tensor *x)
{
    tg_tensor *sq = tg_mul(x, x);          // a temporary we own
    tg_tensor *y = tg_add_scalar(sq, 1.0); // the result we hand back
    tg_release(sq);                        // done with the temporary
    return y;
    // return tg_add_scalar(tg_mul(x, x), 1.0); would leak x * x
}

/* Something that keeps a tensor beyond the call: it must tg_retain it. */
typedef struct keeper {
    tg_tensor *kept;
} keeper;

static void ownership(void)
{
    printf("\n== 4. Ownership ==\n");
    int64_t before = tg_live_tensors();
    tg_tensor *a = tg_arange(1, 4, 1, TG_FLOAT32); // new reference: ours
    tg_tensor *b = square_plus_one(a);             // new reference: ours
    show("a = torch.arange(1., 4.); b = a * a + 1; b", b);
    printf("live tensors made here: %lld\n",
           (long long)(tg_live_tensors() - before));

    keeper k = {tg_retain(a)}; // a second owner of the same tensor
    printf("a->refcount after tg_retain: %lld\n", (long long)a->refcount);
    tg_release(a);             // our reference goes; k.kept still valid
    printf("k.kept is still valid: ");
    tg_print(k.kept);
    tg_release(k.kept);        // the last reference: a is freed now

    tg_release(b);
    printf("live tensors made here: %lld\n",
           (long long)(tg_live_tensors() - before));
}

static void errors(void)
{
    printf("\n== 5. Errors ==\n");
    tg_set_error_handler(tg_error_handler_quiet); // we print them ourselves
    tg_tensor *a = tg_ones(TG_SHAPE(2, 3), TG_FLOAT32);
    tg_tensor *p = tg_matmul(a, a); // (2, 3) @ (2, 3): fails, returns NULL
    tg_tensor *q = tg_exp(p);       // NULL in, NULL out, no second message
    printf("p is %s, q is %s\n", p ? "a tensor" : "NULL",
           q ? "a tensor" : "NULL");
    printf("tg_last_error():\n%s\n", tg_last_error());
    tg_release(q); // tg_release(NULL) does nothing, so this is safe
    tg_release(p);
    tg_release(a);
    tg_set_error_handler(NULL); // the default again: print to stderr
}

int main(void)
{
    creating();
    dtypes();
    printing();
    ownership();
    errors();
    printf("\nlive tensors at exit: %lld\n", (long long)tg_live_tensors());
    return tg_live_tensors() == 0 ? 0 : 1;
}
