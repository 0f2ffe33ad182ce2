/*
 * examples/autograd_graph.c - what the tape records and how backward walks
 * it, on two small expressions:
 *
 *   1. L = (a*b + c) * a with scalars: the worked example that
 *      docs/autograd.md follows by hand, number by number;
 *   2. L = sum(tanh(x @ w + b) * 2), one layer of a network: its graph is
 *      written as Graphviz DOT into the folder argv[1] (default
 *      out/autograd_graph, made if missing) as graph.dot, rendered there
 *      as graph.png and graph.svg when Graphviz's dot is installed
 *      (Debian: apt-get install graphviz), then backward fills x.grad and
 *      w.grad.
 *
 * The random numbers are PyTorch's: with
 * torch.manual_seed(0) the same x, w, b and gradients come out of
 *   x = torch.randn(2, 3, requires_grad=True)
 *   w = torch.randn(3, 4, requires_grad=True)
 *   b = torch.randn(4)
 */
#include "tapegrad.h"

#include "demo_util.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#define DEFAULT_OUT "out/autograd_graph"

static tg_tensor *param(double value)
{
    tg_tensor *t = tg_scalar(value, TG_FLOAT64);
    tg_set_requires_grad(t, true);
    return t;
}

static void show(const char *code, const tg_tensor *t)
{
    printf(">>> %s\n", code);
    tg_print(t);
}

/* Part 1. Returns 0, or 1 when something failed. */
static int worked_example(void)
{
    printf("== 1. L = (a*b + c) * a, by hand in docs/autograd.md ==\n");
    tg_tensor *a = param(2.0), *b = param(-3.0), *c = param(10.0);
    tg_tensor *e = tg_mul(a, b); // tape entry 1: MulBackward0, saves a, b
    tg_tensor *d = tg_add(e, c); // tape entry 2: AddBackward0, saves nothing
    tg_tensor *L = tg_mul(d, a); // tape entry 3: MulBackward0, saves d, a
    tg_retain_grad(e);           // keep the gradients of the non-leaves too
    tg_retain_grad(d);
    show("e = a * b", e);
    show("d = e + c", d);
    show("L = d * a", L);
    printf("tape entries: %lld\n", (long long)tg_tape_size());

    printf(">>> the graph as Graphviz DOT\n");
    int rc = tg_tape_write_dot(stdout, &L, 1, "L = (a*b + c) * a");

    if (rc == 0)
        rc = tg_backward(L); // walks entries 3, 2, 1
    show("L.backward(); d.grad  # dL/dd = a", d->grad);
    show("e.grad  # dL/de = dL/dd * 1", e->grad);
    show("a.grad  # from entry 3: d = 4, from entry 1: dL/de * b = -6",
         a->grad);
    show("b.grad  # dL/de * a", b->grad);
    show("c.grad  # dL/dd * 1", c->grad);
    printf("tape entries after backward: %lld (freed, kept alive by L, d "
           "and e)\n",
           (long long)tg_tape_size());

    tg_release(L);
    tg_release(d);
    tg_release(e);
    tg_release(c);
    tg_release(b);
    tg_release(a);
    return rc == 0 ? 0 : 1;
}

/* Writes L's graph into dir as graph.dot, and renders it when Graphviz
 * is installed. Returns 0, or -1 after an error (with a message). */
static int write_graph(const char *dir, tg_tensor *L)
{
    char dot[4096], png[4096], svg[4096];
    if (demo_make_dirs(dir) != 0)
        return -1;
    if (!demo_join(dot, sizeof dot, dir, "graph.dot") ||
        !demo_join(png, sizeof png, dir, "graph.png") ||
        !demo_join(svg, sizeof svg, dir, "graph.svg"))
        return -1;
    int rc = -1;
    FILE *f = fopen(dot, "w");
    if (f) {
        rc = tg_tape_write_dot(f, &L, 1, "L = sum(tanh(x @ w + b) * 2)");
        if (fclose(f) != 0)
            rc = -1;
    }
    if (rc != 0) {
        fprintf(stderr, "could not write %s\n", dot);
        return -1;
    }
    printf("wrote the graph to %s\n", dot);
    /* whether Graphviz is installed goes to stderr: the standard output is
     * the same on every machine */
    rc = demo_render_dot(dot, png, svg);
    if (rc > 0)
        fprintf(stderr, "rendered it as %s and %s\n", png, svg);
    return rc < 0 ? -1 : 0;
}

/* Part 2. Returns 0, or 1 when something failed. */
static int layer(const char *dir)
{
    printf("\n== 2. L = sum(tanh(x @ w + b) * 2) ==\n");
    tg_manual_seed(0);
    tg_tensor *x = tg_randn(TG_SHAPE(2, 3), TG_FLOAT32);
    tg_tensor *w = tg_randn(TG_SHAPE(3, 4), TG_FLOAT32);
    tg_tensor *b = tg_randn(TG_SHAPE(4), TG_FLOAT32); // a constant here
    tg_set_requires_grad(x, true);
    tg_set_requires_grad(w, true);

    tg_tensor *xw = tg_matmul(x, w);        // (2, 4)  MmBackward0
    tg_tensor *z = tg_add(xw, b);           // (2, 4)  AddBackward0
    tg_tensor *t = tg_tanh(z);              // (2, 4)  TanhBackward0
    tg_tensor *t2 = tg_mul_scalar(t, 2.0);  // (2, 4)  MulBackward0
    tg_tensor *L = tg_sum(t2, NULL, 0, false); // ()   SumBackward0
    show("L", L);

    int rc = write_graph(dir, L);
    if (rc == 0)
        rc = tg_backward(L);
    show("L.backward(); x.grad", x->grad);
    show("w.grad", w->grad);

    tg_release(L);
    tg_release(t2);
    tg_release(t);
    tg_release(z);
    tg_release(xw);
    tg_release(b);
    tg_release(w);
    tg_release(x);
    return rc == 0 ? 0 : 1;
}

int main(int argc, char **argv)
{
    const char *dir = argc > 1 ? argv[1] : DEFAULT_OUT;
    int failures = worked_example() + layer(dir);
    /* every tensor released, and with them every node of the tape */
    if (tg_live_tensors() != 0 || tg_tape_size() != 0)
        failures++;
    return failures == 0 ? 0 : 1;
}
